"""OPTIONS (and the browsable API) describe a view in French or not at all: DRF's default
description is the view class's docstring, developer documentation in English."""

from __future__ import annotations

import pytest

from memory.api.views import MemoryApi
from tests.memory.api.routes import api_view_classes

pytestmark = pytest.mark.django_db


class DocumentedApi(MemoryApi):
    """Developer notes: how this view works, in English."""

    name = "Vue documentée"


class DescribedApi(MemoryApi):
    """Developer notes: how this view works, in English."""

    name = "Vue décrite"
    description = "Ce que la vue fait, en français."


def test_options_on_the_facts_view_shows_no_docstring(agent_api):
    response = agent_api.options("/api/v1/memory/facts")

    assert response.status_code == 200
    assert response.json()["description"] == ""


def test_options_on_the_schema_shows_no_english_docstring(agent_api):
    response = agent_api.options("/api/schema/", HTTP_ACCEPT="application/json")

    assert response.status_code == 200
    assert response.json()["description"] == ""


@pytest.mark.parametrize("view_class", sorted(api_view_classes("api/"), key=lambda c: c.__name__))
def test_every_api_view_describes_itself_in_french_or_not_at_all(view_class):
    description = view_class().get_view_description()

    assert description == (getattr(view_class, "description", None) or "")
    docstring = (view_class.__doc__ or "").strip()
    assert not docstring or docstring.splitlines()[0] not in description


def test_a_view_with_a_docstring_and_no_description_is_described_by_nothing():
    assert DocumentedApi().get_view_description() == ""
    assert DocumentedApi().get_view_description(html=True) == ""


def test_a_views_french_description_is_the_one_shown():
    assert DescribedApi().get_view_description() == "Ce que la vue fait, en français."
    assert "Ce que la vue fait" in DescribedApi().get_view_description(html=True)
