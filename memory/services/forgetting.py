"""Forgetting a topic on request (the agent's memory__forget).

What ``topic_forget`` removes, so that nothing about the topic comes back
through ANY search path (semantic search, text search, auto-retrieval,
the agent's history, and a later ``reindex``, which rebuilds Qdrant from T1):

- Exchanges: the user message and its reply(ies) are DELETED from T1 (the
  FTS5 triggers drop them from ``messages_fts``) and their point is removed
  from ``conversations``. Deleting, not flagging, is deliberate: a flagged row
  would still feed FTS, the history sent to the LLM and ``reindex`` unless every
  reader filtered it; and the owner asked for it to be gone. It cannot be undone.
- Facts: soft-deleted (``forgotten``, revision "forgotten" with the topic in its
  note), their point removed from ``knowledge``. They stay restorable from the
  dashboard, like any forgotten fact, and no search path returns them meanwhile.
- Summaries: deleted from T1 and from ``knowledge`` (a summary mentioning the
  topic cannot be partially forgotten; the messages it summarised stay in T1).
- Obsidian notes are the owner's vault: never modified.

Which items match:

1. By meaning: the topic is embedded and both collections are searched above a
   threshold: the settings' ``forget_min_score`` (0.5, the seeds' value for
   Voyage) on the embedders' common relevance scale (cosine 0.84 with e5).
   The bundled multilingual-e5 scores unrelated French texts 0.77-0.87 against
   a query (measured: "le voyage à Lisbonne" vs "David habite à Toulouse" 0.868,
   above the related "hôtel à Lisbonne" 0.864), so no threshold alone is safe
   with it: its hits must also contain at least one word of the topic.
2. By words: messages (FTS5), facts (key, value, subjects) and summaries that
   contain EVERY meaningful word of the topic (accents and case folded, stop
   words dropped). This also catches what is not indexed yet.

The message that asked to forget (``keep_message_ids``) is kept: the
conversation shows that something was forgotten, and its reply must be able to
point at it.

Qdrant is changed first: if it (or the embedder) is unavailable, nothing is
changed and StoreUnavailable is raised, so T1 and T2 never disagree.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import transaction

from memory.exceptions import DimensionMismatch, MemoryServiceError, StoreUnavailable
from memory.models import Actor, Fact, Message, Summary
from memory.services.keywords import STOP_WORDS
from memory.services.search import excerpt
from memory.stores.fts import fts_search, query_terms

logger = logging.getLogger(__name__)

# Hits taken from each collection, and messages taken from FTS, per forget.
FORGET_MAX_POINTS = 200
FORGET_MAX_MESSAGES = 2000
EXCERPT_CHARS = 120

TOPIC_EMPTY_MESSAGE = "Le sujet à oublier est vide."
TOPIC_TOO_VAGUE_MESSAGE = (
    "Le sujet « {topic} » est trop vague pour être oublié sans risque : "
    "précisez un nom, un lieu ou un thème."
)
FORGET_UNAVAILABLE_MESSAGE = (
    "Impossible d'oublier maintenant : la mémoire vectorielle est indisponible ({reason}). "
    "Rien n'a été supprimé."
)
FORGET_NOTE = "oubli du sujet « {topic} »"

# Words that carry no topic: the retrieval's French and English stop words, and
# the words people wrap a topic in ("tout ce qui concerne Marie").
_WRAPPING_WORDS = """
    ca rien chose choses truc trucs concerne concernant concernent propos sujet sujets
    histoire oublie oublier oubli souvenir souvenirs memoire everything anything
    regarding forget memory
"""
TOPIC_STOP_WORDS = STOP_WORDS | frozenset(_WRAPPING_WORDS.split())


@dataclass
class ForgetResult:
    topic: str
    threshold: float
    exchanges: list[dict] = field(default_factory=list)
    messages_deleted: int = 0
    facts: list[dict] = field(default_factory=list)
    summaries: list[dict] = field(default_factory=list)
    points_removed: int = 0

    @property
    def empty(self) -> bool:
        return not (self.exchanges or self.facts or self.summaries)

    def as_dict(self) -> dict:
        return {
            "topic": self.topic,
            "threshold": self.threshold,
            "exchanges": self.exchanges,
            "messages_deleted": self.messages_deleted,
            "facts": self.facts,
            "summaries": self.summaries,
            "points_removed": self.points_removed,
        }

    def as_text(self) -> str:
        """A French summary of what was purged (the tool's answer)."""
        if self.empty:
            return f"Rien à oublier sur « {self.topic} »."
        lines = [f"Oubli de « {self.topic} » :"]
        if self.exchanges:
            lines.append(
                f"- {len(self.exchanges)} échange(s) supprimé(s) "
                f"({self.messages_deleted} message(s)) :"
            )
            lines.extend(f"  · [{e['channel']}] {e['excerpt']}" for e in self.exchanges[:10])
        if self.facts:
            lines.append(f"- {len(self.facts)} fait(s) oublié(s) :")
            lines.extend(f"  · {f['key']} = {f['value']}" for f in self.facts[:20])
        if self.summaries:
            lines.append(f"- {len(self.summaries)} résumé(s) supprimé(s)")
        lines.append(f"- {self.points_removed} vecteur(s) retiré(s) de la mémoire sémantique")
        return "\n".join(lines)


def topic_terms(topic: str) -> list[str]:
    """The meaningful words of a topic, folded as the FTS index sees them."""
    return [term for term in query_terms(topic) if term not in TOPIC_STOP_WORDS]


def _words(text: str) -> set[str]:
    return set(query_terms(text or ""))


def _contains_all(text: str, terms: Iterable[str]) -> bool:
    words = _words(text)
    return all(term in words for term in terms)


def _contains_any(text: str, terms: Iterable[str]) -> bool:
    words = _words(text)
    return any(term in words for term in terms)


def _fact_text(fact: Fact) -> str:
    return " ".join([fact.key.replace("_", " "), fact.value, " ".join(fact.subjects or [])])


def _int(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def forget_threshold(embedder) -> tuple[float, bool]:
    """(minimum score, whether a hit must also share a word) for this embedder."""
    from memory.selectors import memory_settings_get
    from memory.stores.embedders import LOCAL_MODEL_NAME, cosine_threshold

    # forget_min_score is on the common relevance scale (0.5 -> cosine 0.84 with e5).
    threshold = cosine_threshold(embedder, memory_settings_get().forget_min_score)
    return threshold, getattr(embedder, "name", "") == LOCAL_MODEL_NAME


@dataclass
class _Matches:
    roots: dict[int, float] = field(default_factory=dict)  # exchange root id -> best score
    facts: set[int] = field(default_factory=set)
    summaries: set[int] = field(default_factory=set)
    messages: set[int] = field(default_factory=set)


def _semantic_matches(topic: str, terms: list[str], matches: _Matches) -> float:
    from memory.stores.embedders import get_embedder
    from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, get_vector_store

    embedder = get_embedder()
    threshold, needs_word = forget_threshold(embedder)
    vector = embedder.embed_query(topic)
    store = get_vector_store()
    for hit in store.search(
        CONVERSATIONS, vector, limit=FORGET_MAX_POINTS, score_threshold=threshold
    ):
        payload = hit.payload or {}
        text = f"{payload.get('user_message', '')}\n{payload.get('assistant_message', '')}"
        root = _int(payload.get("message_id") or payload.get("row_id"))
        if root is None or (needs_word and not _contains_any(text, terms)):
            continue
        matches.roots[root] = max(matches.roots.get(root, 0.0), float(hit.score))
    for hit in store.search(KNOWLEDGE, vector, limit=FORGET_MAX_POINTS, score_threshold=threshold):
        payload = hit.payload or {}
        text = f"{str(payload.get('key', '')).replace('_', ' ')} {payload.get('content', '')}"
        row_id = _int(payload.get("row_id"))
        if row_id is None or (needs_word and not _contains_any(text, terms)):
            continue
        if payload.get("type") == "fact":
            matches.facts.add(row_id)
        elif payload.get("type") == "summary":
            matches.summaries.add(row_id)
    return threshold


def _word_matches(topic: str, terms: list[str], matches: _Matches) -> None:
    for hit in fts_search(topic, terms=terms, limit=FORGET_MAX_MESSAGES):
        matches.messages.add(hit.message_id)
    for fact in Fact.objects.filter(forgotten=False).only("id", "key", "value", "subjects"):
        if _contains_all(_fact_text(fact), terms):
            matches.facts.add(fact.id)
    # Summaries have no FTS table; there are few of them (one per compaction).
    for summary in Summary.objects.only("id", "content").iterator():
        if _contains_all(summary.content, terms):
            matches.summaries.add(summary.id)


def _messages_to_delete(matches: _Matches, keep: set[int]) -> tuple[dict[int, Message], set[int]]:
    """The exchange roots (id -> message) to report and every message id to delete."""
    matched = Message.objects.filter(pk__in=matches.messages).only("id", "reply_to_id")
    root_ids = set(matches.roots) | {m.reply_to_id or m.id for m in matched}
    root_ids -= keep
    roots = {m.id: m for m in Message.objects.filter(pk__in=root_ids)}
    ids = set(roots) | (matches.messages - keep)
    ids |= set(
        Message.objects.filter(reply_to_id__in=list(roots))
        .exclude(pk__in=keep)
        .values_list("id", flat=True)
    )
    return roots, ids


def _remove_points(
    root_ids: Iterable[int], fact_ids: Iterable[int], summary_ids: Iterable[int]
) -> int:
    """Delete the points; returns how many of them existed."""
    from memory.services.indexing import KIND_FACT, KIND_MESSAGE, KIND_SUMMARY
    from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, get_vector_store, point_id

    store = get_vector_store()
    exchanges = [point_id(KIND_MESSAGE, i) for i in root_ids]
    knowledge = [point_id(KIND_FACT, i) for i in fact_ids]
    knowledge += [point_id(KIND_SUMMARY, i) for i in summary_ids]
    present = len(store.retrieve(CONVERSATIONS, exchanges)) + len(
        store.retrieve(KNOWLEDGE, knowledge)
    )
    store.delete(CONVERSATIONS, exchanges)
    store.delete(KNOWLEDGE, knowledge)
    return present


def topic_forget(
    *, topic: str, actor: str = Actor.AGENT, keep_message_ids: Iterable[int] = ()
) -> ForgetResult:
    """Forget everything about ``topic`` in both tiers (see the module docstring).

    Raises MemoryServiceError for an empty or too vague topic, StoreUnavailable
    (nothing changed) when Qdrant or the embedder cannot be reached.
    """
    from memory.services.facts import fact_forget

    topic = " ".join((topic or "").split())
    if not topic:
        raise MemoryServiceError(TOPIC_EMPTY_MESSAGE)
    terms = topic_terms(topic)
    if not terms:
        raise MemoryServiceError(TOPIC_TOO_VAGUE_MESSAGE.format(topic=topic))
    keep = {int(i) for i in keep_message_ids}

    matches = _Matches()
    try:
        threshold = _semantic_matches(topic, terms, matches)
    except (StoreUnavailable, DimensionMismatch) as exc:
        raise StoreUnavailable(FORGET_UNAVAILABLE_MESSAGE.format(reason=exc)) from exc
    _word_matches(topic, terms, matches)

    roots, message_ids = _messages_to_delete(matches, keep)
    facts = list(Fact.objects.filter(pk__in=matches.facts, forgotten=False).order_by("key"))
    summaries = list(Summary.objects.filter(pk__in=matches.summaries).order_by("id"))
    result = ForgetResult(topic=topic, threshold=threshold)
    result.exchanges = [
        {
            "id": root.id,
            "channel": root.channel,
            "date": root.created_at.isoformat(),
            "excerpt": excerpt(root.content, terms, size=EXCERPT_CHARS),
            "score": round(matches.roots[root.id], 4) if root.id in matches.roots else None,
        }
        for root in sorted(roots.values(), key=lambda m: (m.created_at, m.id))
    ]
    result.facts = [{"id": f.id, "key": f.key, "value": f.value} for f in facts]
    result.summaries = [
        {"id": s.id, "channel": s.channel, "excerpt": excerpt(s.content, terms, size=EXCERPT_CHARS)}
        for s in summaries
    ]
    if result.empty:
        return result

    # Qdrant first: when it fails, T1 is untouched.
    root_ids = [*roots, *matches.roots.keys() - roots.keys() - keep]
    try:
        result.points_removed = _remove_points(
            root_ids, [f.id for f in facts], [s.id for s in summaries]
        )
    except (StoreUnavailable, DimensionMismatch) as exc:
        raise StoreUnavailable(FORGET_UNAVAILABLE_MESSAGE.format(reason=exc)) from exc

    note = FORGET_NOTE.format(topic=topic)
    with transaction.atomic():
        for fact in facts:
            fact_forget(fact=fact, actor=actor, note=note)
        Summary.objects.filter(pk__in=[s.id for s in summaries]).delete()
        result.messages_deleted, _ = Message.objects.filter(pk__in=message_ids).delete()

    # Again after the commit: an indexing task that read a row before it was
    # deleted may have written its point back meanwhile.
    def _again() -> None:
        try:
            _remove_points(root_ids, [f.id for f in facts], [s.id for s in summaries])
        except StoreUnavailable as exc:  # memory_doctor finds orphan points
            logger.warning("forget %r: second point removal failed: %s", topic, exc)

    transaction.on_commit(_again)
    logger.info(
        "forgot %r: %d exchanges (%d messages), %d facts, %d summaries, %d points",
        topic,
        len(result.exchanges),
        result.messages_deleted,
        len(result.facts),
        len(result.summaries),
        result.points_removed,
    )
    return result
