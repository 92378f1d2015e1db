"""The digest never holds SQLite's write lock while it waits for the LLM or the embedder
(audit 13F-7): it stored a batch's facts and marked its messages in one IMMEDIATE
transaction, so every dedup decision's LLM call (seconds each, up to 40 facts a
batch) and every candidate embedding ran with the database locked, and every other
writer (a message posted, the indexing worker) waited, then failed as busy.

Each fact is now written in a short transaction of its own, the messages marked after
their facts; each write checks, under the lock, that every message of the batch the
LLM read is still in memory, so a message forgotten while the facts are stored stops
the rest of them (the batch is read again), as a forget before one big commit did.
"""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection

import agent.client
from agent.digest import digest_run
from memory.models import Digest, Fact, Message
from memory.services.dedup import DEDUP_SYSTEM_PROMPT
from memory.services.forgetting import forget_exchange_exclude
from memory.services.messages import message_save
from tests.fakes.anthropic import text_message

pytestmark = pytest.mark.django_db(transaction=True)

ROOM = "lobby"
LYON = "Marie habite à Lyon."
LYON_PRECISE = "Marie habite à Lyon, dans le quartier de la Croix-Rousse."
SAID = ("J'habite à Lyon maintenant", "Plus précisément à la Croix-Rousse, c'est super")


def _system(body: dict) -> str:
    system = body.get("system") or ""
    if isinstance(system, list):
        system = "\n".join(b.get("text", "") for b in system)
    return system


def _script(fake, facts: list[tuple[str, str, list[int]]]) -> None:
    """The digest's answer (the Croix-Rousse only when it reads that message); every
    dedup decision updates the first fact it is shown."""

    def handler(body):
        if _system(body).startswith(DEDUP_SYSTEM_PROMPT[:60]):
            shown = json.loads(body["messages"][-1]["content"])["faits_memorises"]
            return text_message(json.dumps({"action": "UPDATE", "id": shown[0]["id"]}))
        read = body["messages"][-1]["content"]
        digest = {
            "facts": [
                {"key": k, "value": v, "type": "fact", "sources": s, "importance": 0.6}
                for k, v, s in facts
                if "Croix-Rousse" not in v or "Croix-Rousse" in read
            ]
        }
        return text_message(json.dumps(digest, ensure_ascii=False))

    fake.handler = handler


def _watch_llm_calls(monkeypatch, during=None) -> list[tuple[str, bool]]:
    """Every LLM call: its purpose, and whether this thread held a transaction then.
    ``during(purpose)`` runs at the call, before the LLM answers."""
    calls: list[tuple[str, bool]] = []
    llm_json = agent.client.llm_json

    def wrapped(**kwargs):
        calls.append((kwargs.get("purpose"), connection.in_atomic_block))
        if during is not None:
            during(kwargs.get("purpose"))
        return llm_json(**kwargs)

    monkeypatch.setattr(agent.client, "llm_json", wrapped)
    return calls


def _room() -> list[Message]:
    return [message_save(channel=ROOM, role="user", content=t, author="marie") for t in SAID]


def test_the_digest_holds_no_transaction_while_the_llm_decides_a_duplicate(lobby, monkeypatch):
    said = _room()
    _script(lobby, [("marie_ville", LYON, [1]), ("marie_quartier", LYON_PRECISE, [2])])
    calls = _watch_llm_calls(monkeypatch)

    digest_run(trigger="manual")

    assert calls == [("digest", False), ("dedup", False)]
    assert Fact.objects.get(key="marie_ville").value == LYON_PRECISE  # the decision applied
    assert not Fact.all_objects.filter(key="marie_quartier").exists()
    assert all(m.digested_at for m in Message.objects.filter(pk__in=[m.id for m in said]))


def test_a_message_posted_while_the_digest_decides_a_duplicate_is_written_at_once(
    lobby, monkeypatch
):
    """What the lock meant for the owner: a message posted meanwhile waited for the whole
    batch (every LLM call of it), then failed as busy."""
    _room()
    _script(lobby, [("marie_ville", LYON, [1]), ("marie_quartier", LYON_PRECISE, [2])])
    written: list[object] = []

    def post_meanwhile(purpose):
        if purpose != "dedup":
            return

        def post():
            try:
                message = message_save(channel="whatsapp", role="user", content="Tu es là ?")
                written.append(message.pk)
            except Exception as exc:  # the test reports what the writer met
                written.append(exc)
            finally:
                connection.close()

        writer = threading.Thread(target=post)
        writer.start()
        writer.join()  # the digest waits for it: with the lock held, this is a deadlock

    _watch_llm_calls(monkeypatch, during=post_meanwhile)

    digest_run(trigger="manual")

    assert len(written) == 1 and isinstance(written[0], int), written
    assert Message.objects.filter(pk=written[0], channel="whatsapp").exists()


def test_a_message_forgotten_while_the_facts_are_stored_stops_the_rest_of_its_batch(
    lobby, monkeypatch
):
    """The LLM read both messages; the owner forgets the second while the first fact's
    near-duplicate is decided. The fact not yet written is not written, though the LLM
    numbered the first message as its source (its numbering is no proof); the first
    message is read again alone."""
    first, second = _room()
    _script(lobby, [("marie_ville", LYON, [1]), ("marie_quartier", LYON_PRECISE, [1])])

    def forget_meanwhile(purpose):
        if (
            purpose == "dedup"
            and not Message.all_objects.filter(pk=second.pk, memory_excluded=True).exists()
        ):
            forget_exchange_exclude(message_ids=[second.pk])

    _watch_llm_calls(monkeypatch, during=forget_meanwhile)

    digest_run(trigger="manual")

    assert {f.key: f.value for f in Fact.objects.all()} == {"marie_ville": LYON}
    first.refresh_from_db()
    assert first.digested_at is not None
    digest = Digest.objects.get()
    assert (digest.messages_digested, digest.facts_stored) == (1, 1)
