"""What a forget takes: the memories *about* a topic, and nothing else.

Embeddings only propose candidates: the bundled e5 scores unrelated French
texts 0.77-0.87 against a query ("le voyage à Lisbonne" vs "David habite à
Toulouse" 0.868, above the related "hôtel à Lisbonne" 0.864), so a cosine
alone took the owner's own wedding, Marie's dog and a Lisbon work trip with
"le mariage de Marie à Lisbonne". Candidates come from both collections
(above the embedder's forget candidate threshold, embedders.py) and from the
words (any meaningful word of the topic, FTS5 and the facts' words). Then:

- with an LLM configured, it judges which candidates are about the topic (JSON
  list of ids), 60 per call, the closest first, each shown by its start and the
  passages around the topic's words (memory.services.forgetting_judge); past its
  bound the rule below decides for the rest (never left out silently); on any
  failure, the rule decides for all;
- without one, a candidate must contain EVERY meaningful word of the topic
  (folded like the index; a plural "s"/"x" is ignored).

A forget is always previewable (the plan) before anything changes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import Q

from memory.exceptions import DimensionMismatch, MemoryServiceError, StoreUnavailable
from memory.models import Fact, FactKind, FactRevision, Message, MessageRole, Summary
from memory.services.forgetting_summaries import summary_covers
from memory.services.keywords import STOP_WORDS
from memory.stores.fts import fts_search, fts_search_facts, query_terms, text_words

logger = logging.getLogger(__name__)

FORGET_MAX_POINTS = 200
FORGET_MAX_MESSAGES = 2000
EXCERPT_CHARS = 120

TOPIC_EMPTY_MESSAGE = "Le sujet à oublier est vide."
TOPIC_TOO_VAGUE_MESSAGE = (
    "Le sujet « {topic} » est trop vague pour être oublié sans risque : "
    "précisez un nom, un lieu ou un thème."
)

# Words that carry no topic: the retrieval's French and English stop words, and
# the words people wrap a topic in ("tout ce qui concerne Marie").
_WRAPPING_WORDS = """
    ca rien chose choses truc trucs concerne concernant concernent propos sujet sujets
    histoire oublie oublier oubli souvenir souvenirs memoire everything anything
    regarding forget memory tout toute tous toutes
"""
TOPIC_STOP_WORDS = STOP_WORDS | frozenset(_WRAPPING_WORDS.split())


def topic_terms(topic: str) -> list[str]:
    """The meaningful words of a topic, folded as the FTS index sees them."""
    return [term for term in query_terms(topic) if term not in TOPIC_STOP_WORDS]


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word[-1] in "sx" else word


def _shares_a_word(text: str, terms: Iterable[str]) -> bool:
    words = {_stem(w) for w in text_words(text or "")}
    return any(_stem(term) in words for term in terms)


def contains_all(text: str, terms: Iterable[str]) -> bool:
    """Whether ``text`` holds every term (folded words, plural s/x ignored), read whole."""
    words = {_stem(w) for w in text_words(text or "")}
    return all(_stem(term) in words for term in terms)


@dataclass
class Candidate:
    id: str  # "message:<root id>" (an exchange), "fact:<id>", "summary:<id>"
    text: str
    score: float | None = None


@dataclass
class Selection:
    selection: str  # "words" | "llm"
    exchanges: dict[int, Message] = field(default_factory=dict)  # root id -> root
    message_ids: set[int] = field(default_factory=set)  # every message to take
    members: dict[int, int] = field(default_factory=dict)  # message id -> its exchange's root
    facts: list[Fact] = field(default_factory=list)
    summaries: list[Summary] = field(default_factory=list)
    # The history lines of facts it leaves that are about the topic (an old value).
    revisions: list[FactRevision] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)


def taken_since(selection: Selection) -> set[str]:
    """The ids of the selection another forget took since it was read (a confirmation
    sent twice, two forgets at once: the second re-pointed the first's rows to itself,
    and the undo of either left a fact forgotten, QA 8a). Ask it under the write lock."""
    taken: set[str] = set()
    if selection.message_ids:
        members = selection.members
        taken |= {
            f"message:{members.get(i, i)}"
            for i in Message.all_objects.filter(
                pk__in=selection.message_ids, forgetting__isnull=False
            ).values_list("id", flat=True)
        }
    for model, kind, rows in (
        (Fact, "fact", selection.facts),
        (Summary, "summary", selection.summaries),
        (FactRevision, "revision", selection.revisions),
    ):
        if rows:
            taken |= {
                f"{kind}:{i}"
                for i in model.all_objects.filter(
                    pk__in=[row.id for row in rows], forgetting__isnull=False
                ).values_list("id", flat=True)
            }
    return taken


def restricted(selection: Selection, only: Iterable[str]) -> Selection:
    """The part of a selection the owner saw and confirmed (ids like "message:12").

    A confirmation never takes more than its preview showed: with an LLM judge,
    a second selection could differ from the first.
    """
    wanted = set(only)
    kept = Selection(
        selection=selection.selection, scores=selection.scores, members=selection.members
    )
    kept.exchanges = {i: m for i, m in selection.exchanges.items() if f"message:{i}" in wanted}
    kept.facts = [f for f in selection.facts if f"fact:{f.id}" in wanted]
    kept.summaries = [s for s in selection.summaries if f"summary:{s.id}" in wanted]
    kept.revisions = [r for r in selection.revisions if f"revision:{r.id}" in wanted]
    kept.message_ids = {
        message_id
        for message_id in selection.message_ids
        if selection.members.get(message_id) in kept.exchanges
    }
    # What was drawn since from a message it takes goes with it, if the selection holds
    # it too: a compaction's summary covering that message, a fact stated from it (by
    # an extraction or the digest) between the preview and the confirmation.
    taken = (
        list(
            Message.all_objects.filter(pk__in=kept.message_ids).values_list("channel", "created_at")
        )
        if kept.message_ids
        else []
    )
    kept.facts += [
        f
        for f in selection.facts
        if f not in kept.facts and not f.forgotten and f.source_message_id in kept.message_ids
    ]
    kept.summaries += [
        s
        for s in selection.summaries
        if s not in kept.summaries and any(summary_covers(s, channel, at) for channel, at in taken)
    ]
    return kept


def _semantic_candidates(topic: str) -> dict[str, float]:
    from memory.services.summary_parts import KNOWLEDGE_OVERFETCH
    from memory.stores.embedders import cosine_threshold, get_embedder
    from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, LIVE, get_vector_store

    embedder = get_embedder()
    threshold = cosine_threshold(embedder, embedder.forget_candidate_score)
    vector = embedder.embed_query(topic)
    store = get_vector_store()
    found: dict[str, float] = {}
    # A live point is a message of an observed room, keyed like an exchange.
    for collection in (CONVERSATIONS, LIVE, KNOWLEDGE):
        # Knowledge: a long summary's passages are points too, counted once in ``found``.
        extra = KNOWLEDGE_OVERFETCH if collection == KNOWLEDGE else 0
        for hit in store.search(
            collection, vector, limit=FORGET_MAX_POINTS + extra, score_threshold=threshold
        ):
            payload = hit.payload or {}
            row = payload.get("row_id") or payload.get("message_id")
            if not row:
                continue
            kind = "message" if collection != KNOWLEDGE else payload.get("type", "fact")
            # The agent's self and goals are Fact rows too: a topic forget takes them.
            kind = "fact" if kind in ("self", "goal") else kind
            item = f"{kind}:{int(row)}"  # a summary's passages: its best one
            found[item] = max(found.get(item, -1.0), float(hit.score))
    return found


def _exchanges(root_ids: Iterable[int], keep: set[int]) -> dict[int, tuple[Message, list[Message]]]:
    """Each root with the messages of its exchange: its replies, and the tool results and
    system notes recorded between it and its last reply (an outside agent's exchange),
    which then stand as roots of their own no more. A tool result outside any exchange
    is a root alone."""
    roots = Message.objects.filter(pk__in=set(root_ids) - keep)
    result = {m.id: (m, []) for m in roots}
    for reply in Message.objects.filter(reply_to_id__in=list(result)).order_by("created_at", "id"):
        result[reply.reply_to_id][1].append(reply)
    spans = {
        root_id: (root.channel, root_id, max(r.id for r in replies))
        for root_id, (root, replies) in result.items()
        if replies
    }
    if spans:
        inner = Message.objects.filter(
            role__in=(MessageRole.TOOL, MessageRole.SYSTEM),
            reply_to__isnull=True,
            channel__in={channel for channel, _, _ in spans.values()},
            id__gt=min(first for _, first, _ in spans.values()),
            id__lt=max(last for _, _, last in spans.values()),
        ).exclude(pk__in=keep)
        for message in inner.order_by("id"):
            for root_id, (channel, first, last) in spans.items():
                if message.channel == channel and first < message.id < last:
                    result[root_id][1].append(message)
                    result.pop(message.id, None)
                    break
    return result


def candidates_gather(
    topic: str, terms: list[str], keep: set[int]
) -> tuple[
    dict[str, Candidate], dict[int, tuple[Message, list[Message]]], dict[str, Fact | Summary]
]:
    """Every memory that shares something with the topic: its meaning or one of its words."""
    scores: dict[str, float] = {}
    try:
        scores = _semantic_candidates(topic)
    except (StoreUnavailable, DimensionMismatch) as exc:
        # T1 is the truth: the words still find what is stored; the machine removes points.
        # Never the topic: what the owner forgets stays out of the log too (QA).
        logger.warning("forget: semantic candidates unavailable, the words decide (%s)", exc)
    ids = set(scores)
    for hit in fts_search("", terms=terms, any_term=True, limit=FORGET_MAX_MESSAGES, bounded=False):
        ids.add(f"message:{hit.message_id}")
    for hit in fts_search_facts(terms, limit=FORGET_MAX_POINTS, any_term=True, bounded=False):
        ids.add(f"fact:{hit.fact_id}")
    for summary in Summary.objects.only("id", "content").iterator():
        if _shares_a_word(summary.content, terms):
            ids.add(f"summary:{summary.id}")
    # The facts facts_fts leaves out but a forget takes: the agent's self and goals, and
    # facts forgotten alone (restorable until a topic forget ends them with its purge).
    outside_fts = Fact.all_objects.filter(forgetting__isnull=True).filter(
        Q(forgotten=True) | ~Q(kind=FactKind.OWNER)
    )
    for fact in outside_fts.only("id", "key", "value").iterator():
        if _shares_a_word(f"{fact.key.replace('_', ' ')} {fact.value}", terms):
            ids.add(f"fact:{fact.id}")
    # facts_fts holds a fact's key and value, not its subjects: a fact about the topic by
    # its subjects alone (« Zanzibar » on a hotel booking) was no candidate (QA).
    tagged = Fact.all_objects.filter(forgetting__isnull=True).exclude(subjects=[])
    for pk, subjects in tagged.values_list("id", "subjects").iterator():
        if _shares_a_word(" ".join(subjects or []), terms):
            ids.add(f"fact:{pk}")
    by_kind: dict[str, set[int]] = {"message": set(), "fact": set(), "summary": set()}
    for item in ids:
        kind, _, raw = item.partition(":")
        by_kind.setdefault(kind, set()).add(int(raw))
    # A tool result or a system note found by its words is a root until its exchange claims it.
    roots = {
        m.reply_to_id or m.id
        for m in Message.objects.filter(pk__in=by_kind["message"]).only("id", "reply_to_id")
    }
    exchanges = _exchanges(roots, keep)
    rows: dict[str, Fact | Summary] = {}
    # Every kind of Fact row (the owner's, the agent's self and goals).
    for fact in Fact.all_objects.filter(pk__in=by_kind["fact"], forgetting__isnull=True):
        rows[f"fact:{fact.id}"] = fact
    for summary in Summary.objects.filter(pk__in=by_kind["summary"]):
        rows[f"summary:{summary.id}"] = summary
    candidates: dict[str, Candidate] = {}
    for root_id, (root, replies) in exchanges.items():
        text = "\n".join([root.content, *(r.content for r in replies)])
        candidates[f"message:{root_id}"] = Candidate(
            f"message:{root_id}", text, scores.get(f"message:{root_id}")
        )
    for item, row in rows.items():
        text = (
            " ".join([row.key.replace("_", " "), row.value, " ".join(row.subjects or [])])
            if isinstance(row, Fact)
            else row.content
        )
        candidates[item] = Candidate(item, text, scores.get(item))
    return candidates, exchanges, rows


def select(topic: str, *, keep: Iterable[int] = ()) -> Selection:
    """The memories about ``topic`` (see the module docstring). Changes nothing."""
    topic = " ".join((topic or "").split())
    if not topic:
        raise MemoryServiceError(TOPIC_EMPTY_MESSAGE)
    terms = topic_terms(topic)
    if not terms:
        raise MemoryServiceError(TOPIC_TOO_VAGUE_MESSAGE.format(topic=topic))
    keep_ids = {int(i) for i in keep}
    candidates, exchanges, rows = candidates_gather(topic, terms, keep_ids)
    chosen: set[str] | None = None
    how = "words"
    from agent.client import llm_available

    if candidates and llm_available():
        from memory.services.forgetting_judge import llm_judge

        try:
            chosen, how = llm_judge(topic, candidates, terms), "llm"
        except Exception as exc:  # the rule decides: never forget more than asked
            # The error's class only: its text may quote the topic or the candidates.
            logger.warning("forget: LLM judgement failed (%s); all-words rule", type(exc).__name__)
    if chosen is None:
        chosen = {c.id for c in candidates.values() if contains_all(c.text, terms)}
    result = Selection(selection=how)
    for item in sorted(chosen):
        kind, _, raw = item.partition(":")
        row_id = int(raw)
        if kind == "message":
            root, replies = exchanges[row_id]
            result.exchanges[row_id] = root
            for message in (root, *replies):
                result.message_ids.add(message.id)
                result.members[message.id] = root.id
        elif kind == "fact":
            result.facts.append(rows[item])
        else:
            result.summaries.append(rows[item])
        if candidates[item].score is not None:
            result.scores[item] = candidates[item].score
    result.message_ids -= keep_ids
    result.revisions = history_about(terms, [f.id for f in result.facts])
    return result


def history_about(terms: list[str], taken: list[int]) -> list[FactRevision]:
    """The history lines of facts the forget leaves whose values or note hold every word of
    the topic (an old value about it, edited away since): the word rule, the same as for a
    log's message preview. The facts it takes keep their whole history with them; a
    fact it leaves though its value still holds every word (the LLM judged it about
    something else, or the owner kept it) keeps its history too: the lines show
    nothing the fact does not."""
    lines = (
        FactRevision.objects.exclude(fact_id__in=taken)
        .filter(fact__forgetting__isnull=True)  # not of a fact an earlier forget took
        .select_related("fact")
        .order_by("created_at", "id")
    )
    return [
        line
        for line in lines.iterator()
        if not contains_all(line.fact.value, terms)
        and any(
            contains_all(text, terms)
            # The note too: the reason the agent gave for a delete, a key dedup proposed
            # (QA: « déménage à Zanzibar » stayed in a fact's history after the forget).
            for text in (line.old_value, line.new_value, str(line.changes), line.note)
        )
    ]
