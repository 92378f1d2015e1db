"""A filter written by hand that the database could not run is refused on every admin list
as any wrong filter is (``?e=1``): an integer past SQLite's 64 bits (``?id__in=999…``,
an OverflowError when the query bound it) and a lookup SQLite has no SQL for (a JSON
``contains``, a NotSupportedError) were 500s."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.db import models
from django.urls import reverse

pytestmark = pytest.mark.django_db

PAST_64_BITS = str(2**63)
LISTS = [m for m in admin.site._registry if m.__name__ != "MemorySettings"]  # opens its row


@pytest.fixture
def admin_client(staff_client):
    staff_client.raise_request_exception = False
    return staff_client


def _changelist(model) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


def _refused(response) -> bool:
    return response.status_code == 302 and response.url.endswith("?e=1")


@pytest.mark.parametrize(
    "model",
    [m for m in LISTS if isinstance(m._meta.pk, models.IntegerField)],  # not a token's key
    ids=lambda m: m.__name__,
)
@pytest.mark.parametrize("value", [PAST_64_BITS, f"1,{PAST_64_BITS}", "9" * 25, f"-{2**63 + 1}"])
def test_an_integer_past_64_bits_in_a_list_lookup_is_refused_on_every_admin(
    admin_client, model, value
):
    assert _refused(admin_client.get(_changelist(model), {"pk__in": value}))
    assert admin_client.get(_changelist(model), {"pk__in": f"1,{2**63 - 1}"}).status_code == 200


@pytest.mark.parametrize("lookup", ["gt", "lt", "exact"])
def test_an_integer_past_64_bits_that_django_answers_itself_still_lists(admin_client, lookup):
    """Django answers a comparison past the integer range itself (no row, every row)."""
    from memory.models import Fact

    response = admin_client.get(_changelist(Fact), {f"pk__{lookup}": PAST_64_BITS})
    assert response.status_code == 200


def _json_fields():
    return [
        (model, field.name)
        for model in LISTS
        for field in model._meta.get_fields()
        if isinstance(field, models.JSONField)
    ]


@pytest.mark.parametrize(
    ("model", "field"), _json_fields(), ids=lambda v: getattr(v, "__name__", v)
)
@pytest.mark.parametrize("lookup", ["contains", "contained_by"])
def test_a_json_lookup_sqlite_cannot_run_is_refused_on_every_admin(
    admin_client, model, field, lookup
):
    assert _refused(admin_client.get(_changelist(model), {f"{field}__{lookup}": "x"}))
    assert admin_client.get(_changelist(model), {f"{field}__isnull": "1"}).status_code == 200


def test_the_walk_above_reaches_the_facts_subjects():
    from memory.models import Fact

    assert (Fact, "subjects") in _json_fields()


def test_a_filter_by_a_list_filter_of_its_own_still_filters(admin_client):
    """The guard leaves alone what is no field lookup (a list filter's own parameter)."""
    from memory.models import Fact

    assert admin_client.get(_changelist(Fact), {"expired": "yes"}).status_code == 200
