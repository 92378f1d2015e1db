"""The shared test world: real SQLite (with FTS5) through Django, users, clients."""

from __future__ import annotations

import pytest


@pytest.fixture
def staff_user(django_user_model):
    return django_user_model.objects.create_user(
        username="owner", password="mot-de-passe-solide", is_staff=True, is_superuser=True
    )


@pytest.fixture
def staff_client(client, staff_user):
    client.force_login(staff_user)
    return client


@pytest.fixture
def vector_store(tmp_path, settings):
    """A real embedded Qdrant (Edge) in a fresh folder, as the process-wide store."""
    from memory.stores.vectors import get_vector_store, vector_store_reset

    vector_store_reset()
    settings.QDRANT_URL = ""
    settings.QDRANT_PATH = tmp_path / "qdrant"
    yield get_vector_store()
    vector_store_reset()


@pytest.fixture
def local_embedder(settings):
    """The bundled local embedder (real model), as the process-wide embedder."""
    from memory.stores.embedders import embedder_reset, get_embedder

    embedder_reset()
    settings.VOYAGE_API_KEY = ""
    yield get_embedder()
    embedder_reset()


@pytest.fixture
def eager_tasks():
    """Run Celery tasks inline, as a worker would, for the duration of a test."""
    from celery._state import _set_task_join_will_block

    from makilab.celery import app

    # A worker started in this process before (an embedded worker's test) marks the
    # process as inside a task: a test's result.get() would refuse to wait for one.
    _set_task_join_will_block(False)
    previous = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, False
    yield app
    app.conf.task_always_eager, app.conf.task_eager_propagates = previous


@pytest.fixture(autouse=True)
def _retrieval_logs_written():
    """A test's retrieval log rows are written before its database is flushed.

    auto_retrieve writes its row in a writer thread when no transaction is open
    (transactional tests, live servers): the row must not land in the next test.
    """
    import sys

    yield
    log = sys.modules.get("memory.services.retrieval.log")
    if log is not None:
        log.retrieval_logs_wait()


@pytest.fixture(autouse=True)
def _keywords_process_stopped():
    """The keyword process a test started (retrieval_warm does) ends with it, and so does
    its supervision (a start that failed still leaves it wanted, restarted in the
    background by the next test's pre-hooks): the next test ranks its keywords in this
    process unless it starts one itself."""
    import sys

    yield
    process = sys.modules.get("memory.services.keywords_process")
    if process is not None:
        process.keywords_process_stop()


@pytest.fixture
def agent_items_about_the_wedding(settings):
    """The agent's self item and goal about the topic (their keys are internal slugs)."""
    from memory.models import FactKind
    from memory.services.self_memory import agent_item_store

    settings.ANTHROPIC_API_KEY = ""
    knows = agent_item_store(
        kind=FactKind.SELF, category="context", content="Je connais le mariage de Marie à Lisbonne"
    ).item
    goal = agent_item_store(
        kind=FactKind.GOAL,
        category="understanding",
        content="Comprendre le mariage de Marie à Lisbonne",
    ).item
    return knows, goal
