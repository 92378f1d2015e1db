"""GET/PATCH /api/memory/settings: ranges come from the model, nothing half-saved."""

from __future__ import annotations

import pytest

from memory.models import MemorySettings
from memory.services.settings import EDITABLE_FIELDS

pytestmark = pytest.mark.django_db

SETTINGS = "/api/memory/settings"


def test_get_returns_every_setting_with_its_default(agent_api):
    response = agent_api.get(SETTINGS)
    assert response.status_code == 200
    body = response.json()
    assert set(EDITABLE_FIELDS) <= set(body)
    assert body["auto_retrieve_enabled"] is True
    assert body["max_results"] == 4
    assert body["min_score"] == 0.5
    assert body["obsidian_context_tag"] == "makilab"


def test_patch_saves_the_given_settings(staff_api):
    response = staff_api.patch(
        SETTINGS,
        {"max_results": 7, "min_score": 0.65, "auto_retrieve_enabled": False},
        format="json",
    )
    assert response.status_code == 200, response.content
    settings = MemorySettings.load()
    assert (settings.max_results, settings.min_score, settings.auto_retrieve_enabled) == (
        7,
        0.65,
        False,
    )
    assert response.json()["max_results"] == 7


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"max_results": 0}, "max_results"),
        ({"max_results": 11}, "max_results"),
        ({"min_score": 0.29}, "min_score"),
        ({"min_score": 0.81}, "min_score"),
        ({"min_score": "haut"}, "min_score"),
        ({"search_min_score": 1.5}, "search_min_score"),
        ({"history_length": 0}, "history_length"),
        ({"dedup_threshold": 0.9}, "dedup_threshold"),  # removed: it did nothing
        ({"block_max_tokens": 50}, "block_max_tokens"),
        ({"auto_retrieve_enabled": "peut-être"}, "auto_retrieve_enabled"),
        ({"obsidian_context_notes": "Profil.md"}, "obsidian_context_notes"),
        ({"obsidian_context_notes": ["../secret.md"]}, "obsidian_context_notes"),
        ({"obsidian_context_tag": ""}, "obsidian_context_tag"),
        ({"obsidian_context_tag": "un tag avec espaces"}, "obsidian_context_tag"),
        ({"max_resultats": 3}, "max_resultats"),
        ({"updated_at": "2020-01-01T00:00:00Z"}, "updated_at"),
    ],
)
def test_patch_refuses_out_of_range_or_unknown_values(owner_api, body, field):
    response = owner_api.patch(
        SETTINGS, {**body, "max_results": body.get("max_results", 9)}, format="json"
    )
    assert response.status_code == 400, response.content
    assert field in response.json()["extra"]["fields"]
    assert MemorySettings.load().max_results == 4, "nothing may be saved from a refused patch"


def test_patch_normalises_note_paths_and_the_tag(owner_api):
    response = owner_api.patch(
        SETTINGS,
        {
            "obsidian_context_notes": ["Profil", "Profil.md", "Projets/Makilab.md"],
            "obsidian_context_tag": "#Makilab",
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    settings = MemorySettings.load()
    assert settings.obsidian_context_notes == ["Profil.md", "Projets/Makilab.md"]
    assert settings.obsidian_context_tag == "Makilab"


def test_the_ranges_match_the_model_validators():
    """The UI ranges of DESIGN.md, read back from the schema the API serves."""
    from memory.api.serializers import MemorySettingsSerializer

    fields = MemorySettingsSerializer().fields
    assert (fields["max_results"].min_value, fields["max_results"].max_value) == (1, 10)
    assert (fields["min_score"].min_value, fields["min_score"].max_value) == (0.3, 0.8)


def test_the_api_says_a_limit_with_the_decimal_point_of_its_json_numbers(owner_api):
    """Agents and scripts read the API: its range messages keep DRF's « 0.8 », written as
    the JSON writes the number (the pages and the admin say « 0,8 »:
    tests/memory/test_range_messages.py)."""
    response = owner_api.patch(SETTINGS, {"min_score": 0.81}, format="json")
    assert response.status_code == 400
    assert response.json()["extra"]["fields"]["min_score"] == [
        "Assurez-vous que cette valeur est inférieure ou égale à 0.8."
    ]
