"""Full-text search over messages (SQLite FTS5). The only raw SQL of the project.

User text never reaches MATCH as syntax: it is cut into words the way FTS5's
unicode61 tokenizer cuts them, and each word is sent as a double-quoted string,
so quotes, parentheses, *, -, ^, :, AND/OR/NOT/NEAR and emoji are plain text.
"""

from __future__ import annotations

import contextlib
import functools
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

# Long pastes would make huge queries for no gain: only the first words count.
MAX_QUERY_TERMS = 64
# Rows an OR query may have FTS5 rank (the sum of its words' document counts). Past
# it the most frequent words count only where two of them meet (or_expression_within_budget):
# a word found in thousands of rows weighs least in bm25 and costs most (every row
# it matches is scored and sorted). 5,000 already changed 9 % of the top-16 at
# 20,000 messages for no gain in time; from 20,000 rows the plain OR costs tens
# of ms (text search at 300,000 messages: 140 ms), so the bound only caps that tail.
OR_MATCH_BUDGET = 20_000
# Frequent words paired in a bounded OR query (4 words: 6 pairs).
MAX_PAIRED_WORDS = 4
# Matches a bounded OR query ranks, past those its uncommon words find (_window_filter).
# bm25 costs about a microsecond a row (each row's size and positions are read): words
# that meet in thousands of rows cost that many however the words are chosen (at
# 100,000 memories "réunion" AND "lundi": 5,800 rows, 7 ms, of the keyword source's
# 11). When the words' rows add up to more than twice the window, only the newest
# RANK_WINDOW matches are ranked, beside every row that holds one of the query's
# uncommon words (those in RANK_WINDOW rows or fewer). At 100,000 memories: the
# keyword source p50 12 -> 8 ms, p95 24 -> 9 ms; 0.78 of the unbounded top-16 kept
# (0.84 with the budget alone); below 10,000 memories it rarely applies.
RANK_WINDOW = 2000

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


def _quoted(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def term_rows(table: str, terms: list[str], *, column: str | None = None) -> dict[str, int]:
    """How many rows of ``table`` hold each word (the index's own counts; absent: none).
    ``table`` is one of our constant names; ``column``: in that column only."""
    if not terms:
        return {}
    placeholders = ", ".join(["%s"] * len(terms))
    if column is None:
        return dict(
            raw_fetchall(
                f"SELECT term, doc FROM {table}_vocab WHERE term IN ({placeholders})", terms
            )
        )
    return dict(
        raw_fetchall(
            f"SELECT term, doc FROM {table}_col_vocab WHERE col = %s AND term IN ({placeholders})",
            [column, *terms],
        )
    )


def or_expression_within_budget(
    table: str,
    terms: list[str],
    *,
    budget: int | None = None,
    column: str | None = None,
    frequency: dict[str, int] | None = None,
) -> str:
    """The MATCH expression of an OR query on ``table`` that ranks about ``budget`` rows
    at most (OR_MATCH_BUDGET by default). ``table`` is one of our constant names;
    ``column``: the words' counts in that column only (a query filtered on it);
    ``frequency``: those counts when the caller has read them (term_rows).

    While the words' rows (document counts from the index) add up to the budget,
    it is the plain OR. Past it, the most frequent words, those whose rows bring
    the total past the budget, count only where two of them meet:
    ``"rare" OR ("f1" AND "f2") OR ("f1" AND "f3")…``. A row holding one frequent
    word and nothing else is what made the query cost, and it scores least of all
    (a frequent word's idf is low); every row found scores exactly as in the plain
    OR (bm25 scores each word alike in either form). A lone frequent word is left
    out (its rows holding a rarer word are found by that word) unless it is the
    only word the memory knows.
    """
    if len(terms) <= 1:
        return match_expression(terms, any_term=True)
    budget = OR_MATCH_BUDGET if budget is None else budget
    if frequency is None:
        frequency = term_rows(table, terms, column=column)
    total = sum(frequency.get(term, 0) for term in terms)
    frequent: list[str] = []
    for term in sorted(terms, key=lambda t: frequency.get(t, 0), reverse=True):
        if total <= budget:
            break
        frequent.append(term)
        total -= frequency.get(term, 0)
    if not frequent:
        return match_expression(terms, any_term=True)
    rare = [term for term in terms if term not in frequent]
    parts = [_quoted(term) for term in rare]
    if len(frequent) == 1:
        if total == 0:  # no other word is in the index: the frequent one is all there is
            parts.append(_quoted(frequent[0]))
    else:
        paired = frequent[-MAX_PAIRED_WORDS:]  # the least frequent of them
        parts.extend(
            f"({_quoted(a)} AND {_quoted(b)})"
            for i, a in enumerate(paired)
            for b in paired[i + 1 :]
        )
    return " OR ".join(parts) if parts else match_expression(terms, any_term=True)


def match_expression(terms: list[str], *, any_term: bool = False) -> str:
    """An FTS5 MATCH expression: every term quoted, joined by AND (default) or OR."""
    return (" OR " if any_term else " AND ").join(_quoted(term) for term in terms)


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
    ranked = _rank_rowids(
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


def _rank_rowids(
    table: str,
    terms: list[str],
    *,
    limit: int,
    any_term: bool,
    bounded: bool = True,
    join: str = "",
    filters: Sequence[str] = (),
    filter_params: Sequence[object] = (),
    column: str | None = None,
) -> list[tuple]:
    """(rowid, -bm25) of an FTS table's rows matching the folded terms, best first.

    Selects only what it ranks: on a large index a common word matches
    thousands of rows, and every selected column is computed for each of them
    before the sort; an OR query counts its most frequent words only in pairs
    past OR_MATCH_BUDGET rows. ``table`` is one of our two constant names, never
    user text; ``join`` and ``filters`` ("AND …" with ``filter_params``) are ours too.
    ``column``: match in that column only (one of the table's own, never user text).
    """
    if not terms or limit <= 0:
        return []
    window: tuple[str, list[object]] = ("", [])
    if any_term and bounded:
        frequency = term_rows(table, terms, column=column)
        expression = _in_column(
            or_expression_within_budget(table, terms, column=column, frequency=frequency), column
        )
        # Below twice the window, ranking every match costs less than finding the window.
        if sum(frequency.values()) > 2 * RANK_WINDOW:
            uncommon = [term for term in terms if 0 < frequency.get(term, 0) <= RANK_WINDOW]
            window = _window_filter(
                table, expression, uncommon, column, join, filters, filter_params
            )
    else:
        expression = _in_column(match_expression(terms, any_term=any_term), column)
    sql = [
        f"SELECT {table}.rowid, -bm25({table}) FROM {table}",
        join,
        f"WHERE {table} MATCH %s",
        *filters,
        window[0],
        f"ORDER BY bm25({table}), {table}.rowid DESC LIMIT %s",
    ]
    return raw_fetchall("\n".join(sql), [expression, *filter_params, *window[1], int(limit)])


def _in_column(expression: str, column: str | None) -> str:
    return expression if column is None else f"{{{column}}} : ({expression})"


def _window_filter(
    table: str,
    expression: str,
    uncommon: list[str],
    column: str | None,
    join: str,
    filters: Sequence[str],
    filter_params: Sequence[object],
) -> tuple[str, list[object]]:
    """The filter ("AND …", params) keeping a bounded query's rows to rank: its newest
    RANK_WINDOW matches, and every match holding an uncommon word. Empty when the query
    matches no more than the window.

    Finding the window's oldest row walks the matches newest first without scoring
    them (a tenth of a microsecond a row); the rowid test leaves each row's score as it
    was (bm25's word weights are counted over the whole index)."""
    found = raw_fetchall(
        "\n".join(
            [
                f"SELECT {table}.rowid FROM {table}",
                join,
                f"WHERE {table} MATCH %s",
                *filters,
                f"ORDER BY {table}.rowid DESC LIMIT 1 OFFSET %s",
            ]
        ),
        [expression, *filter_params, RANK_WINDOW - 1],
    )
    if not found:
        return "", []
    oldest = found[0]
    if not uncommon:
        return f"AND {table}.rowid >= %s", [oldest[0]]
    return (
        f"AND ({table}.rowid >= %s OR {table}.rowid IN"
        f" (SELECT rowid FROM {table} WHERE {table} MATCH %s))",
        [oldest[0], _in_column(match_expression(uncommon, any_term=True), column)],
    )


def fts_rank_messages(
    terms: list[str], *, limit: int = 20, any_term: bool = True, bounded: bool = True
) -> list[MessageFtsHit]:
    """Ids of the owner's exchange messages matching the (already folded) terms, best bm25
    first: no join, no snippet. An observed room's messages (the index's ``room`` column)
    are not ranked: they would take the exchanges' places."""
    rows = _rank_rowids(
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
) -> list[FactFtsHit]:
    """Facts whose key words or value match the (already folded) terms, best bm25 first.

    ``bounded``: an OR query counts its most frequent words only in pairs past OR_MATCH_BUDGET
    rows (forgetting does not: it must see every candidate). ``literals``: text the
    value must hold as written, case aside (as in fts_search)."""
    join, filters, filter_params = "", [], []
    if literals:
        join = "JOIN core_memory f ON f.id = facts_fts.rowid"
        literal_filter, filter_params = _literal_filters("f.value", literals, any_term=any_term)
        filters = [literal_filter]
    rows = _rank_rowids(
        "facts_fts",
        terms,
        limit=limit,
        any_term=any_term,
        bounded=bounded,
        join=join,
        filters=filters,
        filter_params=filter_params,
    )
    return [FactFtsHit(fact_id=rowid, score=float(score)) for rowid, score in rows]


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
