"""Benchmarks printed by `manage.py benchmark`: figures, not assertions."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.utils import timezone

from memory.models import Message, MessageRole


@dataclass
class Timing:
    name: str
    samples_ms: list[float]

    def percentile(self, q: float) -> float:
        ordered = sorted(self.samples_ms)
        if not ordered:
            return 0.0
        index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
        return ordered[index]

    def line(self) -> str:
        return (
            f"{self.name:<10} p50 {self.percentile(50):7.2f} ms  p95 {self.percentile(95):7.2f} ms"
            f"  p99 {self.percentile(99):7.2f} ms  mean {statistics.fmean(self.samples_ms or [0]):7.2f} ms"
            f"  (n={len(self.samples_ms)})"
        )


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


TOPICS = [
    "le potager et les tomates",
    "la réunion budget du lundi",
    "l'épaule de Mickael",
    "le vélo au garage",
    "les vacances à Biarritz",
    "le code du portail",
    "la piscine du mardi",
    "le livre de science-fiction",
    "le rendez-vous chez le dentiste",
    "le déménagement de David",
    "la recette du gâteau",
    "le train pour Lyon",
]


def exchanges_seed(
    n: int, *, channels: tuple[str, ...] = ("whatsapp", "mission_control")
) -> list[int]:
    """n exchanges (user + assistant rows) written in bulk, without enqueueing; returns root ids."""
    now = timezone.now()
    users = [
        Message(
            channel=channels[i % len(channels)],
            role=MessageRole.USER,
            content=f"Message {i} : on reparle de {TOPICS[i % len(TOPICS)]} ({i * 7919 % 1000})",
            created_at=now,
        )
        for i in range(n)
    ]
    Message.objects.bulk_create(users, batch_size=500)
    roots = list(
        Message.objects.filter(role=MessageRole.USER)
        .order_by("-id")
        .values_list("id", "channel")[:n]
    )
    replies = [
        Message(
            channel=channel,
            role=MessageRole.ASSISTANT,
            content=f"D'accord, noté pour le message {rid}.",
            reply_to_id=rid,
            created_at=now,
        )
        for rid, channel in roots
    ]
    Message.objects.bulk_create(replies, batch_size=500)
    return sorted(rid for rid, _ in roots)


def indexing_benchmark(
    *, n: int, batch_size: int, per_row: int, out: Callable[[str], None]
) -> None:
    from memory.services.indexing import KIND_MESSAGE, index_row, index_rows
    from memory.stores.embedders import get_embedder

    embedder = get_embedder()
    load_ms = timed(lambda: embedder.embed_documents(["préchauffage du modèle"]))
    ids = exchanges_seed(n)
    out(
        f"embedder {embedder.name} ({embedder.dimension} dims), first call {load_ms:.0f} ms; {n} exchanges"
    )

    batches = [ids[i : i + batch_size] for i in range(0, len(ids), batch_size)]
    start = time.perf_counter()
    samples = [timed(lambda b=batch: index_rows(KIND_MESSAGE, b)) for batch in batches]
    elapsed = time.perf_counter() - start
    out(
        f"batched   {n / elapsed:8.1f} docs/s end to end (embed + upsert + mark), batch of {batch_size}"
    )
    out(Timing("batch", samples).line())

    sample_ids = ids[:per_row]
    start = time.perf_counter()
    samples = [timed(lambda rid=rid: index_row(KIND_MESSAGE, rid)) for rid in sample_ids]
    elapsed = time.perf_counter() - start
    out(f"per-row   {len(sample_ids) / elapsed:8.1f} docs/s (the task path: one row per task)")
    out(Timing("row", samples).line())


SUBJECTS = ["Mickael", "David", "Julie", "le petit", "maman", "Paul", "l'équipe", "le voisin"]
ACTIONS = [
    "a réservé",
    "doit rappeler",
    "a oublié",
    "prépare",
    "a acheté",
    "veut changer",
    "a réparé",
    "attend",
]
OBJECTS = [
    "le train pour Lyon",
    "la voiture",
    "le rendez-vous chez le kiné",
    "le budget 2026",
    "le vélo",
    "les billets pour Biarritz",
    "la facture d'électricité",
    "le dossier Makilab",
    "les tomates du potager",
    "la réunion de lundi",
    "le cadeau d'anniversaire",
    "la clé du garage",
]
WHEN = [
    "demain",
    "vendredi",
    "la semaine prochaine",
    "ce soir",
    "en avril",
    "avant l'été",
    "lundi matin",
]
QUESTIONS = [
    "Qu'est-ce qu'on avait dit sur {o} ?",
    "Tu te souviens de {o} ?",
    "{s} a fait quoi pour {o} ?",
    "Où en est {o} ?",
    "C'était quand déjà, {o} ?",
    "Rappelle-moi ce qui concerne {o}",
]


def _sentence(i: int) -> str:
    return (
        f"{SUBJECTS[i % len(SUBJECTS)]} {ACTIONS[(i // 8) % len(ACTIONS)]} "
        f"{OBJECTS[(i // 64) % len(OBJECTS)]} {WHEN[(i // 7) % len(WHEN)]} (réf. {i})"
    )


def retrieval_seed(memories: int, *, templates: int = 300) -> None:
    """A store of ``memories`` rows (70% exchanges, 28% facts, 2% summaries) with their points.

    Embedding 100,000 texts would take an hour on this machine, and a search
    costs the same whatever the vectors say; so ``templates`` texts are really
    embedded and every row gets one of their vectors plus a little noise.
    Rows, payloads and point ids are the production ones.
    """
    import numpy as np

    from memory.models import Fact, IndexState, Summary
    from memory.services.index_documents import KIND_FACT, KIND_MESSAGE, KIND_SUMMARY, desired
    from memory.stores.embedders import get_embedder
    from memory.stores.vectors import VectorPoint, get_vector_store

    embedder = get_embedder()
    base = np.asarray(embedder.embed_documents([_sentence(i * 37) for i in range(templates)]))
    rng = np.random.default_rng(7)
    store = get_vector_store()
    now = timezone.now()
    n_exchanges = int(memories * 0.70)
    n_summaries = max(1, memories // 50)
    n_facts = memories - n_exchanges - n_summaries
    channels = ("whatsapp", "mission_control", "email")

    users = Message.objects.bulk_create(
        [
            Message(
                channel=channels[i % 3],
                role=MessageRole.USER,
                content=_sentence(i),
                created_at=now - timedelta(minutes=10 * (n_exchanges - i)),
                index_state=IndexState.INDEXED,
            )
            for i in range(n_exchanges)
        ],
        batch_size=1000,
    )
    roots = list(
        Message.objects.filter(role=MessageRole.USER)
        .order_by("id")
        .values_list("id", "channel", "created_at")
    )
    Message.objects.bulk_create(
        [
            Message(
                channel=ch,
                role=MessageRole.ASSISTANT,
                content=f"C'est noté ({rid}).",
                reply_to_id=rid,
                created_at=at,
                index_state=IndexState.INDEXED,
            )
            for rid, ch, at in roots
        ],
        batch_size=1000,
    )
    Fact.objects.bulk_create(
        [
            Fact(
                key=f"fact_{i}",
                value=_sentence(i + 500_000),
                memory_type="fact",
                importance=0.6,
                channel=channels[i % 3],
                created_at=now - timedelta(days=30),
                index_state=IndexState.INDEXED,
            )
            for i in range(n_facts)
        ],
        batch_size=1000,
    )
    Summary.objects.bulk_create(
        [
            Summary(
                channel=channels[i % 3],
                content=f"Résumé {i} : " + _sentence(i + 900_000),
                created_at=now - timedelta(days=1),
                index_state=IndexState.INDEXED,
            )
            for i in range(n_summaries)
        ],
        batch_size=1000,
    )
    del users
    for kind, model in ((KIND_MESSAGE, None), (KIND_FACT, Fact), (KIND_SUMMARY, Summary)):
        ids = (
            [r[0] for r in roots]
            if model is None
            else list(model.objects.values_list("id", flat=True))
        )
        for start in range(0, len(ids), 2000):
            documents, _, _ = desired(kind, ids[start : start + 2000])
            noise = rng.normal(0, 0.02, size=(len(documents), base.shape[1]))
            vectors = base[rng.integers(0, templates, size=len(documents))] + noise
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            by_collection: dict[str, list] = {}
            for document, vector in zip(documents, vectors, strict=True):
                by_collection.setdefault(document.collection, []).append(
                    VectorPoint(
                        id=document.point_id, vector=vector.tolist(), payload=document.payload
                    )
                )
            for collection, points in by_collection.items():
                store.ensure_collection(collection, embedder.dimension)
                store.upsert(collection, points)


def live_seed(count: int, *, templates: int = 100) -> None:
    """``count`` messages of an observed room with their live points (template vectors + noise,
    as retrieval_seed), so the live source searches a full collection."""
    import numpy as np

    from memory.models import ChannelSettings, IndexState
    from memory.services.index_documents import KIND_MESSAGE, desired
    from memory.stores.embedders import get_embedder
    from memory.stores.vectors import VectorPoint, get_vector_store

    if count <= 0:
        return
    embedder = get_embedder()
    base = np.asarray(embedder.embed_documents([_sentence(i * 41) for i in range(templates)]))
    rng = np.random.default_rng(11)
    store = get_vector_store()
    now = timezone.now()
    ChannelSettings.objects.update_or_create(channel="lobby", defaults={"observed": True})
    Message.objects.bulk_create(
        [
            Message(
                channel="lobby",
                role=MessageRole.USER,
                author=("david", "sophie", "paul")[i % 3],
                content=_sentence(i + 700_000),
                created_at=now - timedelta(minutes=count - i),
                observed=True,
                index_state=IndexState.INDEXED,
            )
            for i in range(count)
        ],
        batch_size=1000,
    )
    ids = list(Message.objects.filter(observed=True).order_by("id").values_list("id", flat=True))
    for start in range(0, len(ids), 2000):
        documents, _, _ = desired(KIND_MESSAGE, ids[start : start + 2000])
        noise = rng.normal(0, 0.02, size=(len(documents), base.shape[1]))
        vectors = base[rng.integers(0, templates, size=len(documents))] + noise
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        points = [
            VectorPoint(id=d.point_id, vector=v.tolist(), payload=d.payload)
            for d, v in zip(documents, vectors, strict=True)
        ]
        if points:
            store.ensure_collection(documents[0].collection, embedder.dimension)
            store.upsert(documents[0].collection, points)


def _question(i: int) -> str:
    """The i-th benchmark question; a distinct text each time, so the query-embedding cache never helps."""
    question = QUESTIONS[i % len(QUESTIONS)].format(
        o=OBJECTS[(i * 5) % len(OBJECTS)], s=SUBJECTS[i % len(SUBJECTS)]
    )
    return f"{question} ({i})"


def search_index_build(*, out: Callable[[str], None], sample: int = 100, limit: int = 16) -> None:
    """Build the search index as `serve` does at start, and print its recall against exact search.

    Before the index is built every search is exact: the top ``limit`` of
    ``sample`` questions is recorded then, and compared after.
    """
    from memory.stores.embedders import get_embedder
    from memory.stores.vectors import COLLECTIONS, get_vector_store

    store = get_vector_store()
    embedder = get_embedder()
    vectors = [embedder.embed_query(_question(100_000 + i)) for i in range(sample)]
    exact = {
        name: [{h.id for h in store.search(name, v, limit=limit)} for v in vectors]
        for name in COLLECTIONS
    }
    start = time.perf_counter()
    built = store.optimize()
    elapsed = time.perf_counter() - start
    for name in COLLECTIONS:
        found = [{h.id for h in store.search(name, v, limit=limit)} for v in vectors]
        overlap = [len(a & b) / max(1, len(a)) for a, b in zip(exact[name], found, strict=True)]
        out(
            f"index     {name}: {built.get(name, 0)} points indexed in {elapsed:.1f} s; "
            f"recall@{limit} against exact search {statistics.fmean(overlap):.3f} ({sample} questions)"
        )


def retrieval_benchmark(
    *, memories: int, queries: int, out: Callable[[str], None], live: int = 0
) -> None:
    from memory.stores.embedders import get_embedder

    start = time.perf_counter()
    retrieval_seed(memories, templates=min(300, memories))
    live_seed(live)
    out(
        f"seeded {memories} memories and {live} live messages in "
        f"{time.perf_counter() - start:.1f} s; embedder {get_embedder().name}"
    )
    search_index_build(out=out)
    from memory.services.bench_keywords import keyword_bound_report

    keyword_bound_report(out=out)
    retrieval_measure(queries=queries, memories=memories, out=out)


def retrieval_measure(*, queries: int, memories: int, out: Callable[[str], None]) -> None:
    """auto_retrieve per stage, beside its floor measured in the same run.

    The floor is what no pre-hook can avoid: one query embedding and one
    Qdrant search, of the very question auto_retrieve gets (the query cache
    is cleared in between, so neither side is answered from it). Floor and
    pre-hook alternate, each going first every other question, so the
    machine's load weighs on both alike and their ratio means something on a
    shared machine.
    """
    from memory.models import MemorySettings
    from memory.services.retrieval import auto_retrieve, retrieval_warm
    from memory.services.retrieval.selection import CANDIDATES_MIN, CANDIDATES_PER_RESULT
    from memory.stores.embedders import get_embedder, query_cache
    from memory.stores.vectors import CONVERSATIONS, get_vector_store

    memory_settings = MemorySettings.load()
    limit = max(CANDIDATES_MIN, memory_settings.max_results * CANDIDATES_PER_RESULT)
    embedder = get_embedder()
    store = get_vector_store()
    retrieval_warm()  # as serve does at start: model loaded, stores open
    stages: dict[str, list[float]] = {}
    embed_floor: list[float] = []
    search_floor: list[float] = []
    failures = 0

    def floor(question: str) -> None:
        start = time.perf_counter()
        vector = embedder.embed_query(question)
        embed_floor.append((time.perf_counter() - start) * 1000)
        search_floor.append(timed(lambda: store.search(CONVERSATIONS, vector, limit=limit)))

    for i in range(queries):
        question = _question(i)
        if i % 2:
            floor(question)
            query_cache.clear()
        result = auto_retrieve(message=question, channel=("whatsapp", "mission_control")[i % 2])
        if not i % 2:
            query_cache.clear()
            floor(question)
        failures += bool(result.failed_sources)
        for stage, ms in result.timings_ms.items():
            stages.setdefault(stage, []).append(ms)
    out(f"{queries} queries over {memories} memories ({failures} with a failed source)")
    for stage in (
        "t1",
        "keywords",
        "prefetch",
        "embed",
        "qdrant",
        "live",
        "notes",
        "fusion",
        "log",
    ):
        if stage in stages:
            out(Timing(stage, stages[stage]).line())
    total = Timing("total", stages.get("total", []))
    out(total.line())
    embedding = Timing("embedding", embed_floor)
    floor = Timing("floor", [e + s for e, s in zip(embed_floor, search_floor, strict=True)])
    out(Timing("search", search_floor).line() + "  (bare Qdrant search, floor)")
    out(embedding.line() + "  (bare query embedding, floor)")
    out(floor.line() + "  (embedding + search, floor)")
    for name, base in (("embedding", embedding), ("embed+search", floor)):
        out(
            f"ratio     total / {name}: p50 {_ratio(total, base, 50):.2f}x  "
            f"p95 {_ratio(total, base, 95):.2f}x"
        )


def _ratio(timing: Timing, floor: Timing, q: float) -> float:
    return timing.percentile(q) / max(floor.percentile(q), 1e-9)


def context_benchmark(
    *, memories: int, queries: int, threads: int, out: Callable[[str], None]
) -> None:
    """POST /api/memory/context over HTTP, served by waitress as `serve` does, on a seeded memory.

    ``http`` is what an outside agent waits for (request, auth, retrieval, its
    log row, JSON); ``retrieval`` is the pre-hook's own total inside it.
    """
    import http.client
    import json
    import threading

    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import override_settings
    from rest_framework.authtoken.models import Token
    from waitress import create_server

    from makilab.wsgi import application
    from memory.selectors import memory_stats_get
    from memory.services.retrieval import retrieval_warm
    from memory.stores.vectors import get_vector_store

    start = time.perf_counter()
    retrieval_seed(memories)
    get_vector_store().optimize()  # as serve does at start
    out(f"seeded {memories} memories in {time.perf_counter() - start:.1f} s")
    token = Token.objects.create(user=get_user_model().objects.create_user(username="benchmark"))
    retrieval_warm()  # as serve does before its first request
    server = create_server(
        application, host="127.0.0.1", port=0, threads=threads, ident="makilab-benchmark"
    )
    stop = threading.Event()

    def serve() -> None:
        # waitress's own run() loops until the process ends: poll until told to stop.
        while not stop.is_set():
            server.asyncore.loop(
                timeout=0.05, map=server._map, use_poll=server.adj.asyncore_use_poll, count=1
            )

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client = http.client.HTTPConnection("127.0.0.1", server.effective_port, timeout=30)
    headers = {"Authorization": f"Token {token.key}", "Content-Type": "application/json"}

    def post(message: str, channel: str) -> dict:
        client.request(
            "POST",
            "/api/memory/context",
            json.dumps({"message": message, "channel": channel}),
            headers,
        )
        response = client.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {body[:200]!r}")
        return json.loads(body)

    http_ms, retrieval_ms, failures, injected = [], [], 0, 0
    # The endpoint is measured, not the API rate limit (600 calls a minute by default).
    unthrottled = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": dict.fromkeys(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]),
    }
    try:
        with override_settings(REST_FRAMEWORK=unthrottled):
            post("bonjour, on reprend ?", "whatsapp")  # first connection, not measured
            for i in range(queries):
                began = time.perf_counter()
                body = post(_question(i), ("whatsapp", "mission_control")[i % 2])
                http_ms.append((time.perf_counter() - began) * 1000)
                retrieval_ms.append(body["timings_ms"]["total"])
                failures += bool(body["failed_sources"])
                injected += bool(body["memories"])
    finally:
        client.close()
        stop.set()
        thread.join(timeout=5)
        server.task_dispatcher.shutdown()
        server.close()
    stats = memory_stats_get()
    points = stats["vectors"]["collections"]
    database = Path(connection.settings_dict["NAME"])
    size_mb = sum(f.stat().st_size for f in database.parent.glob(database.name + "*")) / 1e6
    out(
        f"data: {stats['messages']['total']} messages, {stats['facts']['total']} facts, "
        f"{stats['summaries']['total']} summaries; Qdrant points {points}; SQLite {size_mb:.1f} MB"
    )
    out(
        f"{queries} POST /api/memory/context over HTTP (waitress, {threads} threads), "
        f"{injected} injected something, {failures} with a failed source"
    )
    out(Timing("http", http_ms).line())
    out(Timing("retrieval", retrieval_ms).line())


def import_benchmark(*, n: int, out: Callable[[str], None]) -> None:
    """memory_import's rate: n exchanges and n/2 facts (with a revision each) exported from one
    throw-away memory, imported into a fresh one, then imported again (matched, nothing written)."""
    import tempfile
    from pathlib import Path

    from memory.models import Fact, FactRevision
    from memory.services.portability import memory_export
    from memory.services.portability_import import memory_import
    from memory.services.throwaway import throwaway_memory

    with tempfile.TemporaryDirectory(prefix="makilab-import-bench-") as folder:
        path = Path(folder) / "memoire.jsonl"
        with throwaway_memory():
            exchanges_seed(n)
            facts = Fact.objects.bulk_create(
                Fact(key=f"fait_{i}", value=f"Fait {i} sur {TOPICS[i % len(TOPICS)]}")
                for i in range(n // 2)
            )
            FactRevision.objects.bulk_create(
                FactRevision(fact=f, actor="user", reason="created", new_value=f.value)
                for f in facts
            )
            counts = memory_export(path=path)
        size_mb = path.stat().st_size / 1e6
        out(f"export: {counts} ({size_mb:.1f} MB)")
        with throwaway_memory():
            first = memory_import(path=path)
            again = memory_import(path=path)
    rows = sum(first.created.values())
    out(
        f"import into an empty memory: {first.records} lines ({rows} rows with revisions) "
        f"in {first.seconds:.2f} s: {first.records / first.seconds:.0f} lines/s, "
        f"{rows / first.seconds:.0f} rows/s"
    )
    out(
        f"same file again (all matched, nothing written): {again.records} lines in "
        f"{again.seconds:.2f} s: {again.rate:.0f} lines/s"
    )
