"""The keyword source ranked in a process of its own (memory.services.keywords_process).

A real spawned process on the test database: committed rows only, so these tests
commit (transaction=True) except where the caller's transaction is the point.
"""

from __future__ import annotations

import itertools
import time

import pytest

from memory.services import keywords_process
from memory.services.facts import fact_store
from memory.services.forgetting import topic_forget
from memory.services.keywords_process import (
    keywords_process_start,
    keywords_process_state,
    keywords_request,
)
from memory.services.retrieval import auto_retrieve
from memory.services.retrieval.sources import keyword_search
from tests.memory.world import exchange_save, index_everything

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def alone(vector_store, local_embedder, settings, tmp_path, monkeypatch):
    """A pre-hook alone on the machine (its query embedded on every core), the process up."""
    from memory.stores import local_engine

    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path
    monkeypatch.setattr(local_engine, "query_gets_every_core", lambda: True)
    assert keywords_process_start()
    from memory.stores.embedders import get_embedder

    get_embedder().embed_query("bonjour")  # the model loaded before the first pre-hook's timer
    yield
    # (tests/conftest.py stops the process after every test)


def _bike_memory():
    fact = fact_store(key="bike", value="Le vélo est au garage")[0]
    exchange_save("whatsapp", "Mon vélo rouge a un pneu crevé", "Noté.")
    for i in range(3):
        exchange_save("mission_control", f"Point {i} sur le tableau de bord", "Noté.")
    index_everything()
    return fact


def _ranked_here(monkeypatch, found: list[int] | None = None) -> list[str]:
    """Spy on this process's FTS5 ranking: the names of the threads that ran one (and
    the facts it found, into ``found``)."""
    import threading

    from memory.stores import fts

    threads: list[str] = []
    for name in ("fts_rank_messages", "fts_search_facts"):
        real = getattr(fts, name)

        def spy(*args, _real=real, **kwargs):
            threads.append(threading.current_thread().name)
            hits = _real(*args, **kwargs)
            if found is not None:
                found.extend(getattr(hit, "fact_id", None) for hit in hits)
            return hits

        monkeypatch.setattr(fts, name, spy)
    return threads


def test_alone_the_keywords_are_ranked_in_their_process_as_here(alone, monkeypatch):
    fact = _bike_memory()
    here = _ranked_here(monkeypatch)
    answered = keywords_process_state()["answered"]

    result = auto_retrieve(message="Où est le vélo ?", channel="mission_control")

    assert not result.failed_sources
    assert keywords_process_state()["answered"] == answered + 1
    assert here == []  # nothing ranked in this process
    assert f"fact:{fact.id}" in [m["id"] for m in result.memories]
    # The process ranks exactly what this thread would.
    request = keywords_request("Où est le vélo ?", limit=16, timeout_s=5.0)
    request.send()
    monkeypatch.undo()
    expected = keyword_search("Où est le vélo ?", limit=16)
    assert request.result(deadline=time.monotonic() + 5) == expected
    assert f"fact:{fact.id}" in [item for item, _ in expected]


def test_inside_a_transaction_the_keywords_stay_on_the_callers_connection(alone, monkeypatch):
    from django.db import transaction

    _bike_memory()
    found: list[int] = []
    here = _ranked_here(monkeypatch, found)
    answered = keywords_process_state()["answered"]
    with transaction.atomic():
        scooter = fact_store(key="scooter", value="La trottinette est chez Paul")[0]
        result = auto_retrieve(message="Où est la trottinette ?", channel="mission_control")
        # Its row is not committed: only the caller's connection sees it.
        assert scooter.id in found and not result.failed_sources
    assert here and keywords_process_state()["answered"] == answered


def test_a_dead_process_leaves_the_keywords_to_the_caller_and_is_restarted(alone, monkeypatch):
    fact = _bike_memory()
    keywords_process._process.handle.kill()
    keywords_process._process.handle.join(5)
    here = _ranked_here(monkeypatch)

    result = auto_retrieve(message="Où est le vélo ?", channel="mission_control")

    assert not result.failed_sources
    assert here  # ranked in this process instead
    assert f"fact:{fact.id}" in [m["id"] for m in result.memories]
    # The next pre-hook finds it dead and has it started again in the background.
    auto_retrieve(message="Où est le garage ?", channel="mission_control")
    deadline = time.monotonic() + 60
    while not keywords_process_state()["alive"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert keywords_process_state()["alive"]
    here.clear()
    auto_retrieve(message="Où est le garage ?", channel="mission_control")
    assert here == []


def test_a_late_answer_holds_the_next_requests_back_then_is_dropped(alone):
    import os
    import signal

    _bike_memory()
    pid = keywords_process._process.handle.pid
    os.kill(pid, signal.SIGSTOP)  # a process slow to answer (a slow database)
    try:
        late = keywords_request("Où est le vélo ?", limit=16, timeout_s=0.05)
        late.send()
        with pytest.raises(TimeoutError):
            late.result(deadline=time.monotonic() + 0.05)
        # Until its answer is back, the next caller ranks its keywords itself instead of
        # queueing behind it (and timing out in turn).
        assert keywords_request("Le tableau de bord", limit=16, timeout_s=5.0) is None
    finally:
        os.kill(pid, signal.SIGCONT)
    assert keywords_process._process.pipe.poll(5)
    # Once it is back it is dropped, and the next request gets its own answer.
    after = keywords_request("Le tableau de bord", limit=16, timeout_s=5.0)
    assert after is not None
    after.send()
    assert after.result(deadline=time.monotonic() + 5) == keyword_search(
        "Le tableau de bord", limit=16
    )


def test_a_process_that_dies_owing_a_late_answer_is_used_again_once_restarted(alone):
    """The late answer died with the process: its successor owes nothing, and the next
    requests go to it."""
    import os
    import signal

    _bike_memory()
    dead = keywords_process._process.handle
    os.kill(dead.pid, signal.SIGSTOP)
    late = keywords_request("Où est le vélo ?", limit=16, timeout_s=0.05)
    late.send()
    with pytest.raises(TimeoutError):
        late.result(deadline=time.monotonic() + 0.05)
    os.kill(dead.pid, signal.SIGKILL)
    dead.join(5)
    assert keywords_request("Le tableau de bord", limit=16, timeout_s=5.0) is None  # found dead

    deadline = time.monotonic() + 60
    while not keywords_process_state()["alive"] and time.monotonic() < deadline:
        keywords_request("Le tableau de bord", limit=16, timeout_s=5.0)  # asks for the restart
        time.sleep(0.1)
    assert keywords_process_state()["alive"]
    after = keywords_request("Le tableau de bord", limit=16, timeout_s=5.0)
    assert after is not None
    after.send()
    assert after.result(deadline=time.monotonic() + 5) == keyword_search(
        "Le tableau de bord", limit=16
    )


def test_a_request_given_up_before_the_vector_is_never_sent(alone):
    request = keywords_request("Où est le vélo ?", limit=16, timeout_s=1.0)
    assert request.result(deadline=time.monotonic()) is None  # the caller ranks them itself
    request.send()  # the vector came late: too late to ask
    assert not request.sent
    again = keywords_request("Où est le vélo ?", limit=16, timeout_s=1.0)
    assert again is not None  # the process is free for the next caller
    assert again.result(deadline=time.monotonic()) is None


def test_a_memory_forgotten_is_not_injected_through_the_process(alone):
    fact = _bike_memory()
    assert f"fact:{fact.id}" in [
        m["id"]
        for m in auto_retrieve(message="Où est le vélo ?", channel="mission_control").memories
    ]
    topic_forget(topic="vélo", only=[f"fact:{fact.id}"])
    answered = keywords_process_state()["answered"]

    result = auto_retrieve(message="Où est le vélo garage ?", channel="mission_control")

    assert keywords_process_state()["answered"] == answered + 1
    assert f"fact:{fact.id}" not in [m["id"] for m in result.memories]
    assert "garage" not in result.prompt_block


def test_ctrl_c_leaves_the_process_to_end_with_serve(alone):
    """Ctrl-C reaches the whole process group: the process ignores it (no traceback of
    its own) and still answers until its pipe closes."""
    import os
    import signal

    _bike_memory()
    handle = keywords_process._process.handle
    os.kill(handle.pid, signal.SIGINT)
    time.sleep(0.3)
    assert handle.is_alive()
    request = keywords_request("Où est le vélo ?", limit=16, timeout_s=5.0)
    request.send()
    assert request.result(deadline=time.monotonic() + 5) == keyword_search(
        "Où est le vélo ?", limit=16
    )


def test_the_warm_up_starts_it_only_for_a_query_embedded_on_every_core(
    vector_store, local_embedder, monkeypatch
):
    """Voyage, or one core: the keywords stay in the caller's thread, no process kept."""
    from memory.services.retrieval import retrieval_warm
    from memory.stores import local_engine

    monkeypatch.setattr(local_engine, "query_gets_every_core", lambda: False)
    retrieval_warm()
    assert not keywords_process_state()["alive"]
    monkeypatch.setattr(local_engine, "query_gets_every_core", lambda: True)
    retrieval_warm()
    assert keywords_process_state()["alive"]


def test_a_process_that_cannot_start_leaves_the_warm_up_and_the_keywords_as_they_were(
    vector_store, local_embedder, settings, tmp_path, monkeypatch
):
    """Spawning can fail before the child exists (a main module without its
    ``if __name__ == "__main__"`` guard, no more processes allowed): the warm-up
    does not raise and the pre-hook ranks its keywords in its own thread."""
    import multiprocessing.context

    from memory.services.retrieval import retrieval_warm
    from memory.stores import local_engine

    def refused(process):
        raise RuntimeError("An attempt has been made to start a new process before ...")

    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path
    monkeypatch.setattr(multiprocessing.context.SpawnProcess, "_Popen", staticmethod(refused))
    monkeypatch.setattr(local_engine, "query_gets_every_core", lambda: True)
    fact = _bike_memory()

    retrieval_warm()

    assert not keywords_process_state()["alive"]
    here = _ranked_here(monkeypatch)
    result = auto_retrieve(message="Où est le vélo ?", channel="mission_control")
    assert here and not result.failed_sources
    assert f"fact:{fact.id}" in [m["id"] for m in result.memories]


def test_while_the_process_ranks_the_caller_hydrates_what_it_knows(alone, monkeypatch):
    """T1's list, the last turns' finds and the semantic hits are hydrated before the
    caller waits for the keywords; fusion hydrates the keyword hits it keeps."""
    from memory.services.keywords_process import KeywordsRequest
    from memory.services.retrieval import sql_stage

    fact = _bike_memory()
    order: list[str] = []
    real_prefetch, real_result = sql_stage.prefetch, KeywordsRequest.result

    def prefetch(ranked, **kwargs):
        order.append("prefetch")
        return real_prefetch(ranked, **kwargs)

    def result(self, deadline):
        order.append("keywords")
        return real_result(self, deadline)

    monkeypatch.setattr(sql_stage, "prefetch", prefetch)
    monkeypatch.setattr(KeywordsRequest, "result", result)
    answered = keywords_process_state()["answered"]

    found = auto_retrieve(message="Où est le vélo ?", channel="mission_control")

    assert order == ["prefetch", "keywords"]
    assert keywords_process_state()["answered"] == answered + 1
    assert f"fact:{fact.id}" in [m["id"] for m in found.memories]
    assert not found.failed_sources


def test_a_process_that_keeps_dying_is_started_again_less_and_less_often(monkeypatch):
    """Each start costs a new interpreter loading Django (a second or two of CPU): one
    that never answers is tried again 10 s after the last attempt, then 20, 40… up to
    every 10 minutes, not every 10 s for ever; an answer starts the count again."""
    import threading

    from memory.services.keywords_process import KeywordsRequest

    clock = [5_000.0]
    tried: list[float] = []

    def start() -> bool:
        tried.append(clock[0])
        return False

    monkeypatch.setattr(keywords_process, "_clock", lambda: clock[0])
    monkeypatch.setattr(keywords_process, "_start", start)
    keywords_process_start()  # wanted from now on, and it did not start

    for _ in range(2500):  # a pre-hook every second
        clock[0] += 1
        assert keywords_request("vélo", limit=5, timeout_s=1.0) is None
        for thread in threading.enumerate():
            if thread.name == "keywords-process-restart":
                thread.join()

    gaps = [round(b - a) for a, b in itertools.pairwise(tried)]
    assert gaps[:7] == [10, 20, 40, 80, 160, 320, 600]
    assert set(gaps[7:]) == {600}

    class Answering:  # the process's end of the pipe, answering request 7
        def poll(self, timeout):
            return True

        def recv(self):
            return (7, True, [], 1.0)

    busy = threading.Lock()
    busy.acquire()
    request = KeywordsRequest(
        text="vélo", limit=5, timeout_s=1.0, database="x", request_id=7,
        pipe=Answering(), busy=busy, sent=True,
    )  # fmt: skip
    assert request.result(deadline=time.monotonic() + 1) == []
    assert keywords_process._process.restarts == 0
