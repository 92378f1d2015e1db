"""An erasure leaves nothing of the erased text in the embedded Qdrant's files.

Deleting a point in Qdrant Edge only marks it deleted: its payload stays in the
shard's WAL and segment pages until the collection is written anew. After a
purge or an erasure the affected collections are rewritten (memory.stores.
edge_rewrite): the folder then holds the remaining points only, every one still
found by a search.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.models import Fact
from memory.services.erasing import fact_erase, forgetting_erase
from memory.services.forgetting import topic_forget
from memory.stores.vectors import COLLECTIONS, get_vector_store, vector_store_reset
from tests.memory import test_forget_every_path as forget_walk
from tests.memory.test_forget_every_path import SECRET, TOPIC

pytestmark = pytest.mark.django_db

world = forget_walk.world  # the same world as the forget's walk (a fixture)

FACT_KEY = "code_portail_hibiscus"  # the key lands in a payload index's files
CODE = "Quetzalcoatl"


def _files_holding(folder: Path, *words: str) -> list[str]:
    """The files under ``folder`` holding any of ``words`` (bytes, as grep -a reads them)."""
    needles = [w.encode() for w in words]
    return sorted(
        str(path.relative_to(folder))
        for path in folder.rglob("*")
        if path.is_file() and any(n in path.read_bytes() for n in needles)
    )


def _points(store) -> dict[str, dict[str, str]]:
    """{collection: {point id: a payload's text}} of every point."""
    return {
        name: {hit.id: str(hit.payload) for hit in store.retrieve(name, list(store.iter_ids(name)))}
        for name in COLLECTIONS
    }


def _assert_every_point_is_found(store, expected: dict[str, dict[str, str]]) -> None:
    for name, points in expected.items():
        assert store.count(name) == len(points)
        assert set(store.iter_ids(name)) == set(points)
        vectors = store.vectors(name, list(points))
        for point, vector in vectors.items():
            hits = store.search(name, list(vector), limit=1)
            assert [h.id for h in hits] == [point]
        assert len(vectors) == len(points)


def test_an_erased_forget_leaves_no_byte_of_its_text_in_the_qdrant_folder(
    world, settings, django_capture_on_commit_callbacks
):
    folder = Path(settings.QDRANT_PATH)
    assert _files_holding(folder, SECRET), "the world's points hold the secret word"
    with django_capture_on_commit_callbacks(execute=True):
        result = topic_forget(topic=TOPIC, actor="user")
    remaining = {
        name: {p: text for p, text in points.items() if SECRET not in text}
        for name, points in _points(world).items()
    }
    assert sum(map(len, remaining.values())) >= 2  # the bicycle's exchange and fact stay

    with django_capture_on_commit_callbacks(execute=True):
        forgetting_erase(forgetting_id=result.forgetting_id, actor="user")

    assert _files_holding(folder, SECRET, "voyage_ete") == []
    _assert_every_point_is_found(world, remaining)
    vector_store_reset()  # and after a restart
    assert _files_holding(folder, SECRET, "voyage_ete") == []
    _assert_every_point_is_found(get_vector_store(), remaining)


def test_an_erased_fact_leaves_no_byte_of_its_key_or_value_in_the_qdrant_folder(
    world, settings, django_capture_on_commit_callbacks
):
    from memory.services.facts import fact_store
    from tests.memory.world import index_everything

    folder = Path(settings.QDRANT_PATH)
    fact, _ = fact_store(key=FACT_KEY, value=f"Le code du portail est {CODE}")
    index_everything()
    assert _files_holding(folder, CODE, FACT_KEY)
    before = _points(world)

    with django_capture_on_commit_callbacks(execute=True):
        fact_erase(fact=Fact.objects.get(pk=fact.pk), actor="user")

    assert _files_holding(folder, CODE, FACT_KEY) == []
    remaining = {
        name: {p: text for p, text in points.items() if CODE not in text}
        for name, points in before.items()
    }
    assert sum(map(len, before.values())) - sum(map(len, remaining.values())) == 1
    _assert_every_point_is_found(world, remaining)


def test_an_erasure_whose_job_runs_after_a_restart_leaves_no_byte_either(world, settings):
    """The process died right after the erasure's commit (its on-commit run never came):
    the durable job the restart runs rewrites the collections too."""
    from memory.models import Job, JobState
    from memory.services.jobs import job_run, jobs_restart_recover, jobs_sweep

    folder = Path(settings.QDRANT_PATH)
    fact = Fact.objects.get(key="voyage_ete")
    fact_erase(fact=fact, actor="user")  # its on-commit callbacks never run
    assert _files_holding(folder, "voyage_ete")

    vector_store_reset()  # the restart
    jobs_restart_recover()
    jobs_sweep()
    for job_id in Job.objects.filter(state=JobState.QUEUED).values_list("id", flat=True):
        assert job_run(job_id) == "done"

    assert _files_holding(folder, "voyage_ete") == []


def test_an_erased_forget_of_old_history_lines_leaves_no_byte_of_the_old_value(
    world, settings, django_capture_on_commit_callbacks
):
    """Review: a forget that took only a fact's old history lines named no fact, so its
    erasure rewrote nothing, while the fact's point had held the old value before the
    edit: it stayed in knowledge's files."""
    from memory.models import Actor
    from memory.services.facts import fact_store, fact_update
    from memory.services.forgetting import topic_forget_preview
    from tests.memory.world import index_everything

    folder = Path(settings.QDRANT_PATH)
    fact, _ = fact_store(key="budget_ete", value="Budget pour le mariage à Xochimilco : 800 €.")
    index_everything()
    fact_update(fact=fact, actor=Actor.USER, value="Budget de l'été : 500 €.")
    index_everything()
    plan = topic_forget_preview(topic="mariage Xochimilco")
    assert plan.facts == [] and plan.history
    with django_capture_on_commit_callbacks(execute=True):
        result = topic_forget(topic="mariage Xochimilco", actor=Actor.USER, only=plan.item_ids())
    with django_capture_on_commit_callbacks(execute=True):
        forgetting_erase(forgetting_id=result.forgetting_id, actor=Actor.USER)

    assert _files_holding(folder, "Xochimilco") == []
    assert Fact.objects.get(key="budget_ete").value == "Budget de l'été : 500 €."
