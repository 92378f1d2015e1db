"""The vector store: Qdrant Edge for real in a temp folder, qdrant-client's local
mode behind ServerVectorStore, unreachable servers, the one-owner lock, and the
process-wide store."""

from __future__ import annotations

import json
import math
import os
import random
import socket
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from memory.exceptions import DimensionMismatch, StoreUnavailable
from memory.stores.vectors import (
    CONVERSATIONS,
    KNOWLEDGE,
    POINT_ID_NAMESPACE,
    VectorPoint,
    VectorStore,
    get_vector_store,
    point_id,
    vector_store_reset,
)
from memory.stores.vectors_edge import EdgeVectorStore
from memory.stores.vectors_server import ServerVectorStore

ROOT = Path(__file__).resolve().parents[2]
DIM = 8


def unit(*values: float) -> list[float]:
    vector = list(values) + [0.0] * (DIM - len(values))
    length = math.sqrt(sum(v * v for v in vector))
    return [v / length for v in vector]


def random_unit(rng: random.Random, dimension: int = DIM) -> list[float]:
    vector = [rng.gauss(0, 1) for _ in range(dimension)]
    length = math.sqrt(sum(v * v for v in vector))
    return [v / length for v in vector]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def edge_store(tmp_path):
    store = EdgeVectorStore(tmp_path / "qdrant")
    yield store
    store.close()


@pytest.fixture
def server_local_store():
    from qdrant_client import QdrantClient

    store = ServerVectorStore(client=QdrantClient(location=":memory:"))
    yield store
    store.close()


@pytest.fixture(params=["edge", "server-local"])
def store(request, tmp_path) -> VectorStore:
    """Each behaviour test runs on both implementations."""
    if request.param == "edge":
        return request.getfixturevalue("edge_store")
    return request.getfixturevalue("server_local_store")


def fact_point(row_id: int, vector: list[float], **payload) -> VectorPoint:
    return VectorPoint(point_id("fact", row_id), vector, {"type": "fact", **payload})


# --- Point ids ------------------------------------------------------------------------


def test_point_ids_are_deterministic_uuids_per_kind_and_row():
    assert point_id("fact", 1) == point_id("fact", 1)
    assert point_id("fact", 1) != point_id("message", 1)
    assert point_id("fact", 1) != point_id("fact", 2)
    parsed = uuid.UUID(point_id("message", 42))
    assert parsed.version == 5
    assert parsed == uuid.uuid5(POINT_ID_NAMESPACE, "message:42")


# --- Behaviour common to both stores ------------------------------------------------------


def test_a_collection_is_created_with_its_dimension(store):
    assert store.collection_dimension(KNOWLEDGE) is None

    store.ensure_collection(KNOWLEDGE, DIM)
    store.ensure_collection(KNOWLEDGE, DIM)  # idempotent

    assert store.collection_dimension(KNOWLEDGE) == DIM
    assert store.count(KNOWLEDGE) == 0


def test_upserting_the_same_id_twice_keeps_one_point_with_the_new_payload(store):
    store.ensure_collection(KNOWLEDGE, DIM)

    store.upsert(KNOWLEDGE, [fact_point(1, unit(1, 0), content="ancienne valeur")])
    store.upsert(KNOWLEDGE, [fact_point(1, unit(1, 0.1), content="nouvelle valeur")])

    assert store.count(KNOWLEDGE) == 1
    [hit] = store.retrieve(KNOWLEDGE, [point_id("fact", 1)])
    assert hit.payload["content"] == "nouvelle valeur"
    assert hit.score == 1.0


def test_search_ranks_by_cosine_and_returns_payloads(store):
    store.ensure_collection(KNOWLEDGE, DIM)
    store.upsert(
        KNOWLEDGE,
        [
            fact_point(1, unit(1, 0), content="proche"),
            fact_point(2, unit(1, 1), content="moyen"),
            fact_point(3, unit(0, 1), content="loin"),
        ],
    )

    hits = store.search(KNOWLEDGE, unit(1, 0), limit=3)

    assert [h.payload["content"] for h in hits] == ["proche", "moyen", "loin"]
    assert hits[0].id == point_id("fact", 1)
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert hits[1].score == pytest.approx(math.sqrt(0.5), abs=1e-5)


def test_search_returns_only_the_payload_fields_asked_and_the_stored_vectors(store):
    """Only the payload fields asked, and the stored vectors on request, from a search
    or a read by id: plain floats, each point its own list."""
    store.ensure_collection(KNOWLEDGE, DIM)
    stored = {1: unit(1, 0), 2: unit(1, 1)}
    store.upsert(
        KNOWLEDGE, [fact_point(i, v, key=i, content=f"fait {i}") for i, v in stored.items()]
    )

    hits = store.search(
        KNOWLEDGE, unit(1, 0), limit=2, payload_fields=["key", "type"], with_vectors=True
    )

    assert [set(h.payload) for h in hits] == [{"key", "type"}] * 2
    assert [h.payload["key"] for h in hits] == [1, 2]
    for hit in hits:
        assert hit.vector == pytest.approx(stored[hit.payload["key"]], abs=1e-6)
        # Plain floats, and each hit its own list (callers may keep or change it).
        assert type(hit.vector) is list and {type(x) for x in hit.vector} == {float}
    assert hits[0].vector is not hits[1].vector

    read = store.retrieve(KNOWLEDGE, [h.id for h in hits], with_vectors=True)
    for point in read:
        assert point.vector == pytest.approx(stored[point.payload["key"]], abs=1e-6)
        assert type(point.vector) is list and {type(x) for x in point.vector} == {float}
    assert read[0].vector is not read[1].vector
    # The vectors alone: no payload copied out of the engine.
    bare = store.retrieve(KNOWLEDGE, [h.id for h in hits], with_vectors=True, with_payload=False)
    assert {p.id for p in bare} == {h.id for h in hits}
    assert all(p.payload == {} for p in bare)
    by_id = {h.id: h.vector for h in hits}
    assert all(p.vector == pytest.approx(by_id[p.id], abs=1e-6) for p in bare)
    # Without the options: the whole payload, no vectors (as before).
    plain = store.search(KNOWLEDGE, unit(1, 0), limit=1)
    assert plain[0].payload["content"] == "fait 1" and plain[0].vector is None


def test_search_honours_limit_and_score_threshold(store):
    store.ensure_collection(KNOWLEDGE, DIM)
    store.upsert(KNOWLEDGE, [fact_point(i, unit(1, i)) for i in range(5)])

    assert len(store.search(KNOWLEDGE, unit(1, 0), limit=2)) == 2
    hits = store.search(KNOWLEDGE, unit(1, 0), limit=10, score_threshold=0.6)
    assert {h.id for h in hits} == {point_id("fact", 0), point_id("fact", 1)}  # 1.0, 0.707


def test_search_filters_by_channel(store):
    store.ensure_collection(CONVERSATIONS, DIM)
    store.upsert(
        CONVERSATIONS,
        [
            VectorPoint(point_id("exchange", 1), unit(1, 0), {"channel": "whatsapp"}),
            VectorPoint(point_id("exchange", 2), unit(1, 0.1), {"channel": "dashboard"}),
            VectorPoint(point_id("exchange", 3), unit(1, 0.2), {"channel": "telegram"}),
        ],
    )

    only = store.search(CONVERSATIONS, unit(1, 0), limit=10, filters={"channel": "dashboard"})
    several = store.search(
        CONVERSATIONS, unit(1, 0), limit=10, filters={"channel": ["whatsapp", "telegram"]}
    )

    assert [h.payload["channel"] for h in only] == ["dashboard"]
    assert [h.payload["channel"] for h in several] == ["whatsapp", "telegram"]
    # The same filters again (Qdrant Edge builds each distinct one once), and a value
    # that differs only by its type: each search still gets its own filter.
    again = store.search(CONVERSATIONS, unit(1, 0), limit=10, filters={"channel": "dashboard"})
    assert [h.payload["channel"] for h in again] == ["dashboard"]
    one_of = store.search(CONVERSATIONS, unit(1, 0), limit=10, filters={"channel": ["dashboard"]})
    assert [h.payload["channel"] for h in one_of] == ["dashboard"]
    other = store.search(CONVERSATIONS, unit(1, 0), limit=10, filters={"channel": "telegram"})
    assert [h.payload["channel"] for h in other] == ["telegram"]


def test_an_edge_filter_is_built_once_per_distinct_filter():
    from memory.stores.edge_engine import edge_filter
    from memory.stores.vectors import OWNER_KNOWLEDGE

    assert edge_filter(dict(OWNER_KNOWLEDGE)) is edge_filter(dict(OWNER_KNOWLEDGE))
    assert edge_filter({"channel": "a"}) is not edge_filter({"channel": ["a"]})
    assert edge_filter({}) is None and edge_filter(None) is None


def test_delete_removes_points_and_ignores_unknown_ids(store):
    store.ensure_collection(KNOWLEDGE, DIM)
    store.upsert(KNOWLEDGE, [fact_point(1, unit(1)), fact_point(2, unit(0, 1))])

    store.delete(KNOWLEDGE, [point_id("fact", 1), point_id("fact", 99)])

    assert store.count(KNOWLEDGE) == 1
    assert [h.id for h in store.search(KNOWLEDGE, unit(1), limit=5)] == [point_id("fact", 2)]
    assert store.retrieve(KNOWLEDGE, [point_id("fact", 1)]) == []


def test_iter_ids_scrolls_every_point_across_pages(store):
    rng = random.Random(7)
    store.ensure_collection(KNOWLEDGE, DIM)
    store.upsert(KNOWLEDGE, [fact_point(i, random_unit(rng)) for i in range(600)])

    ids = list(store.iter_ids(KNOWLEDGE))

    assert len(ids) == 600
    assert set(ids) == {point_id("fact", i) for i in range(600)}


def test_a_missing_collection_reads_as_empty(store):
    assert store.search(KNOWLEDGE, unit(1), limit=5) == []
    assert store.count(KNOWLEDGE) == 0
    assert list(store.iter_ids(KNOWLEDGE)) == []
    assert store.retrieve(KNOWLEDGE, [point_id("fact", 1)]) == []
    store.delete(KNOWLEDGE, [point_id("fact", 1)])


def test_upsert_creates_a_missing_collection_with_the_vector_dimension(store):
    store.upsert(KNOWLEDGE, [fact_point(1, unit(1))])

    assert store.collection_dimension(KNOWLEDGE) == DIM
    assert store.count(KNOWLEDGE) == 1


def test_a_collection_of_another_dimension_asks_for_reindex_recreate(store):
    store.ensure_collection(KNOWLEDGE, DIM)

    with pytest.raises(DimensionMismatch) as caught:
        store.ensure_collection(KNOWLEDGE, 384)

    message = str(caught.value)
    assert "python manage.py reindex --recreate" in message
    assert "8" in message and "384" in message and KNOWLEDGE in message


def test_vectors_of_the_wrong_dimension_are_refused(store):
    store.ensure_collection(KNOWLEDGE, DIM)

    with pytest.raises(DimensionMismatch, match="reindex --recreate"):
        store.upsert(KNOWLEDGE, [fact_point(1, [1.0] * 384)])
    with pytest.raises(DimensionMismatch):
        store.search(KNOWLEDGE, [1.0] * 384, limit=3)
    assert store.count(KNOWLEDGE) == 0


def test_a_non_finite_vector_is_never_stored(store):
    store.ensure_collection(KNOWLEDGE, DIM)
    vector = unit(1)
    vector[3] = math.nan

    with pytest.raises(ValueError, match="non-finite"):
        store.upsert(KNOWLEDGE, [fact_point(1, vector)])
    assert store.count(KNOWLEDGE) == 0


def test_drop_collection_removes_it(store):
    store.ensure_collection(KNOWLEDGE, DIM)
    store.upsert(KNOWLEDGE, [fact_point(1, unit(1))])

    store.drop_collection(KNOWLEDGE)

    assert store.collection_dimension(KNOWLEDGE) is None
    assert store.count(KNOWLEDGE) == 0
    store.ensure_collection(KNOWLEDGE, 384)  # recreated with another dimension
    assert store.collection_dimension(KNOWLEDGE) == 384


def test_collections_are_independent(store):
    store.ensure_collection(KNOWLEDGE, DIM)
    store.ensure_collection(CONVERSATIONS, DIM)
    store.upsert(KNOWLEDGE, [fact_point(1, unit(1))])

    assert store.count(KNOWLEDGE) == 1
    assert store.count(CONVERSATIONS) == 0


def test_a_closed_store_refuses_calls(store):
    store.ensure_collection(KNOWLEDGE, DIM)
    store.close()
    store.close()  # idempotent

    with pytest.raises(StoreUnavailable):
        store.count(KNOWLEDGE)


# --- Qdrant Edge specifics --------------------------------------------------------------------


def test_edge_reopened_from_its_folder_keeps_points_payloads_and_dimension(tmp_path):
    path = tmp_path / "qdrant"
    store = EdgeVectorStore(path)
    store.ensure_collection(KNOWLEDGE, DIM)
    store.upsert(KNOWLEDGE, [fact_point(i, unit(1, i), content=f"fait {i}") for i in range(20)])
    store.delete(KNOWLEDGE, [point_id("fact", 0)])
    store.close()

    reopened = EdgeVectorStore(path)
    try:
        assert reopened.collection_dimension(KNOWLEDGE) == DIM
        assert reopened.count(KNOWLEDGE) == 19
        [hit] = reopened.search(KNOWLEDGE, unit(1, 1), limit=1)
        assert hit.payload["content"] == "fait 1"
        with pytest.raises(DimensionMismatch):
            reopened.ensure_collection(KNOWLEDGE, 384)
    finally:
        reopened.close()


def test_edge_shards_search_on_one_pool_thread_whether_created_or_reopened(tmp_path):
    """The binding holds the GIL while a search waits for its pool's threads
    (edge_engine.EDGE_SEARCH_THREADS): every shard is opened with the setting, new
    ones and those created before it."""
    from memory.stores.edge_engine import EDGE_SEARCH_THREADS

    path = tmp_path / "qdrant"
    store = EdgeVectorStore(path)
    store.upsert(KNOWLEDGE, [fact_point(i, unit(1, i), content=f"fait {i}") for i in range(5)])
    store.close()
    config_file = path / KNOWLEDGE / "edge_config.json"
    config = json.loads(config_file.read_text())
    assert config["max_search_threads"] == EDGE_SEARCH_THREADS
    del config["max_search_threads"]  # as a shard created by an earlier version
    config_file.write_text(json.dumps(config))

    reopened = EdgeVectorStore(path)
    try:
        [hit] = reopened.search(KNOWLEDGE, unit(1, 2), limit=1)
        assert hit.payload["content"] == "fait 2"
        assert json.loads(config_file.read_text())["max_search_threads"] == EDGE_SEARCH_THREADS
    finally:
        reopened.close()


def test_edge_creates_keyword_and_datetime_payload_indexes(edge_store):
    import qdrant_edge as qe

    edge_store.ensure_collection(KNOWLEDGE, DIM)

    schema = edge_store._shards[KNOWLEDGE].info().payload_schema
    assert {name: info.data_type for name, info in schema.items()} == {
        "channel": qe.PayloadSchemaType.Keyword,
        "type": qe.PayloadSchemaType.Keyword,
        "key": qe.PayloadSchemaType.Keyword,
        "memory_type": qe.PayloadSchemaType.Keyword,
        "timestamp": qe.PayloadSchemaType.Datetime,
    }


def test_edge_recreates_a_collection_left_half_created_by_a_crash(tmp_path):
    (tmp_path / "qdrant" / KNOWLEDGE / "segments").mkdir(parents=True)
    store = EdgeVectorStore(tmp_path / "qdrant")
    try:
        assert store.collection_dimension(KNOWLEDGE) is None
        store.ensure_collection(KNOWLEDGE, DIM)
        store.upsert(KNOWLEDGE, [fact_point(1, unit(1))])
        assert store.count(KNOWLEDGE) == 1
    finally:
        store.close()


def test_edge_is_safe_under_concurrent_writes_and_searches(edge_store):
    edge_store.ensure_collection(KNOWLEDGE, DIM)
    errors: list[BaseException] = []

    def writer(offset: int) -> None:
        rng = random.Random(offset)
        try:
            for i in range(50):
                edge_store.upsert(KNOWLEDGE, [fact_point(offset + i, random_unit(rng))])
                edge_store.search(KNOWLEDGE, random_unit(rng), limit=3)
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n * 1000,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert edge_store.count(KNOWLEDGE) == 300


OPEN_SCRIPT = """
import sys
from memory.exceptions import StoreUnavailable
from memory.stores.vectors_edge import EdgeVectorStore
try:
    store = EdgeVectorStore(sys.argv[1])
except StoreUnavailable as exc:
    print("StoreUnavailable:", exc)
else:
    print("opened", store.count("knowledge"))
    store.close()
"""


def open_in_another_process(path: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-c", OPEN_SCRIPT, str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.slow
def test_a_second_process_cannot_open_an_edge_folder_in_use(tmp_path):
    path = tmp_path / "qdrant"
    store = EdgeVectorStore(path)
    store.upsert(KNOWLEDGE, [fact_point(1, unit(1))])
    try:
        output = open_in_another_process(path)
        assert output.startswith("StoreUnavailable:")
        assert str(path) in output and "QDRANT_URL" in output
    finally:
        store.close()

    assert open_in_another_process(path) == "opened 1"


CRASH_SCRIPT = """
import os, signal, sys
from memory.stores.vectors import VectorPoint, point_id
from memory.stores.vectors_edge import EdgeVectorStore
store = EdgeVectorStore(sys.argv[1])
store.upsert("knowledge", [
    VectorPoint(point_id("fact", i), [1.0, float(i)] + [0.0] * 6, {"n": i}) for i in range(50)
])
store.delete("knowledge", [point_id("fact", 0)])
os.kill(os.getpid(), signal.SIGKILL)  # no close(), no flush()
"""


@pytest.mark.slow
def test_edge_writes_survive_the_owner_being_killed_and_the_folder_is_freed(tmp_path):
    path = tmp_path / "qdrant"
    result = subprocess.run(
        [sys.executable, "-c", CRASH_SCRIPT, str(path)], cwd=ROOT, capture_output=True, timeout=60
    )
    assert result.returncode == -9, result.stderr

    store = EdgeVectorStore(path)  # the kernel released the dead owner's lock
    try:
        assert store.count(KNOWLEDGE) == 49
        assert store.retrieve(KNOWLEDGE, [point_id("fact", 0)]) == []
        [hit] = store.retrieve(KNOWLEDGE, [point_id("fact", 7)])
        assert hit.payload == {"n": 7}
    finally:
        store.close()


def test_a_second_store_on_the_same_folder_in_one_process_is_refused_too(edge_store):
    with pytest.raises(StoreUnavailable, match="déjà ouvert"):
        EdgeVectorStore(edge_store.path)


# --- Server store (qdrant-client) -----------------------------------------------------------


def test_the_server_store_copes_with_a_collection_dropped_by_another_process():
    """`reindex --recreate` may run elsewhere: a cached collection that vanished
    reads as empty and the next upsert recreates it."""
    from qdrant_client import QdrantClient

    client = QdrantClient(location=":memory:")
    worker, operator = ServerVectorStore(client=client), ServerVectorStore(client=client)
    worker.upsert(KNOWLEDGE, [fact_point(1, unit(1))])
    assert worker.count(KNOWLEDGE) == 1

    operator.drop_collection(KNOWLEDGE)

    assert worker.search(KNOWLEDGE, unit(1), limit=3) == []
    assert worker.count(KNOWLEDGE) == 0
    worker.upsert(KNOWLEDGE, [fact_point(2, unit(1))])
    assert operator.count(KNOWLEDGE) == 1


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.ensure_collection(KNOWLEDGE, DIM),
        lambda s: s.search(KNOWLEDGE, unit(1), limit=3),
        lambda s: s.upsert(KNOWLEDGE, [fact_point(1, unit(1))]),
        lambda s: s.count(KNOWLEDGE),
        lambda s: s.drop_collection(KNOWLEDGE),
    ],
    ids=["ensure_collection", "search", "upsert", "count", "drop_collection"],
)
def test_an_unreachable_server_raises_store_unavailable(call):
    url = f"http://127.0.0.1:{closed_port()}"
    store = ServerVectorStore(url, "", 2.0)  # constructing it contacts nothing

    with pytest.raises(StoreUnavailable, match="injoignable") as caught:
        call(store)
    assert url in str(caught.value)


@pytest.mark.slow
def test_a_server_that_never_answers_times_out_as_store_unavailable():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # accepts connections (kernel backlog), never answers
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        store = ServerVectorStore(url, "", 1.0)
        started = time.monotonic()
        with pytest.raises(StoreUnavailable):
            store.count(KNOWLEDGE)
        assert time.monotonic() - started < 10
    finally:
        listener.close()


@pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")
def test_the_server_store_sends_the_api_key_to_the_url():
    """Wiring on the wire: qdrant-client's REST call carries QDRANT_API_KEY."""
    seen: list[tuple[str, str | None]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            seen.append((self.path, self.headers.get("api-key")))
            body = json.dumps({"result": {"exists": False}, "status": "ok", "time": 0.0})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        store = ServerVectorStore(f"http://127.0.0.1:{server.server_address[1]}", "s3cret", 2.0)
        assert store.collection_dimension(KNOWLEDGE) is None
        assert store.count(KNOWLEDGE) == 0
    finally:
        server.shutdown()
        server.server_close()

    assert seen[0] == (f"/collections/{KNOWLEDGE}/exists", "s3cret")


# --- The process-wide store ------------------------------------------------------------------


@pytest.fixture
def fresh_store():
    vector_store_reset()
    yield
    vector_store_reset()


def test_get_vector_store_is_edge_in_qdrant_path_without_a_url(settings, tmp_path, fresh_store):
    settings.QDRANT_URL = ""
    settings.QDRANT_PATH = tmp_path / "qdrant"

    store = get_vector_store()

    assert isinstance(store, EdgeVectorStore)
    assert store.path == tmp_path / "qdrant"
    assert get_vector_store() is store


def test_vector_store_reset_closes_the_store_and_frees_the_folder(settings, tmp_path, fresh_store):
    settings.QDRANT_URL = ""
    settings.QDRANT_PATH = tmp_path / "qdrant"
    first = get_vector_store()
    first.upsert(KNOWLEDGE, [fact_point(1, unit(1))])

    vector_store_reset()
    second = get_vector_store()

    assert second is not first
    assert second.count(KNOWLEDGE) == 1


def test_get_vector_store_is_the_server_when_qdrant_url_is_set(settings, fresh_store):
    settings.QDRANT_URL = f"https://127.0.0.1:{closed_port()}"
    settings.QDRANT_API_KEY = "secret"
    settings.QDRANT_TIMEOUT_S = 2.0

    store = get_vector_store()

    assert isinstance(store, ServerVectorStore)
    assert store.url == settings.QDRANT_URL


def test_get_vector_store_creates_one_store_for_concurrent_threads(settings, tmp_path, fresh_store):
    settings.QDRANT_URL = ""
    settings.QDRANT_PATH = tmp_path / "qdrant"
    seen: list = []
    barrier = threading.Barrier(6)

    def grab():
        barrier.wait()
        seen.append(get_vector_store())

    threads = [threading.Thread(target=grab) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len({id(s) for s in seen}) == 1


def test_the_lock_file_names_its_owner(edge_store):
    assert (edge_store.path / ".makilab.lock").read_text().strip() == str(os.getpid())
