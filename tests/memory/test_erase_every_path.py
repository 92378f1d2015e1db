"""After a hard delete (the owner's "erase this for good"), no read path returns the content,
no row, revision, FTS entry or point is left, and the logs are redacted — at once, no undo."""

from __future__ import annotations

import pytest

from memory.exceptions import MemoryServiceError
from memory.models import (
    Fact,
    FactRevision,
    Forgetting,
    ForgettingState,
    Job,
    MemoryRetrieval,
    Message,
)
from memory.services.erasing import fact_erase, forgetting_erase
from memory.services.facts import fact_store
from memory.services.forgetting import PURGED_TOPIC, forgetting_restore, topic_forget
from memory.services.maintenance import reindex
from memory.services.retrieval import auto_retrieve
from tests.dashboard.conftest import HTMX
from tests.memory import test_forget_every_path as forget_walk
from tests.memory.test_forget_every_path import (
    SECRET,
    TOPIC,
    _every_path,
    _leaks,
    _points_with_secret,
)
from tests.memory.world import index_everything

pytestmark = pytest.mark.django_db

world = forget_walk.world  # the same world as the forget's walk (a fixture)

CODE = "Quetzalcoatl"  # the fact's own rare word
FACT_KEY = "code_portail"
FACT_QUERY = "code du portail"


@pytest.fixture
def code_fact(world):
    fact, _ = fact_store(key=FACT_KEY, value=f"Le code du portail est {CODE} depuis mars")
    fact_store(key=FACT_KEY, value=f"Le code du portail est {CODE}, changé en mars")  # a revision
    index_everything()
    auto_retrieve(message="Quel est le code du portail ?", channel="whatsapp")  # logs it
    return Fact.objects.get(key=FACT_KEY)


def _erase_through(entry: str, fact: Fact, *, staff_client, owner_api) -> None:
    if entry == "api":
        response = owner_api.post(f"/api/memory/facts/{fact.key}/erase")
        assert response.status_code == 200, response.content
        assert response.json()["state"] == ForgettingState.PURGED
    elif entry == "admin":
        response = staff_client.post(
            "/admin/memory/fact/",
            {"action": "erase_facts", "_selected_action": [fact.pk], "post": "yes"},
        )
        assert response.status_code == 302, response.content
    else:  # the /memory button, behind its French confirmation
        page = staff_client.get("/memory/facts/", **HTMX).content.decode()
        # hx-confirm, the key bidi-isolated (U+2068…U+2069, escaped in the attribute)
        assert f"Effacer définitivement le fait « &#x2068;{fact.key}&#x2069; »" in page
        response = staff_client.post(f"/memory/facts/{fact.key}/erase/", **HTMX)
        assert response.status_code == 200
        assert "effacé définitivement" in response.content.decode()


@pytest.mark.parametrize("entry", ["api", "admin", "dashboard"])
def test_an_erased_fact_leaves_every_path_and_its_history_at_once(
    entry,
    code_fact,
    world,
    staff_client,
    agent_api,
    owner_api,
    django_capture_on_commit_callbacks,
):
    walk = {"query": FACT_QUERY, "secret": CODE}
    before = _leaks(_every_path(staff_client, agent_api, **walk), CODE)
    assert {"api search text", "facts api", "fts facts_fts", "retrievals"} <= set(before)
    assert _points_with_secret(world, CODE) == 1
    messages_before = Message.objects.count()

    with django_capture_on_commit_callbacks(execute=True):
        _erase_through(entry, code_fact, staff_client=staff_client, owner_api=owner_api)
    index_everything()

    assert _leaks(_every_path(staff_client, agent_api, **walk), CODE) == []
    assert _points_with_secret(world, CODE) == 0
    assert not Job.objects.filter(kind="points_remove").exists()  # done at once: no row left
    assert not Fact.all_objects.filter(key=FACT_KEY).exists()
    assert not FactRevision.objects.filter(fact_id=code_fact.pk).exists()
    assert not MemoryRetrieval.objects.filter(memories__icontains=CODE).exists()
    erasure = Forgetting.objects.get()
    assert (erasure.state, erasure.topic, erasure.counts["facts"]) == (
        ForgettingState.PURGED,
        PURGED_TOPIC,
        1,
    )
    # Nothing else went: the other fact and the conversation are still there.
    assert Fact.objects.filter(key="velo").exists()
    assert Message.objects.count() == messages_before
    reindex()
    assert _points_with_secret(world, CODE) == 0
    with pytest.raises(MemoryServiceError):
        forgetting_restore(forgetting_id=erasure.pk, actor="user")


def test_a_forget_erased_at_once_leaves_nothing_on_any_path(
    world,
    staff_client,
    agent_api,
    owner_api,
    django_capture_on_commit_callbacks,
):
    result = topic_forget(topic=TOPIC, actor="user")
    fact_id = Fact.all_objects.get(key="voyage_ete").pk
    refused = agent_api.post(f"/api/memory/forgettings/{result.forgetting_id}/erase")
    assert refused.status_code == 403  # the agent's token cannot erase
    assert Forgetting.objects.get().state == ForgettingState.ACTIVE

    with django_capture_on_commit_callbacks(execute=True):
        response = owner_api.post(f"/api/memory/forgettings/{result.forgetting_id}/erase")
    assert response.status_code == 200, response.content
    index_everything()

    assert _leaks(_every_path(staff_client, agent_api)) == []
    assert not Message.all_objects.filter(content__contains=SECRET).exists()
    assert not Fact.all_objects.filter(value__contains=SECRET).exists()
    assert not FactRevision.objects.filter(fact_id=fact_id).exists()
    reindex()
    assert _points_with_secret(world) == 0
    assert Forgetting.objects.get().topic == PURGED_TOPIC
    again = owner_api.post(f"/api/memory/forgettings/{result.forgetting_id}/erase")
    assert again.status_code == 400
    assert again.json()["message"] == "Cet oubli est déjà effacé définitivement."


def test_a_restored_forget_cannot_be_erased(world):
    result = topic_forget(topic=TOPIC, actor="user")
    forgetting_restore(forgetting_id=result.forgetting_id, actor="user")
    with pytest.raises(MemoryServiceError, match="annulé"):
        forgetting_erase(forgetting_id=result.forgetting_id, actor="user")
    assert Message.objects.filter(content__contains=SECRET).exists()


def test_an_erased_forgotten_fact_goes_too(world):
    fact = Fact.objects.get(key="velo")
    topic_forget(topic="vélo garage", actor="user")
    fact_erase(fact=Fact.all_objects.get(pk=fact.pk), actor="admin")
    assert not Fact.all_objects.filter(pk=fact.pk).exists()


def test_an_erase_while_qdrant_is_down_leaves_a_durable_job_that_removes_the_points(
    code_fact, world, settings, django_capture_on_commit_callbacks
):
    """The rows are gone for good, so the indexing machine has nothing left to act on:
    the points' removal is a durable job, retried until Qdrant answers, however long the
    outage lasts (a store that is down never makes a job fail for good)."""
    from memory.models import Job, JobState
    from memory.services.jobs import MAX_ATTEMPTS, job_run, jobs_sweep
    from memory.stores.vectors import vector_store_reset

    assert _points_with_secret(world, CODE) == 1
    vector_store_reset()
    folder = settings.QDRANT_PATH
    settings.QDRANT_URL, settings.QDRANT_TIMEOUT_S = "http://127.0.0.1:9", 1  # nothing there
    with django_capture_on_commit_callbacks(execute=True):
        fact_erase(fact=code_fact, actor="user")
    assert not Fact.all_objects.filter(key=FACT_KEY).exists()
    job = Job.objects.get(kind="points_remove")
    assert CODE not in str(job.payload)  # ids only, never the erased content
    for _ in range(MAX_ATTEMPTS + 1):  # longer than any count of attempts
        Job.objects.filter(pk=job.pk).update(run_after=None)  # its wait has passed
        assert job_run(job.pk) == "waiting"

    vector_store_reset()
    settings.QDRANT_URL, settings.QDRANT_PATH = "", folder  # Qdrant is back
    # What the service does on its own: the sweep sends the job once it is due.
    Job.objects.filter(pk=job.pk).update(run_after=None, queued_at=None)
    assert jobs_sweep() == 1
    assert job_run(job.pk) == "done"
    assert Job.objects.get(pk=job.pk).state == JobState.DONE
    from memory.stores.vectors import get_vector_store

    assert _points_with_secret(get_vector_store(), CODE) == 0


def test_an_erased_facts_point_leaves_qdrant_even_if_the_process_died_right_after_the_commit(
    code_fact, world
):
    """The erasure commits and the process dies before its on-commit callbacks run (here
    they never run: the same thing). The row is gone, so the indexing machine will never
    touch its point again: the removal is a job written in the erasure's transaction,
    which the restart and the sweep run."""
    from memory.models import JobState
    from memory.services.jobs import job_run, jobs_restart_recover, jobs_sweep

    assert _points_with_secret(world, CODE) == 1
    fact_erase(fact=code_fact, actor="user")
    removals = Job.objects.filter(kind="points_remove")
    payloads = str(list(removals.values_list("payload", flat=True)))
    assert CODE not in payloads and FACT_KEY not in payloads  # ids only

    jobs_restart_recover()
    jobs_sweep()
    for job_id in Job.objects.filter(state=JobState.QUEUED).values_list("id", flat=True):
        job_run(job_id)
    assert _points_with_secret(world, CODE) == 0
    assert list(removals.values_list("state", "payload")) == [(JobState.DONE, {})]
