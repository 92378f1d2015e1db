"""OPTIONS names each API view in French, not with DRF's words from the class name
("Fact List Create Api")."""

from __future__ import annotations

import pytest

from tests.memory.api.routes import api_view_classes

pytestmark = pytest.mark.django_db


def test_options_names_the_facts_view_in_french(agent_api):
    response = agent_api.options("/api/v1/memory/facts")

    assert response.status_code == 200
    assert response.json()["name"] == "Faits"


@pytest.mark.parametrize(
    "view_class", sorted(api_view_classes("api/v1/"), key=lambda c: c.__name__)
)
def test_every_api_view_has_a_name_of_its_own(view_class):
    name = view_class().get_view_name()

    assert name and "Api" not in name, f"{view_class.__name__}: {name!r}"


def test_two_views_never_share_a_name():
    names = [view_class().get_view_name() for view_class in api_view_classes("api/v1/")]

    assert len(names) == len(set(names)) >= 20
