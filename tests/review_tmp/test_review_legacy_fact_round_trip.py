"""Review: a fact stored before this change's rules makes this memory's own export
unimportable.

Before f600f4c / 5e2090c the API stored a fact's channel of any shape (« bad channel/..»,
QA) and a value or subject of invisible characters only. The change keeps such facts
editable (fact_update checks only what an edit changes: « a channel stored before the rule
unchecked unless it is changed »), but the import checks them through the model and
refuses the line, so the export of a memory holding one no longer imports at all
(« Rien n'a été importé »), e.g. into a new install. The import keeps a key stored before
its rule (portability_import_records: « a key stored before invisible characters ... keeps
them: an export holds it and it comes back under it »); these fields get no such care.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from memory.models import Fact

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "fields",
    [
        {"channel": "famille / perso"},
        {"value": "\u200b"},
        {"subjects": ["velo", "\u2060"]},
    ],
    ids=["channel", "value", "subject"],
)
def test_an_export_holding_a_fact_stored_before_the_rules_imports_back(tmp_path, fields):
    # Stored as the API stored it before the rules (no model check on this path).
    Fact.objects.create(key="velo", **({"value": "Le vélo est gris"} | fields))
    path = tmp_path / "export.jsonl"
    call_command("memory_export", str(path), stdout=StringIO())
    Fact.all_objects.all().delete()

    call_command("memory_import", str(path), stdout=StringIO(), stderr=StringIO())

    assert Fact.all_objects.filter(key="velo").exists()


def test_an_export_holding_a_fact_the_older_import_dated_so_imports_back(tmp_path):
    """The older import stored a fact updated before it existed (QA, 5e2090c): the memory
    that took such a file holds it, and its own export is now refused whole."""
    from datetime import timedelta

    fact = Fact.objects.create(key="velo", value="Le vélo est gris")
    Fact.all_objects.filter(pk=fact.pk).update(
        created_at=fact.updated_at - timedelta(days=1),
        updated_at=fact.updated_at - timedelta(days=30),
    )
    path = tmp_path / "export.jsonl"
    call_command("memory_export", str(path), stdout=StringIO())
    Fact.all_objects.all().delete()

    call_command("memory_import", str(path), stdout=StringIO(), stderr=StringIO())

    assert Fact.all_objects.filter(key="velo").exists()
