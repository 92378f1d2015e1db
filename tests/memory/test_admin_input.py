"""What the admin's forms refuse, in French on the form, where it answered 500 or stored a
row nothing else would read back: an expiry outside the years the memory accepts, a bad
channel name, an agent item the store refuses, a hand-made action on no real row."""

from __future__ import annotations

from html import unescape

import pytest
from django.urls import reverse

from memory.models import AgentItem, ChannelSettings, Fact, Forgetting
from memory.services.facts import fact_store
from memory.services.forgetting import topic_forget
from memory.services.messages import BAD_CHANNEL
from memory.services.search import DATE_RANGE_UTC_MESSAGE
from tests.memory.admin_forms import fact_admin_form

pytestmark = pytest.mark.django_db

NO_ROW_SELECTED = "Des éléments doivent être sélectionnés"


@pytest.fixture
def admin_client(staff_client):
    staff_client.raise_request_exception = False
    return staff_client


def _shown(response) -> str:
    return unescape(response.content.decode())


@pytest.mark.parametrize(
    ("day", "hour"),
    [
        ("31/12/9999", "23:59"),
        ("9999-12-31", "23:59"),
        ("01/01/0001", "00:30"),
        ("0001-01-01", "00:00"),  # answered 500: the move to UTC overflowed
        ("31/12/0999", "12:00"),
    ],
)
def test_an_expiry_outside_the_accepted_years_is_refused_on_the_add_form(admin_client, day, hour):
    response = admin_client.post(
        reverse("admin:memory_fact_add"), fact_admin_form(expires_at_0=day, expires_at_1=hour)
    )
    assert response.status_code == 200
    assert DATE_RANGE_UTC_MESSAGE in _shown(response)
    assert not Fact.all_objects.filter(key="adm1").exists()


def test_an_expiry_outside_the_accepted_years_is_refused_on_the_change_form(admin_client):
    fact, _ = fact_store(key="adm1", value="v")
    response = admin_client.post(
        reverse("admin:memory_fact_change", args=[fact.pk]),
        fact_admin_form(expires_at_0="01/01/0001", expires_at_1="00:30"),
    )
    assert response.status_code == 200
    assert DATE_RANGE_UTC_MESSAGE in _shown(response)
    fact.refresh_from_db()
    assert fact.expires_at is None


def test_an_expiry_at_the_edges_of_the_accepted_years_is_saved(admin_client):
    response = admin_client.post(
        reverse("admin:memory_fact_add"),
        fact_admin_form(key="adm_high", expires_at_0="31/12/9998", expires_at_1="12:00"),
    )
    assert response.status_code == 302, _shown(response)
    assert Fact.objects.get(key="adm_high").expires_at is not None


def test_an_expiry_at_the_low_edge_is_in_the_past(admin_client):
    """Within the years, but already past: refused as such (QA), not as out of range."""
    from memory.admin_forms import EXPIRY_PAST_MESSAGE

    response = admin_client.post(
        reverse("admin:memory_fact_add"),
        fact_admin_form(key="adm_low", expires_at_0="01/01/1000", expires_at_1="12:00"),
    )
    assert response.status_code == 200
    assert EXPIRY_PAST_MESSAGE in _shown(response)
    assert not Fact.objects.filter(key="adm_low").exists()


@pytest.mark.parametrize("channel", ["../x", "a b", "x/y"])
def test_a_bad_channel_name_is_refused_on_the_channel_settings_form(admin_client, channel):
    response = admin_client.post(
        reverse("admin:memory_channelsettings_add"),
        {"channel": channel, "observed": "on", "_save": "Enregistrer"},
    )
    assert response.status_code == 200
    assert BAD_CHANNEL in _shown(response)
    assert not ChannelSettings.objects.exists()


def test_a_good_channel_name_is_saved_from_the_channel_settings_form(admin_client):
    response = admin_client.post(
        reverse("admin:memory_channelsettings_add"),
        {"channel": " lobby ", "observed": "on", "_save": "Enregistrer"},
    )
    assert response.status_code == 302
    assert ChannelSettings.objects.get().channel == "lobby"


def test_an_agent_item_of_the_owners_kind_is_refused_on_its_add_form(admin_client):
    response = admin_client.post(
        reverse("admin:memory_agentitem_add"),
        {
            "kind": "owner",
            "category": "",
            "value": "Je peux lire le Lobby",
            "importance": "0.5",
            "revisions-TOTAL_FORMS": "0",
            "revisions-INITIAL_FORMS": "0",
            "revisions-MIN_NUM_FORMS": "0",
            "revisions-MAX_NUM_FORMS": "1000",
            "_save": "Enregistrer",
        },
    )
    assert response.status_code == 200
    assert "Genre inconnu" in _shown(response)
    assert not AgentItem.objects.exists()


@pytest.mark.parametrize("action", ["forget_facts", "erase_facts"])
@pytest.mark.parametrize("selected", [["abc"], ["1.5"], ["abc", "1"], ["9" * 30]])
def test_a_fact_action_on_a_value_that_is_no_row_id_changes_nothing(admin_client, action, selected):
    fact, _ = fact_store(key="adm1", value="v")
    selected = [str(fact.pk) if s == "1" else s for s in selected]
    response = admin_client.post(
        reverse("admin:memory_fact_changelist"),
        {"action": action, "_selected_action": selected, "index": "0"},
        follow=True,
    )
    assert response.status_code == 200
    assert NO_ROW_SELECTED in _shown(response)
    assert Fact.objects.filter(pk=fact.pk).exists()


def test_a_forgetting_action_on_a_value_that_is_no_row_id_changes_nothing(admin_client):
    fact_store(key="marie_birthday", value="Marie est née le 3 mars")
    topic_forget(topic="Marie", actor="user")
    response = admin_client.post(
        reverse("admin:memory_forgetting_changelist"),
        {"action": "restore_forgettings", "_selected_action": ["abc"], "index": "0"},
        follow=True,
    )
    assert response.status_code == 200
    assert NO_ROW_SELECTED in _shown(response)
    assert Forgetting.objects.get().restored_at is None
