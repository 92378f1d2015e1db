"""The digest leaves an erased fact's key out of the service's log (QA 3: it logged it).

README: « the service's own log names a forget and a forgotten or erased fact by number,
never by its topic, key or text ». The extraction catches FactErased and logs nothing of
it (agent/extraction_jobs.py); the digest (agent/digest.py) catches it with every other
MemoryServiceError and logs the refusal's text: « Le fait « <key> » a été effacé … »."""

from __future__ import annotations

import json
import logging

import pytest

from agent.digest import digest_run_now
from memory.models import Actor, Fact
from memory.services.channels import channel_settings_set
from memory.services.erasing import fact_erase
from memory.services.facts import fact_store
from memory.services.messages import message_save
from tests.fakes.anthropic import fake_anthropic, text_message  # noqa: F401

pytestmark = pytest.mark.django_db

ROOM = "lobby"
KEY = "code_portail_zorglub"


@pytest.fixture
def world(
    vector_store,
    local_embedder,
    fake_anthropic,  # noqa: F811
    eager_tasks,
    settings,
):
    settings.ANTHROPIC_MAX_RETRIES = 0
    channel_settings_set(channel=ROOM, observed=True)
    return fake_anthropic


def test_a_digest_statement_of_an_erased_fact_leaves_its_key_out_of_the_log(
    world, django_capture_on_commit_callbacks, caplog
):
    capture = django_capture_on_commit_callbacks
    with capture(execute=True):
        said = message_save(
            channel=ROOM, role="user", content="Le code du portail Zorglub est 4512", author="david"
        )
    # The owner had it as a fact, and erases it for good after the room's message.
    fact_store(key=KEY, value="Le code du portail Zorglub est 4512", actor=Actor.USER)
    fact_erase(fact=Fact.objects.get(key=KEY), actor=Actor.USER)
    answer = {
        "facts": [
            {
                "key": KEY,
                "value": "Code du portail Zorglub : 4512",
                "type": "fact",
                "sources": [1],
            }
        ]
    }
    world.script(text_message(json.dumps(answer)))

    caplog.set_level(logging.DEBUG)
    with capture(execute=True):
        outcome, _ = digest_run_now()

    assert outcome == "done"
    assert not Fact.all_objects.filter(value__contains="4512").exists()  # erased stays erased
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert KEY not in logged and "Zorglub" not in logged, logged
    assert said.id
