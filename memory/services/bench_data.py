"""The benchmarks' synthetic memory: exchanges, facts, summaries and an observed room,
seeded with their production rows, payloads and point ids, and the questions asked of it."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from memory.models import Message, MessageRole

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
    from memory.services.index_documents import KIND_FACT, KIND_MESSAGE, KIND_SUMMARY
    from memory.stores.embedders import get_embedder

    embedder = get_embedder()
    base = np.asarray(embedder.embed_documents([_sentence(i * 37) for i in range(templates)]))
    rng = np.random.default_rng(7)
    now = timezone.now()
    n_exchanges = int(memories * 0.70)
    n_summaries = max(1, memories // 50)
    n_facts = memories - n_exchanges - n_summaries
    channels = ("whatsapp", "mission_control", "email")

    # Each exchange's user message then its reply, in id order as the agent loop saves them:
    # the channels have the history the agent loop sends (replies written after every
    # user message left each channel's last rows all replies, so an empty history).
    first = (Message.objects.order_by("-id").values_list("id", flat=True).first() or 0) + 1
    exchanges = []
    for i in range(n_exchanges):
        at = now - timedelta(minutes=10 * (n_exchanges - i))
        user_id = first + 2 * i
        exchanges.append(
            Message(
                id=user_id,
                channel=channels[i % 3],
                role=MessageRole.USER,
                content=_sentence(i),
                created_at=at,
                index_state=IndexState.INDEXED,
            )
        )
        exchanges.append(
            Message(
                id=user_id + 1,
                channel=channels[i % 3],
                role=MessageRole.ASSISTANT,
                content=f"C'est noté ({user_id}).",
                reply_to_id=user_id,
                created_at=at,
                index_state=IndexState.INDEXED,
            )
        )
    Message.objects.bulk_create(exchanges, batch_size=1000)
    del exchanges
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
    for kind, model in ((KIND_MESSAGE, None), (KIND_FACT, Fact), (KIND_SUMMARY, Summary)):
        ids = (
            [first + 2 * i for i in range(n_exchanges)]  # the user messages, as created above
            if model is None
            else list(model.objects.values_list("id", flat=True))
        )
        _points_seed(kind, ids, base=base, rng=rng)


def live_seed(count: int, *, templates: int = 100) -> None:
    """``count`` messages of an observed room with their live points (template vectors + noise,
    as retrieval_seed), so the live source searches a full collection."""
    import numpy as np

    from memory.models import ChannelSettings, IndexState
    from memory.services.index_documents import KIND_MESSAGE
    from memory.stores.embedders import get_embedder

    if count <= 0:
        return
    embedder = get_embedder()
    base = np.asarray(embedder.embed_documents([_sentence(i * 41) for i in range(templates)]))
    rng = np.random.default_rng(11)
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
    _points_seed(KIND_MESSAGE, ids, base=base, rng=rng)


def notes_seed(count: int, *, per_folder: int = 50) -> None:
    """``count`` notes in the vault folder (OBSIDIAN_VAULT_PATH), ``per_folder`` to a
    folder, one in ten tagged #makilab (the default context tag), as an owner's vault
    is read before every message: its change marker, then the context notes."""
    from pathlib import Path

    from django.conf import settings

    root = Path(settings.OBSIDIAN_VAULT_PATH)
    for i in range(count):
        folder = root / f"Dossier {i // per_folder:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        tag = "\n\n#makilab" if i % 10 == 0 else ""
        (folder / f"Note {i}.md").write_text(f"# Note {i}\n\n{_sentence(i)}{tag}\n", "utf-8")


def _points_seed(kind: str, ids: list[int], *, base, rng) -> None:
    """The points of these rows (their production ids and payloads), each vector one of
    ``base``'s template vectors plus a little noise, in the collection each belongs to."""
    import numpy as np

    from memory.services.index_documents import desired
    from memory.stores.embedders import get_embedder
    from memory.stores.vectors import VectorPoint, get_vector_store

    dimension = get_embedder().dimension
    store = get_vector_store()
    for start in range(0, len(ids), 2000):
        documents, _, _ = desired(kind, ids[start : start + 2000])
        noise = rng.normal(0, 0.02, size=(len(documents), base.shape[1]))
        vectors = base[rng.integers(0, len(base), size=len(documents))] + noise
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        by_collection: dict[str, list] = {}
        for document, vector in zip(documents, vectors, strict=True):
            by_collection.setdefault(document.collection, []).append(
                VectorPoint(id=document.point_id, vector=vector.tolist(), payload=document.payload)
            )
        for collection, points in by_collection.items():
            store.ensure_collection(collection, dimension)
            store.upsert(collection, points)


def bench_question(i: int) -> str:
    """The i-th benchmark question; a distinct text each time, so the query-embedding cache never helps."""
    question = QUESTIONS[i % len(QUESTIONS)].format(
        o=OBJECTS[(i * 5) % len(OBJECTS)], s=SUBJECTS[i % len(SUBJECTS)]
    )
    return f"{question} ({i})"
