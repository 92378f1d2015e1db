"""A JSON field of an admin form posted nested deeper than the parser recurses (« Sujets »
as 5,000 « [ ») is refused by that field in French, as any JSON it cannot read: it was a
RecursionError, a 500."""

from __future__ import annotations

import pytest
from django.urls import reverse

from makilab.admin_site import JSON_TOO_DEEP_MESSAGE
from memory.models import Fact, MemorySettings
from memory.services.facts import fact_store
from tests.html_forms import form_post_data
from tests.memory.admin_forms import fact_admin_form

pytestmark = pytest.mark.django_db

TOO_DEEP = "[" * 5000 + "]" * 5000


@pytest.fixture(autouse=True)
def no_llm(settings):
    settings.ANTHROPIC_API_KEY = ""


def _errors(response) -> dict:
    return response.context["adminform"].form.errors


def test_subjects_nested_too_deep_are_refused_on_the_fact_form(staff_client):
    fact, _ = fact_store(key="velo", value="Le vélo est au garage", subjects=["sport"])
    data = fact_admin_form(key="velo", value="Le vélo est au garage", subjects=TOO_DEEP)

    response = staff_client.post(f"/admin/memory/fact/{fact.pk}/change/", data)

    assert response.status_code == 200
    assert _errors(response)["subjects"] == [JSON_TOO_DEEP_MESSAGE]
    assert Fact.objects.get(pk=fact.pk).subjects == ["sport"]


def test_subjects_nested_too_deep_are_refused_on_the_add_form(staff_client):
    data = fact_admin_form(key="velo", value="Le vélo est au garage", subjects=TOO_DEEP)

    response = staff_client.post("/admin/memory/fact/add/", data)

    assert response.status_code == 200
    assert _errors(response)["subjects"] == [JSON_TOO_DEEP_MESSAGE]
    assert not Fact.all_objects.filter(key="velo").exists()


def test_context_notes_nested_too_deep_are_refused_on_the_settings_form(staff_client):
    url = reverse("admin:memory_memorysettings_change", args=[MemorySettings.load().pk])
    data = form_post_data(staff_client.get(url).content.decode(), "memorysettings_form")
    data["obsidian_context_notes"] = TOO_DEEP

    response = staff_client.post(url, data)

    assert response.status_code == 200
    assert _errors(response)["obsidian_context_notes"] == [JSON_TOO_DEEP_MESSAGE]


def test_an_opening_value_nested_too_deep_is_taken_as_changed_not_a_500(staff_client):
    """The hidden initial-* input is JSON too, read by the same field."""
    fact, _ = fact_store(key="velo", value="Le vélo est au garage", subjects=["sport"])
    data = fact_admin_form(key="velo", value="Le vélo est au garage", subjects='["sport"]')
    data["initial-subjects"] = TOO_DEEP

    response = staff_client.post(f"/admin/memory/fact/{fact.pk}/change/", data)

    assert response.status_code in (200, 302)
    assert Fact.objects.get(pk=fact.pk).subjects == ["sport"]
