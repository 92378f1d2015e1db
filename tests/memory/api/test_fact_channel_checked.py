"""A fact's channel follows the channels' one rule (QA).

« bad channel/.. » was stored as a fact's channel by POST /facts (either token), PATCH, MCP
``remember`` and the import, while the messages, the search's filter and the preview refuse
it in French: the owner could not even filter a search on the channel the fact was under.
No channel ("") still means a fact of every channel.
"""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from memory.models import Fact
from memory.services.facts import fact_store
from memory.services.messages import BAD_CHANNEL

pytestmark = pytest.mark.django_db

FACTS = "/api/v1/memory/facts"
BAD = ["bad channel/..", "a" * 65, "canal\u200b"]


@pytest.mark.parametrize("channel", BAD)
@pytest.mark.parametrize("client_name", ["owner_api", "agent_api"])
def test_a_fact_under_a_channel_no_message_could_have_is_refused(request, client_name, channel):
    client = request.getfixturevalue(client_name)
    answer = client.post(
        FACTS, {"key": "canal_test", "value": "Le vélo est gris", "channel": channel}, format="json"
    )
    assert answer.status_code == 400, answer.content
    said = answer.json()["extra"]["fields"]["channel"]
    assert said[0] == BAD_CHANNEL, said  # and DRF's length rule after it, for the long one
    assert not Fact.all_objects.exists()


def test_an_edit_to_such_a_channel_is_refused(owner_api):
    fact_store(key="velo", value="gris", channel="whatsapp")
    answer = owner_api.patch(f"{FACTS}/velo", {"channel": BAD[0]}, format="json")
    assert answer.status_code == 400, answer.content
    assert Fact.objects.get(key="velo").channel == "whatsapp"


@pytest.mark.parametrize("channel", ["", "whatsapp", "mission_control", "salon-famille", "a.b"])
def test_no_channel_or_a_messages_channel_is_taken(agent_api, channel):
    answer = agent_api.post(
        FACTS, {"key": "canal_test", "value": "Le vélo est gris", "channel": channel}, format="json"
    )
    assert answer.status_code == 201, answer.content
    assert Fact.objects.get(key="canal_test").channel == channel


def test_the_services_and_the_model_refuse_it_for_tools_the_admin_and_the_import():
    with pytest.raises(ValidationError, match="Le canal doit être"):
        fact_store(key="velo", value="gris", channel=BAD[0])
    with pytest.raises(ValidationError, match="Le canal doit être"):
        Fact(key="velo", value="gris", channel=BAD[0]).full_clean()


def test_a_channel_stored_before_the_rule_blocks_no_other_edit():
    """The agent restating a fact kept under such a channel (stored before the rule) still
    updates it: only a change of the channel itself is checked."""
    fact, _ = fact_store(key="velo", value="gris")
    Fact.all_objects.filter(pk=fact.pk).update(channel=BAD[0])
    fact_store(key="velo", value="bleu")
    assert Fact.objects.get(key="velo").value == "bleu"
