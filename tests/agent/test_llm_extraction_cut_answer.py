"""QA: a fact extraction answer cut by max_tokens stores nothing and ends as done.

The extraction's LLM call is capped at EXTRACTION_MAX_TOKENS (1500). An answer that hits
the cap comes back as a complete message with ``stop_reason: "max_tokens"`` and its JSON
cut; parse_json_answer falls back to the longest object it can decode (one fact's own
object, not ``{"facts": [...]}``), facts_parse drops it, and the exchange counts as
extracted with no fact: the facts the LLM did write before the cut are lost, and the
job (memory.services.jobs) ends "done", never run again. Expected: the complete facts
kept, or the extraction retried (an LlmError the job backs off on).
"""

from __future__ import annotations

import json

import pytest

from agent.extraction_jobs import exchange_facts_save
from memory.models import Fact
from memory.services.messages import message_save
from tests.fakes.anthropic import fake_anthropic, text_message  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, settings):  # noqa: F811
    settings.ANTHROPIC_MAX_RETRIES = 0
    return fake_anthropic


def test_an_extraction_answer_cut_by_the_output_cap_keeps_the_facts_it_gave(world):
    ask = message_save(
        channel="mission_control",
        role="user",
        content="Je m'appelle Camille, j'habite à Lyon et je travaille chez Airbus.",
    )
    reply = message_save(channel="mission_control", role="assistant", content="Noté !")
    full = json.dumps(
        {
            "facts": [
                {
                    "key": "user_name",
                    "value": "Le propriétaire s'appelle Camille.",
                    "type": "identity",
                },
                {"key": "user_city", "value": "Le propriétaire habite à Lyon.", "type": "identity"},
                {
                    "key": "user_employer",
                    "value": "Le propriétaire travaille chez Airbus.",
                    "type": "identity",
                },
            ]
        },
        ensure_ascii=False,
    )
    world.script(text_message(full[: full.index("user_employer") + 5], stop_reason="max_tokens"))

    try:
        exchange_facts_save(message_ids=[ask.id], reply_id=reply.id, channel="mission_control")
        retried = False
    except Exception:  # a transient LLM error: the job retries, nothing is lost
        retried = True

    stored = set(Fact.objects.values_list("key", flat=True))
    assert retried or {"user_name", "user_city"} <= stored, f"facts stored: {stored}"
