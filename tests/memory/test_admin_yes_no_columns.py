"""Every yes/no column of the memory's admin lists says « Oui » / « Non »: Django's boolean
icon carries the English alternative text « True » / « False », read aloud by a screen
reader (the fact list's « Oublié » was fixed alone; the agent's items, the channels and
the messages still showed it)."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.db import models

from memory.admin_columns import yes_no_column
from memory.models import Actor
from memory.services.channels import channel_settings_set
from memory.services.self_memory import agent_item_store
from tests.memory.world import exchange_save

pytestmark = pytest.mark.django_db


@pytest.fixture
def rows(settings):
    settings.ANTHROPIC_API_KEY = ""
    agent_item_store(
        kind="self", category="capability", content="Je lis les notes", actor=Actor.AGENT
    )
    channel_settings_set(channel="famille", observed=True)
    exchange_save("whatsapp", "Bonjour", "Bonjour !")


@pytest.mark.parametrize(
    ("url", "column"),
    [
        ("/admin/memory/agentitem/", "column-forgotten_said"),
        ("/admin/memory/channelsettings/", "column-observed_said"),
        ("/admin/memory/message/", "column-compacted_said"),
        ("/admin/memory/message/", "column-observed_said"),
    ],
)
def test_a_yes_or_no_column_says_oui_or_non(staff_client, rows, url, column):
    page = staff_client.get(url).content.decode()

    assert 'alt="False"' not in page and 'alt="True"' not in page
    assert column in page
    assert ">Oui<" in page or ">Non<" in page


def _boolean_columns(model_admin) -> list[str]:
    names = []
    for name in model_admin.list_display:
        if not isinstance(name, str):
            continue
        try:
            field = model_admin.model._meta.get_field(name)
        except Exception:
            continue
        if isinstance(field, models.BooleanField):
            names.append(name)
    return names


@pytest.mark.parametrize(
    "model",
    [m for m in admin.site._registry if m._meta.app_label in ("memory", "agent", "dashboard")],
    ids=lambda m: m.__name__,
)
def test_no_list_of_ours_shows_a_boolean_field_as_djangos_icon(model):
    assert _boolean_columns(admin.site._registry[model]) == []


def test_the_column_is_headed_and_sorted_by_its_field():
    said = yes_no_column("observed", "observé")

    assert (said.__name__, said.short_description, said.admin_order_field) == (
        "observed_said",
        "observé",
        "observed",
    )
