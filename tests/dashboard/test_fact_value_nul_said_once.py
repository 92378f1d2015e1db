"""A NUL character in a fact's value is refused on /memory with Django's message, once
(the form field's own check and the value rule said it twice)."""

from __future__ import annotations

import html

import pytest
from django.core.validators import ProhibitNullCharactersValidator

from memory.models import Fact
from memory.services.facts import fact_store
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db


def _times_said(response) -> int:
    return html.unescape(response.content.decode()).count(
        str(ProhibitNullCharactersValidator.message)
    )


def test_the_add_form_says_it_once(staff_client):
    response = staff_client.post(
        "/memory/facts/", {"key": "cafe", "value": "ca\x00fe", "memory_type": "fact"}, **HTMX
    )
    assert (response.status_code, _times_said(response)) == (422, 1)
    assert not Fact.all_objects.filter(key="cafe").exists()


def test_the_edit_form_says_it_once(staff_client):
    fact_store(key="the", value="Thé vert")
    response = staff_client.post(
        "/memory/facts/the/edit/",
        {"value": "Th\x00é", "memory_type": "fact", "importance": "0.5"},
        **HTMX,
    )
    assert (response.status_code, _times_said(response)) == (422, 1)
    assert Fact.objects.get(key="the").value == "Thé vert"
