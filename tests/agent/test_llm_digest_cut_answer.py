"""QA: a digest answer cut by max_tokens marks the whole batch digested with no fact.

The digest's LLM call is capped at EXTRACTION_MAX_TOKENS (1500) for a batch of up to
40 messages and 40 facts. When the answer hits the cap, the Messages API returns a
complete message with ``stop_reason: "max_tokens"`` and a JSON text cut mid-way.
agent.digest never looks at the stop reason: parse_json_answer falls back to the
longest object it can decode (one fact's own object, not ``{"facts": [...]}``),
digest_parse finds no list, and the batch is marked digested with 0 facts, state
"done", no note: the live points are removed and those messages are never read by
the digest again. The facts the LLM did write before the cut are dropped too.
Expected: nothing lost on an LLM that fails mid-answer — either the batch stays
undigested (retried), or at least the complete facts are kept.
"""

from __future__ import annotations

import json

import pytest

from agent.digest import digest_run_now
from memory.models import Fact, Message
from memory.services.channels import channel_settings_set
from memory.services.messages import message_save
from tests.fakes.anthropic import fake_anthropic, text_message  # noqa: F401

pytestmark = pytest.mark.django_db

ROOM = "lobby"
TEXTS = (
    "David part en Grèce demain pour une semaine",
    "Sophie a eu une promotion chez Airbus",
    "Paul déménage à Nantes en mars",
)


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, eager_tasks, settings):  # noqa: F811
    settings.ANTHROPIC_MAX_RETRIES = 0
    channel_settings_set(channel=ROOM, observed=True)
    return fake_anthropic


def _cut_answer() -> str:
    full = json.dumps(
        {
            "facts": [
                {
                    "key": "voyage_david",
                    "value": "David part en Grèce pour une semaine.",
                    "type": "event",
                    "sources": [1],
                    "ttl": "30d",
                },
                {
                    "key": "promotion_sophie",
                    "value": "Sophie a eu une promotion chez Airbus.",
                    "type": "event",
                    "sources": [2],
                },
                {
                    "key": "demenagement_paul",
                    "value": "Paul déménage à Nantes en mars.",
                    "type": "event",
                    "sources": [3],
                },
            ]
        },
        ensure_ascii=False,
    )
    return full[: full.index("demenagement_paul") + 10]  # the output cap hit here


def test_a_digest_answer_cut_by_max_tokens_loses_nothing(world, django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    with capture(execute=True):
        for text in TEXTS:
            message_save(channel=ROOM, role="user", content=text, author="david")
    world.script(text_message(_cut_answer(), stop_reason="max_tokens"))

    with capture(execute=True):
        digest_run_now()

    undigested = Message.objects.filter(channel=ROOM, digested_at__isnull=True).count()
    stored = set(Fact.objects.values_list("key", flat=True))
    # Either the batch waits to be digested again, or the facts written before the cut
    # are kept; here neither: 3 messages digested, no fact.
    assert undigested == len(TEXTS) or {"voyage_david", "promotion_sophie"} <= stored, (
        f"batch marked digested ({len(TEXTS) - undigested} messages) with facts {stored}"
    )
