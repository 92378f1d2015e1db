"""Forgotten and excluded messages never feed compaction, extraction or the text search."""

from __future__ import annotations

import json

import pytest

import agent.extraction_jobs as extraction_jobs
from agent.compaction import channel_compact
from agent.extraction_jobs import exchange_facts_save
from memory.models import Fact, Message
from memory.services.facts import fact_forget, fact_store
from memory.services.forgetting import forget_exchange_exclude, topic_forget
from memory.services.jobs import JobWait
from memory.services.search import memory_search
from memory.stores.fts import fts_search_facts
from tests.fakes.anthropic import text_message
from tests.memory.world import exchange_save

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, settings):
    settings.AGENT_COMPACTION_THRESHOLD = 6
    settings.AGENT_COMPACTION_KEEP_LAST = 0
    return fake_anthropic


def test_compaction_never_summarises_forgotten_or_excluded_messages(world):
    exchange_save("whatsapp", "Le voyage à Zanzibar est réservé", "Génial !")
    asked, _ = exchange_save("whatsapp", "Oublie le voyage à Zanzibar", "C'est oublié.")
    for i in range(4):
        exchange_save("whatsapp", f"Séance de vélo numéro {i}", "Bravo.")
    trip = Message.objects.get(content__contains="est réservé")
    world.script(text_message(json.dumps({"ids": [f"message:{trip.id}"]})))  # the forget's judge
    topic_forget(topic="le voyage à Zanzibar", keep_message_ids=[asked.id])
    forget_exchange_exclude(message_ids=[asked.id])
    world.script(text_message("Il a fait du vélo."))

    summary = channel_compact(channel="whatsapp")

    assert summary is not None and summary.message_count == 8
    transcript = world.last.messages[0]["content"]
    assert "vélo numéro 3" in transcript
    assert "Zanzibar" not in transcript and "oublié" not in transcript


def test_extraction_never_reads_an_excluded_exchange(world):
    asked, reply = exchange_save("whatsapp", "Oublie tout sur Zanzibar", "C'est oublié.")
    forget_exchange_exclude(message_ids=[asked.id])

    report = exchange_facts_save(message_ids=[asked.id], reply_id=reply.id, channel="whatsapp")

    assert report.skipped == "messages gone"
    assert world.message_requests == []


def test_an_exchange_forgotten_while_the_llm_reads_it_gives_no_fact(world, monkeypatch):
    """Extraction read the exchange, the owner forgot it, then the LLM answered."""
    asked, reply = exchange_save("whatsapp", "Le voyage à Zanzibar part le 3 août", "Noté !")
    answer = {"facts": [{"key": "voyage_zanzibar", "value": "Départ pour Zanzibar le 3 août"}]}
    world.script(
        text_message(json.dumps(answer)),
        text_message(json.dumps({"ids": [f"message:{asked.id}"]})),  # the forget's judge
    )
    real_extract = extraction_jobs.facts_extract

    def extract_then_forget(**kwargs):
        found = real_extract(**kwargs)
        topic_forget(topic="le voyage à Zanzibar", actor="user")
        return found

    monkeypatch.setattr(extraction_jobs, "facts_extract", extract_then_forget)
    # Nothing stored; the job waits for the undo (which would give the exchange back).
    with pytest.raises(JobWait):
        exchange_facts_save(message_ids=[asked.id], reply_id=reply.id, channel="whatsapp")
    assert not Fact.all_objects.filter(value__contains="Zanzibar").exists()


def test_forgotten_facts_never_crowd_live_ones_out_of_the_text_search(world):
    live = fact_store(
        key="velo_ville", value="Le vieux vélo de ville rouge est rangé dans la cave du voisin"
    )[0]
    for i in range(40):
        fact = fact_store(key=f"velo_{i}", value=f"Vélo numéro {i}")[0]
        fact_forget(fact=fact, actor="user")

    # facts_fts itself (the retrieval's keyword source ranks it with a limit), then the search.
    assert [hit.fact_id for hit in fts_search_facts(["velo"], limit=3)] == [live.id]
    hits = memory_search(query="vélo", mode="text", limit=3)
    assert [h.id for h in hits if h.kind == "fact"] == [str(live.id)]


SECRET = "Zanzibar"
TOPIC = f"le voyage à {SECRET}"


def _forget_and_extract(body: dict) -> str:
    """The fake LLM: the topic forget's judge keeps what names the topic; the extractor
    extracts the trip whenever it is shown it; the digest draws one fact from 2 messages
    when it is shown the trip."""
    from memory.services.forgetting_select import contains_all, topic_terms

    system = body.get("system")
    system = system if isinstance(system, str) else " ".join(b.get("text", "") for b in system)
    prompt = body["messages"][-1]["content"]
    prompt = prompt if isinstance(prompt, str) else " ".join(b.get("text", "") for b in prompt)
    if "SUJET" in system.upper() and "souvenirs" in prompt:
        data = json.loads(prompt)
        terms = topic_terms(data["sujet"])
        return json.dumps(
            {"ids": [s["id"] for s in data["souvenirs"] if contains_all(s["texte"], terms)]}
        )
    if "extrais des faits" in system:
        found = SECRET in prompt
        trip = {"key": "voyage_ete", "value": f"Voyage à {SECRET} en août", "type": "event"}
        return json.dumps({"facts": [trip] if found else []})
    trip = f"Sophie part en voyage à {SECRET} avec sa sœur en août"
    fact = {"key": "sophie_voyage", "value": trip, "type": "event", "sources": [1, 2]}
    return json.dumps({"facts": [fact] if SECRET in prompt else []})


def test_a_late_extraction_never_shows_the_llm_tool_results_quoting_what_was_forgotten(world):
    from memory.services.jobs import job_run
    from tests.memory.world import index_everything

    world.handler = _forget_and_extract
    fact_store(key="voyage_ete", value=f"Voyage à {SECRET} en août avec Sophie")
    question, reply = exchange_save(
        "whatsapp", "Qu'est-ce que j'ai de prévu en août ?", "Tu pars en vacances avec Sophie."
    )
    job = extraction_jobs.extraction_job_enqueue(
        message_ids=[question.id],
        reply_id=reply.id,
        channel="whatsapp",
        tool_results=[f"voyage_ete : Voyage à {SECRET} en août avec Sophie"],
    )
    index_everything()
    # The worker was busy: the owner forgets the trip before the job runs (the exchange,
    # which does not name it, stays).
    assert topic_forget(topic=TOPIC, actor="user").counts["facts"] == 1
    asked = len(world.message_requests)
    assert job_run(job.id) == "done"
    sent = world.message_requests[asked:]
    assert sent and not any(SECRET in json.dumps(r.json, ensure_ascii=False) for r in sent)
    assert not Fact.objects.filter(value__contains=SECRET).exists()


def test_a_digest_keeps_no_fact_drawn_from_a_message_forgotten_while_the_llm_read_it(
    world, monkeypatch
):
    import agent.digest as agent_digest
    from memory.services.channels import channel_settings_set
    from memory.services.messages import message_save
    from tests.memory.world import index_everything

    world.handler = _forget_and_extract
    channel_settings_set(channel="lobby", observed=True)
    message_save(
        channel="lobby", role="user", author="david", content=f"Sophie part en voyage à {SECRET}"
    )
    message_save(channel="lobby", role="user", author="david", content="Elle y va avec sa sœur")
    index_everything()
    extract = agent_digest.digest_extract

    def owner_forgets_meanwhile(messages):
        found = extract(messages)
        if Message.objects.filter(content__contains=SECRET).exists():
            topic_forget(topic=TOPIC, actor="user")  # takes the first message, not the second
        return found

    monkeypatch.setattr(agent_digest, "digest_extract", owner_forgets_meanwhile)
    agent_digest.digest_run(trigger="manual")
    assert not Message.objects.filter(content__contains=SECRET).exists()
    assert Message.objects.get(content="Elle y va avec sa sœur").digested_at is not None
    assert not Fact.objects.filter(value__contains=SECRET).exists()


def test_a_digest_whose_batch_lost_a_message_drops_the_answer_whatever_sources_it_names(
    world, monkeypatch
):
    """The owner forgot a message while the LLM read it; the answer states that message's
    content but names another one as its source (its numbering proves nothing): nothing of
    that answer is stored, the digest asks again on what remains."""
    import agent.digest as agent_digest
    from memory.services.channels import channel_settings_set
    from memory.services.digest import digest_request
    from memory.services.jobs import job_run
    from memory.services.messages import message_save

    channel_settings_set(channel="lobby", observed=True)
    message_save(channel="lobby", role="user", author="paul", content="Paul a une hernie discale.")
    lyon = message_save(
        channel="lobby", role="user", author="paul", content="Paul part à Lyon demain."
    )

    def llm(body):
        prompt = body["messages"][-1]["content"]
        if not isinstance(prompt, str) or "messages_des_salons" not in prompt:
            return text_message("pas du JSON")  # the forget's judge: its word rule decides
        read_both = "hernie" in prompt
        facts = [
            {"key": "paul_lyon", "value": "Paul va à Lyon", "sources": [2 if read_both else 1]}
        ]
        if read_both:
            facts.append({"key": "paul_dos", "value": "Paul souffre du dos", "sources": [2]})
        return text_message(json.dumps({"facts": facts}))

    world.handler = llm
    extract = agent_digest.digest_extract
    forgets = []

    def owner_forgets_meanwhile(messages):
        found = extract(messages)
        if not forgets:
            forgets.append(topic_forget(topic="hernie discale", actor="user"))
        return found

    monkeypatch.setattr(agent_digest, "digest_extract", owner_forgets_meanwhile)
    assert job_run(digest_request().id) == "done"

    assert forgets[0].counts["messages"] == 1
    assert not Fact.all_objects.filter(key="paul_dos").exists()
    # Asked again on what remains: the other message is digested, with its fact.
    digest_prompts = [
        r.messages[-1]["content"]
        for r in world.message_requests
        if "messages_des_salons" in str(r.messages[-1]["content"])
    ]
    assert len(digest_prompts) == 2 and "hernie" not in digest_prompts[1]
    assert Fact.objects.get(key="paul_lyon").source_message_id == lyon.id
    lyon.refresh_from_db()
    assert lyon.digested_at is not None
