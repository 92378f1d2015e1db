"""Full-text search over messages, facts and summaries (SQLite FTS5): with memory.stores.fts_rank (the
ranking within a cost) and fts_upkeep (the indexes' upkeep), the project's raw SQL.

User text never reaches MATCH as syntax: it is cut into words the way FTS5's
unicode61 tokenizer cuts them, and each word is sent as a double-quoted string,
so quotes, parentheses, *, -, ^, :, AND/OR/NOT/NEAR and emoji are plain text.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import sys
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connection
from django.utils.dateparse import parse_datetime

from memory.stores.compiled import raw_fetchall
from memory.stores.fts_rank import rank_rowids

# Long pastes would make huge queries for no gain: only the first words count.
MAX_QUERY_TERMS = 64
LIGATURES = str.maketrans({"œ": "oe", "Œ": "OE", "æ": "ae", "Æ": "AE"})
# unicode61 keeps letters (L*), numbers (N*) and private-use characters (Co)
# inside tokens; everything else separates them. Python's \w is close but
# also keeps "_" (and a few connector marks), which unicode61 splits on.
_WORD = re.compile(r"[^\W_]+")
# A one-letter word with symbols attached ("C++", "C#", "F#"): unicode61 keeps its letter
# alone, the same token as the "c" of every "c'est". Searched, it is required as written.
_LETTER_WITH_SYMBOLS = re.compile(r"(?<![^\W_])[A-Za-z][+#]+(?![^\W\d_])")


@dataclass(frozen=True)
class FtsHit:
    message_id: int
    channel: str
    role: str
    author: str
    created_at: datetime
    content: str
    score: float  # -bm25(): higher is better


def fold(text: str) -> str:
    """Lower-case, ligatures expanded and diacritics removed, as the index sees text."""
    text = text.translate(LIGATURES)
    if text.isascii():  # nothing to decompose (most keys, many messages)
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    return decomposed.translate(_combining_marks()).lower()


@functools.cache
def _combining_marks() -> dict[int, None]:
    """str.translate's table deleting every combining character (~900; built once, ~75 ms)."""
    return {i: None for i in range(sys.maxunicode + 1) if unicodedata.combining(chr(i))}


def query_terms(text: str) -> list[str]:
    """The words of a user's text, folded, in order, without repeats."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(fold(text)):
        seen.setdefault(word, None)
        if len(seen) >= MAX_QUERY_TERMS:
            break
    return list(seen)


def text_words(text: str) -> set[str]:
    """Every word of a text, folded as the index folds it: what a text holds, read whole
    (query_terms stops at MAX_QUERY_TERMS, a query's bound, not a text's)."""
    return set(_WORD.findall(fold(text)))


def literal_words(text: str) -> list[str]:
    """The one-letter words with symbols attached of a user's text, lower case, in order,
    without repeats ("C++ ou C#" -> ["c++", "c#"]): words FTS5 cannot tell from a letter,
    which a text search requires literally (fts_search's ``literals``)."""
    return list(dict.fromkeys(w.lower() for w in _LETTER_WITH_SYMBOLS.findall(text)))


def _literal_filters(column: str, literals: Sequence[str], *, any_term: bool) -> tuple[str, list]:
    """The filter ("AND (…)", params) keeping the rows whose ``column`` holds every literal
    (any one of them with ``any_term``), case-insensitively (the literals are ASCII)."""
    tests = " OR " if any_term else " AND "
    return (
        f"AND ({tests.join([f'instr(lower({column}), %s) > 0'] * len(literals))})",
        list(literals),
    )


def fts_search(
    text: str,
    *,
    channel: str | None = None,
    limit: int = 20,
    any_term: bool = False,
    terms: list[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    exclude_ids: list[int] | None = None,
    bounded: bool = True,
    literals: Sequence[str] = (),
) -> list[FtsHit]:
    """Messages matching the words of ``text``, best bm25 first.

    By default every word must appear; ``any_term`` accepts any of them (the
    retrieval pre-hook's OR query, ranked by bm25 so the rarest words weigh
    most). ``terms`` lets a caller pass words it already filtered. ``since`` /
    ``until`` bound the message date ([since, until)); ``exclude_ids`` skips rows.
    ``bounded``: an OR query counts its most frequent words only in pairs past OR_MATCH_BUDGET
    rows (forgetting does not: it must see every candidate). ``literals``
    (literal_words): text the content must hold as written, case aside (all of
    them, any with ``any_term``): "C++" is the token "c" of every "c'est" to FTS5.
    """
    words = query_terms(text) if terms is None else terms
    filters: list[str] = []
    filter_params: list[object] = []
    if literals:
        literal_filter, literal_params = _literal_filters("c.content", literals, any_term=any_term)
        filters.append(literal_filter)
        filter_params.extend(literal_params)
    if channel:
        filters.append("AND c.channel = %s")
        filter_params.append(channel)
    if since is not None:
        filters.append("AND c.created_at >= %s")
        filter_params.append(_db_datetime(since))
    if until is not None:
        filters.append("AND c.created_at < %s")
        filter_params.append(_db_datetime(until))
    join = "JOIN messages c ON c.id = messages_fts.rowid" if filters else ""
    if exclude_ids:
        # On the index's own rowid: excluding rows needs no join with messages.
        filters.append(f"AND messages_fts.rowid NOT IN ({', '.join(['%s'] * len(exclude_ids))})")
        filter_params.extend(int(i) for i in exclude_ids)
    # Rank first (only the rowid and bm25 of each match), then read the kept rows
    # by primary key. Selecting the columns (or FTS5's snippet()) in the ranking
    # query, or re-matching the kept rows, made FTS5 evaluate the whole match again:
    # 96 of the 110 ms of a text search at 300,000 messages.
    ranked = rank_rowids(
        "messages_fts",
        words,
        limit=limit,
        any_term=any_term,
        bounded=bounded,
        join=join,
        filters=filters,
        filter_params=filter_params,
    )
    if not ranked:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, channel, role, author, created_at, content FROM messages"
            f" WHERE id IN ({', '.join(['%s'] * len(ranked))})",
            [rowid for rowid, _ in ranked],
        )
        rows = {row[0]: row for row in cursor.fetchall()}
    return [
        FtsHit(
            message_id=rowid,
            channel=rows[rowid][1],
            role=rows[rowid][2],
            author=rows[rowid][3],
            created_at=_as_datetime(rows[rowid][4]),
            content=rows[rowid][5],
            score=float(score),
        )
        for rowid, score in ranked
        if rowid in rows
    ]


def _db_datetime(value: datetime) -> str:
    """A datetime as Django stores it in SQLite (naive UTC text), for raw comparisons."""
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ")


def _as_datetime(value: object) -> datetime:
    # Django stores aware datetimes as naive UTC text in SQLite; raw SQL gets
    # them back naive (or as text), so say UTC again.
    parsed = value if isinstance(value, datetime) else parse_datetime(str(value))
    if parsed is None:
        raise ValueError(f"not a datetime: {value!r}")
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass(frozen=True)
class FactFtsHit:
    fact_id: int
    score: float  # -bm25(): higher is better


@dataclass(frozen=True)
class MessageFtsHit:
    message_id: int
    score: float  # -bm25(): higher is better


def fts_rank_messages(
    terms: list[str], *, limit: int = 20, any_term: bool = True, bounded: bool = True
) -> list[MessageFtsHit]:
    """Ids of the owner's exchange messages matching the (already folded) terms, best bm25
    first: no join, no snippet. An observed room's messages (the index's ``room`` column)
    are not ranked: they would take the exchanges' places."""
    rows = rank_rowids(
        "messages_fts", terms, limit=limit, any_term=any_term, bounded=bounded, column="content"
    )
    return [MessageFtsHit(message_id=rowid, score=float(score)) for rowid, score in rows]


def fts_search_facts(
    terms: list[str],
    *,
    limit: int = 20,
    any_term: bool = True,
    bounded: bool = True,
    literals: Sequence[str] = (),
    where: Sequence[tuple[str, object]] = (),
) -> list[FactFtsHit]:
    """Facts whose key words or value match the (already folded) terms, best bm25 first.

    ``bounded``: an OR query counts its most frequent words only in pairs past OR_MATCH_BUDGET
    rows (forgetting does not: it must see every candidate). ``literals``: text the
    value must hold as written, case aside (as in fts_search). ``where``: filters on the
    fact's row ``t`` ("AND t.… %s", its value), in the ranking query itself, so a filter
    never empties the top (fact_filters_sql)."""
    rows = _rank_holding(
        "facts_fts", "core_memory", "value", terms, limit, any_term, bounded, literals, where
    )
    return [FactFtsHit(fact_id=rowid, score=float(score)) for rowid, score in rows]


def _rank_holding(
    index: str,
    table: str,
    column: str,
    terms: list[str],
    limit: int,
    any_term: bool,
    bounded: bool,
    literals: Sequence[str],
    where: Sequence[tuple[str, object]] = (),
) -> list[tuple]:
    """rank_rowids over ``index``, keeping the rows of ``table`` (``t``) whose ``column``
    holds the ``literals`` as written and that pass ``where`` ("AND t.… %s", its value):
    our constant names and SQL, never user text."""
    filters: list[str] = []
    filter_params: list[object] = []
    if literals:
        literal_filter, filter_params = _literal_filters(f"t.{column}", literals, any_term=any_term)
        filters = [literal_filter]
    for sql, value in where:
        filters.append(sql)
        filter_params.append(value)
    join = f"JOIN {table} t ON t.id = {index}.rowid" if filters else ""
    return rank_rowids(
        index,
        terms,
        limit=limit,
        any_term=any_term,
        bounded=bounded,
        join=join,
        filters=filters,
        filter_params=filter_params,
    )


def fact_filters_sql(
    *,
    channel: str = "",
    memory_type: str = "",
    subjects: Sequence[str] = (),
    since: datetime | None = None,
    until: datetime | None = None,
    date_column: str = "updated_at",
    now: datetime | None = None,
) -> list[tuple[str, object]]:
    """fts_search_facts's ``where`` for a search's filters (SearchFilters.fact_where): channel,
    memory type, any of the subjects, [since, until) on the fact's date, and not expired at
    ``now``. The one rule of those filters: fact_ids_passing applies it to other hits."""
    where: list[tuple[str, object]] = []
    if channel:
        where.append(("AND t.channel = %s", channel))
    if memory_type:
        where.append(("AND t.memory_type = %s", memory_type))
    if subjects:
        wanted = json.dumps(sorted({s.strip().lower() for s in subjects}))
        where.append(
            (
                "AND EXISTS (SELECT 1 FROM json_each(t.subjects) s"
                " WHERE s.value IN (SELECT value FROM json_each(%s)))",
                wanted,
            )
        )
    if since is not None:
        where.append((f"AND t.{date_column} >= %s", _db_datetime(since)))
    if until is not None:
        where.append((f"AND t.{date_column} < %s", _db_datetime(until)))
    if now is not None:
        where.append(("AND (t.expires_at IS NULL OR t.expires_at > %s)", _db_datetime(now)))
    return where


def fact_ids_passing(ids: Sequence[int], where: Sequence[tuple[str, object]]) -> set[int]:
    """Those of the facts ``ids`` that pass ``where`` (fact_filters_sql): the same rule
    for the facts found by meaning as for those ranked by words (search's filters)."""
    if not ids:
        return set()
    sql = "SELECT t.id FROM core_memory t WHERE t.id IN (SELECT value FROM json_each(%s)) "
    rows = raw_fetchall(
        sql + " ".join(clause for clause, _ in where),
        [json.dumps([int(pk) for pk in ids]), *(value for _, value in where)],
    )
    return {pk for (pk,) in rows}


@dataclass(frozen=True)
class SummaryFtsHit:
    summary_id: int
    score: float  # -bm25(): higher is better


def fts_rank_summaries(
    terms: list[str],
    *,
    limit: int = 20,
    any_term: bool = True,
    bounded: bool = True,
    literals: Sequence[str] = (),
    channel: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[SummaryFtsHit]:
    """Ids of the summaries still in the memory matching the (already folded) terms, best
    bm25 first (their own index: a summary is ten times a message's length, and bm25 weighs
    a word by the length of the rows it is ranked with). ``literals``: text the summary
    must hold as written, case aside (as in fts_search); ``channel``, ``since`` and
    ``until`` ([since, until), on the summary's date: the end of its period, else its
    creation) filter in the ranking query itself, so a filter never empties the top."""
    date = "COALESCE(t.period_end, t.created_at)"
    where = [
        (sql, value)
        for sql, value in (
            ("AND t.channel = %s", channel or None),
            (f"AND {date} >= %s", since and _db_datetime(since)),
            (f"AND {date} < %s", until and _db_datetime(until)),
        )
        if value is not None
    ]
    rows = _rank_holding(
        "summaries_fts",
        "memory_summary",
        "content",
        terms,
        limit,
        any_term,
        bounded,
        literals,
        where,
    )
    return [SummaryFtsHit(summary_id=rowid, score=float(score)) for rowid, score in rows]


# SQLite virtual-machine steps between two deadline checks (~0.1-0.5 ms of SQL).
DEADLINE_STEPS = 10_000


@contextlib.contextmanager
def sql_deadline(seconds: float):
    """Abort this connection's SQL running past ``seconds`` (raises OperationalError "interrupted").

    SQLite calls the progress handler every N virtual-machine steps; returning
    non-zero interrupts the statement. This gives the FTS source a real timeout
    in the calling thread. Every call of the handler takes the GIL back from
    whatever thread holds it, so it is called every DEADLINE_STEPS steps (a
    fraction of a millisecond), not every few microseconds.
    """
    connection.ensure_connection()
    raw = connection.connection
    deadline = time.monotonic() + seconds
    raw.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, DEADLINE_STEPS)
    try:
        yield
    finally:
        raw.set_progress_handler(None, 0)
