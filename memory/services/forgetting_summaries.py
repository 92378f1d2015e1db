"""What a compaction summary taken by a forget stood for: its other messages.

A compaction marks the messages it summarised ``compacted``: they leave the history the
LLM receives, and the summary stands for them. A forget that takes the summary (it spoke
of the topic) would leave the rest of those messages, never forgotten, out of the history
with nothing standing for them (QA 5: the cellar key, the physio and the gate code went
with the trip). They come back to the history instead, and the channel's next compaction
summarises them again, without what was forgotten; the undo gives the summary back and
compacts again those it stood for that no compaction took since.

A summary stands for the messages of its channel written within its period (compaction
dates it by its messages' own dates). Periods of one channel do not overlap, but for a
message recorded late with an older date: back in the history, it is summarised again.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import reduce
from operator import or_

from django.db.models import Q

from memory.models import Forgetting, Message, Summary


def summary_covers(summary: Summary, channel: str, at) -> bool:
    """Whether a compaction's summary stands for a message of ``channel`` written ``at``:
    one rule with ``_period``, the same messages in Python."""
    if summary.channel != channel or summary.period_start is None:
        return False
    return summary.period_start <= at <= (summary.period_end or summary.created_at)


def _period(summary: Summary) -> Q:
    """summary_covers as a filter on messages."""
    return Q(
        channel=summary.channel,
        created_at__gte=summary.period_start,
        created_at__lte=summary.period_end or summary.created_at,
    )


def _stood_for(summaries: Iterable[Summary]) -> Q | None:
    """The messages these summaries stand for."""
    dated = [s for s in summaries if s.period_start is not None]
    return reduce(or_, (_period(s) for s in dated)) if dated else None


def summaries_taken(summaries: Iterable[Summary]) -> int:
    """After a forget took these summaries: the live messages they stood for go back to
    the history (uncompacted). Returns how many."""
    stood_for = _stood_for(summaries)
    if stood_for is None:
        return 0
    return Message.objects.filter(stood_for, compacted=True).update(compacted=False)


def summaries_given_back(summary_ids: Iterable[int], forgetting: Forgetting) -> int:
    """After an undo gave these summaries back: the messages they stood for, written before
    the forget and not compacted since, are compacted again. Returns how many."""
    stood_for = _stood_for(list(Summary.objects.filter(pk__in=list(summary_ids))))
    if stood_for is None:
        return 0
    return Message.objects.filter(
        stood_for, compacted=False, created_at__lte=forgetting.created_at
    ).update(compacted=True)
