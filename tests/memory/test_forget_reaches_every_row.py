"""A topic forget reaches every row about its topic, whatever path stored it: a tool result
inside an exchange, a fact already forgotten alone, a self item not indexed yet; and a late
extraction does not bring a forgotten fact back under another key."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from agent.extraction_jobs import extraction_job_enqueue
from memory.exceptions import StoreUnavailable
from memory.models import Actor, Fact, Job, Message
from memory.services.dedup import fact_remember
from memory.services.facts import fact_forget, fact_store
from memory.services.forgetting import forgetting_restore, forgettings_purge, topic_forget
from memory.services.jobs import job_run
from memory.services.messages import message_save
from memory.services.self_memory import agent_item_store
from tests.dashboard.conftest import HTMX
from tests.fakes.anthropic import text_message
from tests.fakes.embedder import HashEmbedder, install
from tests.memory.world import index_everything

pytestmark = pytest.mark.django_db

SECRET = "Zanzibar"
TOPIC = f"le voyage à {SECRET}"


@pytest.fixture
def no_vault(settings, tmp_path):
    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path / "vault"
    (tmp_path / "vault").mkdir()


def test_the_tool_results_of_a_forgotten_exchange_leave_with_it(agent_api, no_vault):
    """An outside agent records an exchange with its tool result in the middle; the tool
    result quotes the topic, and also the flight, which names no word of the topic."""
    response = agent_api.post(
        "/api/memory/messages",
        {
            "messages": [
                {"channel": "whatsapp", "role": "user", "content": f"Réserve le {TOPIC}"},
                {"channel": "whatsapp", "source": "tool", "content": "agenda : vol AF 1234"},
                {
                    "channel": "whatsapp",
                    "source": "tool",
                    "content": f"agenda : voyage à {SECRET}, hôtel Stone Town",
                },
                {"channel": "whatsapp", "role": "assistant", "content": "C'est noté, réservé."},
            ]
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    result = topic_forget(topic=TOPIC, actor="user")
    assert result.counts["exchanges"] == 1 and result.counts["messages"] == 4
    assert not Message.objects.filter(content__contains="agenda").exists()
    text = agent_api.get("/api/memory/search", {"q": "hôtel vol agenda", "mode": "text"})
    assert text.json()["results"] == []
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'agenda'")
        assert cursor.fetchone()[0] == 0
    forgetting_restore(forgetting_id=result.forgetting_id, actor="user")
    assert Message.objects.filter(content__contains="agenda").count() == 2


def test_a_tool_result_outside_any_exchange_is_taken_by_its_own_words(agent_api, no_vault):
    agent_api.post(
        "/api/memory/messages",
        {"channel": "whatsapp", "source": "tool", "content": f"note : voyage à {SECRET} en août"},
        format="json",
    )
    topic_forget(topic=TOPIC, actor="user")
    assert not Message.objects.filter(content__contains=SECRET).exists()


def test_a_fact_forgotten_alone_leaves_with_the_topic_and_an_undo_leaves_it_forgotten(
    agent_api, staff_client, no_vault
):
    fact_store(key="voyage_ete", value=f"Voyage à {SECRET} en août avec Sophie")
    fact_store(key="velo", value="Le vélo de route est au garage")
    assert agent_api.delete("/api/memory/facts/voyage_ete").status_code == 204
    forgotten_at = Fact.all_objects.get(key="voyage_ete").forgotten_at

    result = topic_forget(topic=TOPIC, actor="user")
    assert result.counts["facts"] == 1
    forgetting_restore(forgetting_id=result.forgetting_id, actor="user")
    back = Fact.all_objects.get(key="voyage_ete")
    assert back.forgotten and back.forgetting_id is None  # as the owner left it
    assert back.forgotten_at == forgotten_at

    topic_forget(topic=TOPIC, actor="user")
    forgettings_purge(now=timezone.now() + timedelta(days=30))
    seen = {
        "facts api": agent_api.get("/api/memory/facts", {"include_forgotten": "true"}),
        "fact api": agent_api.get("/api/memory/facts/voyage_ete"),
        "facts page": staff_client.get("/memory/facts/", {"forgotten": "on"}, **HTMX),
        "admin": staff_client.get("/admin/memory/fact/"),
    }
    assert [path for path, r in seen.items() if SECRET in r.content.decode()] == []
    assert not Fact.all_objects.filter(value__contains=SECRET).exists()
    assert Fact.objects.filter(key="velo").exists()


@pytest.mark.parametrize("indexed", [False, True], ids=["not-indexed-yet", "indexed"])
def test_a_topic_forget_takes_the_agents_self_item_about_it(
    vector_store, local_embedder, no_vault, indexed
):
    item = agent_item_store(
        kind="self",
        category="relation",
        content=f"J'aide Sophie à préparer son voyage à {SECRET} en août",
    ).item
    other = agent_item_store(
        kind="goal", category="understanding", content="Comprendre comment réparer le vélo"
    ).item
    if indexed:
        index_everything()
    topic_forget(topic=TOPIC, actor="user")
    assert Fact.all_objects.get(pk=item.pk).forgetting_id is not None
    assert Fact.all_objects.get(pk=other.pk).forgetting_id is None


def test_a_late_extraction_under_another_key_does_not_bring_a_forgotten_fact_back(
    agent_api, vector_store, local_embedder
):
    old = message_save(channel="whatsapp", role="user", content=f"Voyage à {SECRET} en août")
    value = f"Voyage à {SECRET} en août avec Sophie"
    fact_store(key="voyage_ete", value=value, actor=Actor.AGENT, source_message_id=old.id)
    fact_store(key="vacances", value="Vacances à la maison", actor=Actor.AGENT)
    assert agent_api.delete("/api/memory/facts/voyage_ete").status_code == 204
    # The extraction of the old exchange ran late (a retry); the LLM chose other keys.
    for key in ("vacances_zanzibar", "vacances"):
        result = fact_remember(key=key, value=value, source_message_id=old.id, actor=Actor.AGENT)
        assert result.action == "noop"
    assert not Fact.objects.filter(forgotten=False, value__contains=SECRET).exists()
    assert Fact.objects.get(key="vacances").value == "Vacances à la maison"
    # News after the forget still counts: a later message states it again.
    new = message_save(channel="whatsapp", role="user", content=f"Finalement, {SECRET} en août")
    result = fact_remember(key="vacances_zanzibar", value=value, source_message_id=new.id)
    assert result.action == "added"


def test_with_the_embedder_down_a_late_extraction_does_not_bring_a_forgotten_fact_back(
    vector_store, fake_anthropic, monkeypatch, settings
):
    """Whether a late statement restates a fact forgotten since its message is the
    embedder's to tell (another key, a final period): while it is down the statement is
    not stored, it is never taken for news. An outage delays a forget, never weakens it."""
    settings.ANTHROPIC_MAX_RETRIES = 0
    embedder = HashEmbedder()
    install(monkeypatch, embedder)
    question = message_save(channel="whatsapp", role="user", content="David habite à Toulouse.")
    reply = message_save(
        channel="whatsapp", role="assistant", content="Noté !", reply_to_id=question.id
    )
    job = extraction_job_enqueue(message_ids=[question.id], reply_id=reply.id, channel="whatsapp")
    fact, _ = fact_store(key="brother_city", value="David habite à Toulouse", actor=Actor.AGENT)
    fact_forget(fact=fact, actor=Actor.USER)
    embedder.error = StoreUnavailable("embedder down")
    candidate = {"key": "david_ville", "value": "David habite à Toulouse."}
    fake_anthropic.script(text_message(json.dumps({"facts": [candidate]})))
    assert job_run(job.pk) == "waiting"  # delayed by the outage, its answer kept
    assert not Fact.objects.filter(forgotten=False).exists()
    with pytest.raises(StoreUnavailable):  # what a caller turns into a wait
        fact_remember(**candidate, source_message_id=question.id, actor=Actor.AGENT)
    # The embedder back, the job runs again: the restatement is recognised and dropped.
    embedder.error = None
    Job.objects.filter(pk=job.pk).update(run_after=timezone.now())
    assert job_run(job.pk) == "done"
    assert not Fact.objects.filter(forgotten=False).exists()
    # Nothing forgotten since a later message: no comparison needed, stored as before.
    later = message_save(channel="whatsapp", role="user", content="David a un chat.")
    result = fact_remember(key="david_chat", value="David a un chat", source_message_id=later.id)
    assert result.action == "added"


def test_an_undo_gives_the_key_back_when_another_forget_took_the_agents_restatement(
    vector_store, local_embedder
):
    fact, _ = fact_store(key="voyage_ete", value="Voyage à Lisbonne du 3 au 17 août")
    first = topic_forget(topic="Lisbonne", actor="user")
    # The agent states the key again meanwhile (a new fact), which a second forget takes.
    fact_remember(key="voyage_ete", value="Voyage à Porto en septembre", actor=Actor.AGENT)
    second = topic_forget(topic="Porto", actor="user")
    assert second.counts["facts"] == 1
    forgetting_restore(forgetting_id=first.forgetting_id, actor="user")
    assert Fact.objects.get(pk=fact.pk).key == "voyage_ete"
    porto = Fact.all_objects.get(value__contains="Porto")
    assert porto.key == f"voyage_ete (oubli n° {second.forgetting_id})"  # waits aside
    forgettings_purge(now=timezone.now() + timedelta(days=30))
    assert Fact.objects.get(key="voyage_ete").pk == fact.pk
    assert not Fact.all_objects.filter(value__contains="Porto").exists()


def test_the_agent_stating_a_key_the_owner_forgot_stores_its_news_not_the_forgotten_value():
    """The owner wrote then forgot 'Grenoble'; the agent states 'Lyon' (news: no source
    message). The owner's lock was on words the owner forgot: the news is stored, and
    the forgotten value does not come back."""
    fact, _ = fact_store(key="user_city", value="Mickael habite Grenoble", actor="user")
    fact_forget(fact=fact, actor="user")
    result = fact_remember(key="user_city", value="Mickael habite Lyon", actor=Actor.AGENT)
    row = Fact.all_objects.get(key="user_city")
    assert (row.forgotten, row.value) == (False, "Mickael habite Lyon"), result.action
    assert "Grenoble" not in result.fact.value


def test_a_forget_preview_does_not_show_the_value_of_a_fact_already_forgotten():
    """The plan lists a fact forgotten one by one (the forget takes it for good) by its key:
    the agent that asks for the preview does not read the forgotten words."""
    from memory.services.forgetting import topic_forget_preview

    fact, _ = fact_store(key="marie_secret", value="Marie cache un diagnostic", actor="user")
    fact_forget(fact=fact, actor="user")
    plan = topic_forget_preview(topic="Marie diagnostic")
    assert [f["key"] for f in plan.facts] == ["marie_secret"]
    assert "cache" not in plan.as_text() and "cache" not in str(plan.as_dict())


def test_an_expired_fact_the_purge_has_not_reached_is_not_exported():
    from memory.services.portability import export_lines

    fact_store(key="rdv_dentiste", value="Dentiste mardi à 9 h")
    fact_store(key="velo", value="Le vélo est au garage")
    Fact.all_objects.filter(key="rdv_dentiste").update(
        expires_at=timezone.now() - timedelta(hours=1)
    )
    exported = "".join(export_lines())
    assert "Dentiste" not in exported and "garage" in exported


def test_a_removal_left_to_a_job_while_qdrant_was_down_spares_what_an_undo_brought_back(
    vector_store, monkeypatch, django_capture_on_commit_callbacks
):
    """Qdrant down during a forget: its points are left to a durable job. The owner undoes
    the forget (its rows indexed again) before that job runs: once it has run and the
    indexing has settled, the restored fact has its point again."""
    from memory.models import IndexState
    from memory.services import removal
    from memory.services.indexing import KIND_FACT, index_rows
    from memory.stores.vectors import KNOWLEDGE, point_id

    install(monkeypatch, HashEmbedder())
    fact, _ = fact_store(key="voyage", value="Voyage à Zanzibar en août", actor=Actor.USER)
    index_everything()
    real_delete = removal._points_delete

    def qdrant_down(*args):
        raise ConnectionError("Qdrant injoignable")

    monkeypatch.setattr(removal, "_points_delete", qdrant_down)
    with django_capture_on_commit_callbacks(execute=True):
        forgetting = topic_forget(topic="Zanzibar", actor=Actor.USER)
    job = Job.objects.get(kind="points_remove")
    monkeypatch.setattr(removal, "_points_delete", real_delete)
    with django_capture_on_commit_callbacks(execute=True):
        forgetting_restore(forgetting_id=forgetting.forgetting_id, actor=Actor.USER)
    index_rows(KIND_FACT, [fact.pk])  # the undo's indexing, before the job runs

    with django_capture_on_commit_callbacks(execute=True):
        assert job_run(job.pk) == "done"
    index_rows(KIND_FACT, [fact.pk])  # what the job sent on its commit

    fact.refresh_from_db()
    assert fact.index_state == IndexState.INDEXED
    assert vector_store.retrieve(KNOWLEDGE, [point_id(KIND_FACT, fact.pk)])
