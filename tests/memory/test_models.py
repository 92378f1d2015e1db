"""T1 models: the settings singleton and its ranges."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from memory.models import MemorySettings

pytestmark = pytest.mark.django_db


def test_settings_load_creates_the_single_row_with_the_design_defaults():
    row = MemorySettings.load()
    assert row.pk == 1
    assert row.auto_retrieve_enabled is True
    assert row.max_results == 4
    assert row.min_score == 0.5
    assert row.obsidian_context_enabled is True
    assert row.obsidian_context_notes == []
    assert row.obsidian_context_tag == "makilab"
    assert row.recent_window_hours == 6
    assert row.forget_retention_days == 7
    assert row.block_max_tokens == 1000
    assert row.search_min_score == 0.3
    assert row.history_length == 20


@pytest.mark.parametrize(
    ("field", "bad", "good"),
    [
        ("max_results", 0, 1),
        ("max_results", 11, 10),
        ("min_score", 0.29, 0.3),
        ("min_score", 0.81, 0.8),
        ("history_length", 0, 200),
        ("recent_window_hours", 0, 168),
        ("block_max_tokens", 99, 100),
        ("forget_retention_days", 91, 0),
    ],
)
def test_settings_ranges_are_enforced_by_the_model(field, bad, good):
    row = MemorySettings.load()
    setattr(row, field, bad)
    with pytest.raises(ValidationError) as error:
        row.full_clean()
    assert field in error.value.message_dict
    setattr(row, field, good)
    row.full_clean()


def test_saving_another_settings_object_updates_the_single_row():
    MemorySettings.load()
    other = MemorySettings(max_results=7)
    other.save()
    assert MemorySettings.objects.count() == 1
    assert MemorySettings.load().max_results == 7


def test_the_database_refuses_a_second_settings_row():
    MemorySettings.load()
    with pytest.raises(IntegrityError), transaction.atomic():
        MemorySettings.objects.bulk_create([MemorySettings(id=2)])


def test_the_settings_row_cannot_be_deleted():
    row = MemorySettings.load()
    with pytest.raises(ValidationError):
        row.delete()
    assert MemorySettings.objects.count() == 1
