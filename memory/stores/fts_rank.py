"""The keyword indexes' ranking: each row FTS5 matches, scored by bm25, within a cost.

An OR query of common words matches most of a large index, and bm25 costs
about a microsecond a row: the most frequent words count only in pairs past
OR_MATCH_BUDGET rows, and past twice RANK_WINDOW matches only the newest are
ranked, beside every row holding an uncommon word. Used by the searches of
memory.stores.fts. Table and column names here are ours, never user text; user
words reach MATCH only quoted (_quoted).
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.stores.compiled import raw_fetchall

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
# uncommon words (those in RANK_WINDOW rows or fewer). At 100,000 memories, a window
# of 2,000: the keyword source p50 12 -> 8 ms, p95 24 -> 9 ms; 0.78 of the unbounded
# top-16 kept (0.84 with the budget alone). 1,000 (2026-12-01, 200 questions, the same
# store, alternating): the messages' query p50 3.58 -> 2.52 ms, the facts' 2.89 -> 1.88,
# 0.784 -> 0.765 of the unbounded top-16 kept (700: 2.26 ms, 0.760). Below 10,000
# memories it rarely applies.
RANK_WINDOW = 1000


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


def rank_rowids(
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
    past OR_MATCH_BUDGET rows. ``table`` is one of our constant names, never
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
