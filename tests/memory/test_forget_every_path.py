"""After a forget, and again after its purge, no read path returns the forgotten content."""

from __future__ import annotations

import contextlib
import json
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from agent.context import history_build
from agent.tools import ToolContext, tool_run
from memory.exceptions import MemoryServiceError
from memory.models import Fact, FactRevision, Message, Summary
from memory.services.channels import channel_settings_set
from memory.services.dedup import fact_remember
from memory.services.facts import fact_store, fact_update
from memory.services.forgetting import forgetting_restore, forgettings_purge, topic_forget
from memory.services.maintenance import reindex
from memory.services.messages import message_save
from memory.services.retrieval import auto_retrieve
from tests.dashboard.conftest import HTMX
from tests.memory.world import exchange_save, index_everything

pytestmark = pytest.mark.django_db

SECRET = "Zanzibar"  # a rare word: any path returning it leaks the forgotten content
TOPIC = f"le voyage à {SECRET}"
QUERY = "voyage en août avec Sophie"


@pytest.fixture
def world(vector_store, local_embedder, settings, tmp_path):
    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path / "vault"
    (tmp_path / "vault").mkdir()
    exchange_save("whatsapp", f"Le voyage à {SECRET} est réservé pour août", "Génial, bon voyage !")
    exchange_save("whatsapp", "Le vélo est au garage pour le dérailleur", "D'accord.")
    fact_store(key="voyage_ete", value=f"Voyage à {SECRET} en août avec Sophie")
    fact_store(key="velo", value="Le vélo de route est au garage")
    Summary.objects.create(channel="whatsapp", content=f"Préparation du voyage à {SECRET}.")
    # An observed room: its message has a live point, injected as an extract elsewhere.
    channel_settings_set(channel="lobby", observed=True)
    message_save(
        channel="lobby",
        role="user",
        author="david",
        content=f"Sophie part en voyage à {SECRET} en août",
    )
    index_everything()
    # A retrieval that injected the trip: its log must not keep it.
    auto_retrieve(message=f"Quand part le voyage à {SECRET} ?", channel="whatsapp")
    return vector_store


def _every_path(staff_client, agent_api, *, query=QUERY, secret=SECRET) -> dict[str, str]:
    """What each read path returns for questions about the topic, as text.

    The questions do not contain the secret word (pages echo the query back):
    they find the trip by its other words ("voyage", "août", "Sophie").
    Also used after a hard delete (test_erase_every_path.py).
    """
    seen: dict[str, str] = {}
    for mode in ("semantic", "text", "hybrid"):
        response = agent_api.get("/api/memory/search", {"q": query, "mode": mode})
        assert response.status_code == 200, response.content
        seen[f"api search {mode}"] = response.content.decode()
        html = staff_client.get("/memory/search/", {"q": query, "mode": mode}, **HTMX)
        seen[f"/memory search {mode}"] = html.content.decode()
    context = ToolContext(channel="mission_control", message_ids=())
    for tool in ("memory__search", "memory__search_text", "memory__recent"):
        outcome = tool_run(name=tool, tool_input={"query": query}, context=context)
        seen[f"tool {tool}"] = outcome.content
    result = auto_retrieve(message=f"Parle-moi de mon {query}", channel="mission_control")
    seen["auto-retrieval"] = result.prompt_block + json.dumps(result.memories, ensure_ascii=False)
    seen["auto-retrieval live"] = json.dumps(result.live, ensure_ascii=False, default=str)
    preview = agent_api.post(
        "/api/memory/preview", {"message": f"Et ce {query} ?", "channel": "x"}, format="json"
    )
    seen["preview"] = preview.content.decode()
    # The log is the owner's (the agent's token: 403).
    seen["retrievals"] = staff_client.get("/api/memory/retrievals").content.decode()
    assert agent_api.get("/api/memory/retrievals").status_code == 403
    seen["facts api"] = agent_api.get(
        "/api/memory/facts", {"include_expired": "true"}
    ).content.decode()
    seen["facts page"] = staff_client.get(
        "/memory/facts/", {"forgotten": "on"}, **HTMX
    ).content.decode()
    seen["history"] = json.dumps(
        history_build(channel="whatsapp", before_id=10**9), ensure_ascii=False
    )
    seen["summaries"] = " ".join(Summary.objects.values_list("content", flat=True))
    with connection.cursor() as cursor:
        for table in ("messages_fts", "facts_fts", "summaries_fts"):
            cursor.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH %s", [secret.lower()])
            seen[f"fts {table}"] = secret if cursor.fetchone()[0] else ""
    return seen


def _leaks(seen: dict[str, str], secret: str = SECRET) -> list[str]:
    return [path for path, text in seen.items() if secret.lower() in text.lower()]


def _points_with_secret(store, secret: str = SECRET) -> int:
    from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, LIVE

    found = 0
    for collection in (CONVERSATIONS, KNOWLEDGE, LIVE):
        hits = store.retrieve(collection, list(store.iter_ids(collection)))
        found += sum(secret in json.dumps(h.payload, ensure_ascii=False) for h in hits)
    return found


def test_no_path_returns_forgotten_content_after_the_forget_nor_after_the_purge(
    world, staff_client, agent_api, django_capture_on_commit_callbacks
):
    before = _every_path(staff_client, agent_api)
    assert len(_leaks(before)) >= 8, "the walk must see the content before the forget"
    assert "auto-retrieval live" in _leaks(before)
    assert _points_with_secret(world) == 4  # the exchange, the live message, the fact, the summary

    with django_capture_on_commit_callbacks(execute=True):
        result = topic_forget(topic=TOPIC, actor="user")
    index_everything()  # the tasks the forget sent
    assert _leaks(_every_path(staff_client, agent_api)) == []
    assert _points_with_secret(world) == 0

    reindex()  # a rebuild from T1 brings nothing back
    assert _leaks(_every_path(staff_client, agent_api)) == []
    assert _points_with_secret(world) == 0

    with django_capture_on_commit_callbacks(execute=True):
        forgettings_purge(now=timezone.now() + timedelta(days=30))
    assert _leaks(_every_path(staff_client, agent_api)) == []
    assert not Message.all_objects.filter(content__contains=SECRET).exists()
    assert not Fact.all_objects.filter(value__contains=SECRET).exists()
    reindex()
    assert _points_with_secret(world) == 0
    with pytest.raises(MemoryServiceError):
        forgetting_restore(forgetting_id=result.forgetting_id, actor="user")


def test_the_rest_of_the_memory_is_still_found(world, staff_client, agent_api):
    topic_forget(topic=TOPIC, actor="user")
    index_everything()
    response = agent_api.get("/api/memory/search", {"q": "vélo garage", "mode": "hybrid"})
    assert "garage" in response.content.decode()


def test_a_restore_brings_back_the_rows_their_fts_entries_and_their_points(
    world, staff_client, agent_api, django_capture_on_commit_callbacks
):
    messages_before = Message.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        result = topic_forget(topic=TOPIC, actor="user")
    index_everything()
    assert _points_with_secret(world) == 0 and Message.objects.count() == messages_before - 3

    with django_capture_on_commit_callbacks(execute=True):
        forgetting_restore(forgetting_id=result.forgetting_id, actor="user")
    index_everything()  # the tasks the restore sent

    assert Message.objects.count() == messages_before  # the question, its reply, the room's
    assert Fact.objects.filter(value__contains=SECRET, forgotten=False).count() == 1
    assert Summary.objects.filter(content__contains=SECRET).count() == 1
    seen = _every_path(staff_client, agent_api)
    assert seen["fts messages_fts"] == SECRET and seen["fts facts_fts"] == SECRET
    assert _points_with_secret(world) == 4  # the exchange, the live message, the fact, the summary
    assert {"api search text", "api search semantic", "tool memory__search"} <= set(_leaks(seen))


def test_a_single_fact_forgotten_leaves_no_path_but_its_restorable_row(
    vector_store, local_embedder, settings, tmp_path, staff_client, agent_api
):
    """DELETE /facts/<key> forgets one fact: only the lists that show forgotten facts
    (to restore them) still have it; its text leaves the retrieval log too."""
    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path / "vault"
    (tmp_path / "vault").mkdir()
    exchange_save("whatsapp", "Le vélo est au garage pour le dérailleur", "D'accord.")
    fact_store(key="voyage_ete", value=f"Voyage à {SECRET} en août avec Sophie")
    index_everything()
    auto_retrieve(message="Quand part le voyage en août avec Sophie ?", channel="whatsapp")
    assert "retrievals" in _leaks(_every_path(staff_client, agent_api))
    assert agent_api.delete("/api/memory/facts/voyage_ete").status_code in (200, 204)
    index_everything()
    leaks = _leaks(_every_path(staff_client, agent_api))
    # Restorable from the owner's page, by design; the agent's token reads nothing of it.
    assert sorted(leaks) == ["facts page"]
    assert "[oublié]" in staff_client.get("/api/memory/retrievals").content.decode()


@contextlib.contextmanager
def _writer_held(settings, tmp_path, monkeypatch):
    """The trip and the bike in memory; the log writer holds each batch until the block
    ends, then writes it, and the block waits for those rows."""
    import threading

    from memory.services.retrieval import log as retrieval_log

    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path / "vault"
    (tmp_path / "vault").mkdir()
    fact_store(key="voyage_ete", value=f"Voyage à {SECRET} en août avec Sophie")
    fact_store(key="velo", value="Le vélo de route est au garage")
    index_everything()
    release = threading.Event()
    write_batch = retrieval_log._LogWriter._write_batch

    def held(batch):
        release.wait(20)
        return write_batch(batch)

    monkeypatch.setattr(retrieval_log._LogWriter, "_write_batch", staticmethod(held))
    try:
        yield
    finally:
        release.set()
    retrieval_log.retrieval_logs_wait()


@pytest.mark.django_db(transaction=True)
def test_a_log_row_still_queued_when_a_forget_commits_is_written_redacted(
    vector_store, local_embedder, settings, tmp_path, owner_api, monkeypatch
):
    """The row waits for the writer (its batch not yet begun) while a topic forget redacts
    the logs: it is written after the forget, and must not carry the forgotten text."""
    with _writer_held(settings, tmp_path, monkeypatch):
        result = auto_retrieve(
            message="Quand part mon voyage en août avec Sophie ?", channel="whatsapp"
        )
        assert SECRET in json.dumps(result.memories, ensure_ascii=False)
        topic_forget(topic=TOPIC, actor="user")
    logged = owner_api.get("/api/memory/retrievals").content.decode()
    assert SECRET not in logged
    assert "[oublié]" in logged  # the row is there, its memory redacted


def test_a_fact_the_forget_leaves_keeps_no_line_of_its_history_about_the_topic(
    world, agent_api, owner_api
):
    """The owner planned the trip, then changed the fact: the forget leaves the fact (it is
    no longer about the trip) but takes the old value from its history; an undo gives it
    back, a purge deletes it."""
    fact_store(key="vacances", value=f"Voyage à {SECRET} en août avec Sophie")
    fact_store(key="vacances", value="Vacances à la maison cet été")

    def history() -> str:
        return agent_api.get("/api/memory/facts/vacances/revisions").content.decode()

    def export() -> str:
        response = owner_api.get("/api/memory/export")
        return b"".join(response.streaming_content).decode()

    assert SECRET in history()
    result = topic_forget(topic=TOPIC, actor="user")
    assert Fact.objects.filter(key="vacances").exists()  # the fact itself stays
    assert SECRET not in history() and SECRET not in export()
    assert Fact.objects.get(key="vacances").value == "Vacances à la maison cet été"
    forgetting_restore(forgetting_id=result.forgetting_id, actor="user")
    assert SECRET in history()
    result = topic_forget(topic=TOPIC, actor="user")
    forgettings_purge(now=timezone.now() + timedelta(days=30))
    assert SECRET not in history()
    assert not FactRevision.all_objects.filter(old_value__contains=SECRET).exists()
    assert not FactRevision.all_objects.filter(new_value__contains=SECRET).exists()


def test_an_undo_gives_back_a_fact_whose_key_the_agent_stated_again_meanwhile(world):
    """The owner's edited fact is taken by a forget; the agent states its key again; the
    undo brings the owner's fact back under its key, the agent's words as a restatement."""
    fact = Fact.objects.get(key="voyage_ete")
    fact_update(fact=fact, actor="user", value=f"Voyage à {SECRET} du 3 au 17 août")
    result = topic_forget(topic=TOPIC, actor="user")
    assert Fact.all_objects.get(pk=fact.pk).forgetting_id == result.forgetting_id
    fact_remember(key="voyage_ete", value="Pas de grand voyage cet été", actor="agent")
    assert Fact.objects.get(key="voyage_ete").pk != fact.pk  # a new fact meanwhile
    assert SECRET not in json.dumps(list(Fact.objects.values_list("key", "value")))
    forgetting_restore(forgetting_id=result.forgetting_id, actor="user")
    back = Fact.objects.get(key="voyage_ete")
    assert back.pk == fact.pk
    assert back.value == f"Voyage à {SECRET} du 3 au 17 août"  # the owner's, kept
    assert Fact.all_objects.filter(key__startswith="voyage_ete").count() == 1


def test_an_undo_leaves_the_key_to_a_fact_the_owner_stated_again_meanwhile(world):
    fact = Fact.objects.get(key="voyage_ete")
    result = topic_forget(topic=TOPIC, actor="user")
    fact_store(key="voyage_ete", value="Finalement, vacances à Biarritz", actor="user")
    forgetting_restore(forgetting_id=result.forgetting_id, actor="user")
    assert Fact.objects.get(key="voyage_ete").value == "Finalement, vacances à Biarritz"
    restored = Fact.objects.get(pk=fact.pk)  # both are there: nothing lost
    assert restored.key == f"voyage_ete (oubli n° {result.forgetting_id})"
    assert SECRET in restored.value


def _pending_extraction(
    *, tool_result: str, candidates: list[dict], state: str = "queued", question: str = ""
):
    """An exchange's extraction job not yet done: its payload quotes a memory search's hit
    (a tool result) and holds the LLM's saved answer (a crash after the checkpoint)."""
    from agent.extraction_jobs import extraction_job_enqueue
    from memory.models import Job

    question, reply = exchange_save(
        "whatsapp", question or "On part quand déjà ?", "En août, avec Sophie."
    )
    job = extraction_job_enqueue(
        message_ids=[question.id], reply_id=reply.id, channel="whatsapp", tool_results=[tool_result]
    )
    Job.objects.filter(pk=job.pk).update(
        state=state, payload={**job.payload, "candidates": candidates}
    )
    return job


def _candidate(key: str, value: str) -> dict:
    return {
        "key": key,
        "value": value,
        "memory_type": "event",
        "importance": 0.6,
        "subjects": ["Sophie"],
        "ttl": None,
    }


def test_an_extraction_job_waiting_to_run_keeps_no_text_of_a_topic_forgotten(world, staff_client):
    """The admin shows a job's payload: a forget takes from it the tool results (the run
    would drop them anyway) and every saved candidate about the topic, waiting or failed."""
    from memory.models import Job

    kept = _candidate("velo_garage", "Le vélo de route est au garage")
    queued = _pending_extraction(
        tool_result=f"memory__search: Voyage à {SECRET} en août avec Sophie",
        candidates=[_candidate("depart_voyage", f"Départ en voyage pour {SECRET}"), kept],
    )
    # The exchange itself is about the trip: the forget takes it, and every candidate
    # drawn from it goes, this one included though it lacks the word "voyage".
    failed = _pending_extraction(
        tool_result=f"[fact voyage_ete] Voyage à {SECRET}",
        candidates=[_candidate("depart_sophie", f"Sophie part pour {SECRET} en août")],
        state="failed",
        question=f"Le voyage à {SECRET}, c'est toujours pour août ?",
    )
    assert SECRET in staff_client.get(f"/admin/memory/job/{queued.pk}/change/").content.decode()

    topic_forget(topic=TOPIC, actor="user")

    for job in (queued, failed):
        page = staff_client.get(f"/admin/memory/job/{job.pk}/change/")
        assert page.status_code == 200
        assert SECRET not in page.content.decode()
    payload = Job.objects.get(pk=queued.pk).payload
    assert payload["tool_results"] == [] and payload["candidates"] == [kept]
    assert payload["message_ids"] and payload["reply_id"]  # the job itself still runs


def test_an_extraction_job_waiting_to_run_keeps_no_text_of_a_fact_forgotten(
    vector_store, local_embedder, agent_api
):
    from memory.models import Job

    fact_store(key="voyage_ete", value=f"Voyage à {SECRET} en août avec Sophie")
    job = _pending_extraction(
        tool_result=f"[fact voyage_ete] Voyage à {SECRET} en août avec Sophie",
        candidates=[_candidate("voyage_ete", f"Voyage à {SECRET} en août")],
    )
    assert agent_api.delete("/api/memory/facts/voyage_ete").status_code in (200, 204)
    payload = Job.objects.get(pk=job.pk).payload
    assert SECRET not in json.dumps(payload, ensure_ascii=False)
    assert payload["tool_results"] == [] and payload["candidates"] == []


def test_a_checkpoint_after_a_forget_does_not_write_the_tool_results_back(world):
    """A job was running (its payload read) when the forget took its tool results: its
    checkpoint saves the LLM's answer, not the copy of the payload it read before."""
    from memory.models import Job
    from memory.services.jobs import _checkpoint

    job = _pending_extraction(
        tool_result=f"memory__search: Voyage à {SECRET} en août avec Sophie",
        candidates=[_candidate("velo_garage", "Le vélo de route est au garage")],
    )
    Job.objects.filter(pk=job.pk).update(state="running", lease_token="t" * 32)
    read_before = dict(Job.objects.get(pk=job.pk).payload)
    topic_forget(topic=TOPIC, actor="user")
    checkpoint = _checkpoint(job.pk, "t" * 32, read_before)
    checkpoint(candidates=[_candidate("velo_garage", "Le vélo de route est au garage")])
    payload = Job.objects.get(pk=job.pk).payload
    assert SECRET not in json.dumps(payload, ensure_ascii=False)
    assert payload["candidates"][0]["key"] == "velo_garage"


@pytest.mark.django_db(transaction=True)
def test_a_log_row_still_queued_when_a_forget_commits_keeps_no_preview_of_the_topic(
    vector_store, local_embedder, settings, tmp_path, owner_api, monkeypatch
):
    """The owner asks about the trip, then forgets it while the row waits for the writer:
    the message's preview, which names the topic, is redacted as the forget's pass would."""
    with _writer_held(settings, tmp_path, monkeypatch):
        auto_retrieve(message=f"Tu te souviens de mon voyage à {SECRET} ?", channel="whatsapp")
        auto_retrieve(message="Et le vélo, il est où ?", channel="whatsapp")
        topic_forget(topic=TOPIC, actor="user")
    logged = owner_api.get("/api/memory/retrievals").content.decode()
    assert SECRET not in logged
    assert "[oublié]" in logged and "Et le vélo" in logged  # only the topic's preview


def test_the_preview_shows_the_history_lines_a_forget_takes_and_a_confirmation_no_more(
    world, agent_api, staff_client
):
    """The owner sees every line the forget would take, the old value of a fact it leaves
    included; a confirmation of a preview that did not show a line leaves that line."""
    fact_store(key="vacances", value=f"Voyage à {SECRET} en août avec Sophie")
    fact_store(key="vacances", value="Vacances à la maison cet été")
    preview = agent_api.post(
        "/api/memory/forget", {"topic": TOPIC, "dry_run": True}, format="json"
    ).json()
    lines = preview["history"]  # the fact's creation, and the edit that left the trip
    assert len(lines) == 2 == preview["counts"]["history"]
    assert {line["key"] for line in lines} == {"vacances"}
    assert all(SECRET in line["excerpt"] for line in lines)
    shown = [f"revision:{line['id']}" for line in lines]
    assert set(shown) <= set(preview["ids"])
    page = staff_client.post("/memory/forget/preview/", {"topic": TOPIC}, **HTMX).content.decode()
    assert "vacances" in page and all(f'value="{item}"' in page for item in shown)
    tool = tool_run(
        name="memory__forget",
        tool_input={"topic": TOPIC, "dry_run": True},
        context=ToolContext(channel="mission_control", message_ids=()),
    )
    assert "vacances" in tool.content

    older = [i for i in preview["ids"] if i not in shown]  # a preview without those lines
    response = agent_api.post("/api/memory/forget", {"topic": TOPIC, "ids": older}, format="json")
    assert response.status_code == 201
    assert response.json()["counts"]["history"] == 0
    assert FactRevision.objects.filter(fact__key="vacances").count() == 2  # not shown: kept

    again = agent_api.post("/api/memory/forget", {"topic": TOPIC, "dry_run": True}, format="json")
    assert sorted(again.json()["ids"]) == sorted(shown)
    agent_api.post("/api/memory/forget", {"topic": TOPIC, "ids": shown}, format="json")
    assert SECRET not in agent_api.get("/api/memory/facts/vacances/revisions").content.decode()
