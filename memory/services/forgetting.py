"""Forgetting a topic on request: exact, previewable, undoable for a while, then final.

``topic_forget_preview`` shows what a forget would take (nothing changes);
``topic_forget`` takes it: the exchanges (a user message and its replies),
facts and summaries *about* the topic (memory.services.forgetting_select),
and the history lines of the facts it leaves that hold every word of the
topic, are attached to a ``Forgetting`` row. From that moment no read path returns
them: the default managers hide them (history, retrieval, search, extraction,
compaction, the dashboard), the FTS5 views and triggers drop them, the
indexing machine removes their points (their version is bumped; the points
are also deleted at once when Qdrant answers), ``reindex`` skips them, and
the retrieval logs that showed them are redacted. ``forgetting_restore``
brings everything back (T1 rows, FTS, points) during the retention window
(``MemorySettings.forget_retention_days``, 7 by default); after it,
``forgettings_purge`` deletes the rows (facts with their history) and the
points for good, and redacts the topic itself.

The exchange that asks to forget (and its reply) never feeds memory:
``forget_exchange_exclude`` marks it, and the answer given to the LLM
(``ForgetResult.as_text``) names no forgotten content. It names the topic, so the
forget records it (``Forgetting.request_message_ids``: the turn asking, and the dry
run it confirms) and its purge deletes it with what it took; an undo leaves it out
of memory.

Obsidian notes are the owner's vault: never modified.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from memory.exceptions import MemoryServiceError
from memory.models import (
    Actor,
    Fact,
    FactRevision,
    Forgetting,
    ForgettingState,
    Message,
    MessageRole,
    RevisionReason,
    Summary,
)
from memory.services.copies_redaction import redact_copies
from memory.services.erased_marks import marks_record
from memory.services.forgetting_plan import (
    ForgetPlan,
    ForgetResult,
    context_notes_about,
    plan_of,
)
from memory.services.forgetting_restated import key_back, look_alike_aside
from memory.services.forgetting_select import (  # re-exported
    TOPIC_EMPTY_MESSAGE,
    TOPIC_TOO_VAGUE_MESSAGE,
    Selection,
    restricted,
    select,
    taken_since,
    topic_terms,
)
from memory.services.forgetting_summaries import summaries_given_back, summaries_taken
from memory.services.indexing import KIND_FACT, KIND_MESSAGE, KIND_SUMMARY, rows_changed
from memory.services.removal import remove_deleted_points, remove_points

__all__ = [
    "TOPIC_EMPTY_MESSAGE",
    "TOPIC_TOO_VAGUE_MESSAGE",
    "ForgetPlan",
    "ForgetResult",
    "forget_exchange_exclude",
    "forgetting_purge",
    "forgetting_restore",
    "forgetting_take",
    "forgettings_purge",
    "topic_forget",
    "topic_forget_preview",
    "topic_terms",
]

logger = logging.getLogger(__name__)

PURGED_TOPIC = "[sujet effacé]"
FORGET_NOTE = "oubli d'un sujet (n° {id})"
ALREADY_PURGED_MESSAGE = "Cet oubli a été effacé définitivement : il ne peut plus être annulé."
NOT_ACTIVE_MESSAGE = "Cet oubli a déjà été annulé."
WINDOW_PASSED_MESSAGE = (
    "Le délai d'annulation de cet oubli est passé : il est définitif (ce qu'il a pris sera "
    "effacé au prochain passage de la purge)."
)
FORGETTING_NOT_FOUND_MESSAGE = "Aucun oubli n° {id}."


def _clean_topic(topic: str) -> str:
    return " ".join((topic or "").split())


def topic_forget_preview(*, topic: str, keep_message_ids: Iterable[int] = ()) -> ForgetPlan:
    """The dry run: what ``topic_forget`` would take now. Changes nothing."""
    topic = _clean_topic(topic)
    plan = plan_of(topic, select(topic, keep=keep_message_ids))
    plan.notes, plan.notes_unread = context_notes_about(topic)
    return plan


def topic_forget(
    *,
    topic: str,
    actor: str = Actor.AGENT,
    keep_message_ids: Iterable[int] = (),
    only: Iterable[str] | None = None,
) -> ForgetResult:
    """Forget what is about ``topic`` (see the module docstring).

    ``keep_message_ids``: never taken. The agent's are the user messages of the chat turn
    asking (agent.tools_forget): recorded on the forget as its request (``_request_ids``).
    ``only``: the ids of the preview the owner confirmed ("message:12",
    "fact:3", "summary:5"): nothing outside it is taken, even if a new selection
    (an LLM judge) would now say more.

    Raises MemoryServiceError for an empty or too vague topic. Never blocked by
    Qdrant: T1 is the truth, every read path hydrates from it, and the indexing
    machine removes the points once Qdrant answers.
    """
    from memory.selectors import memory_settings_get

    topic = _clean_topic(topic)
    confirmed = only is not None  # ids sent back: a dry run's, confirmed
    chosen = select(topic, keep=keep_message_ids)
    # The caller's scope (its preview's): for the agent, a fact already forgotten stays as
    # it is, restorable by the owner, and the counts answered say nothing of it. Ids sent
    # back take nothing outside it, and those it does not hold are named in the answer.
    plan = plan_of(topic, chosen)
    scope = plan.for_agent().item_ids() if actor == Actor.AGENT else plan.item_ids()
    not_taken = [] if only is None else sorted(set(only) - set(scope))
    if actor == Actor.AGENT:
        only = scope if only is None else sorted(set(only) & set(scope))
    if only is not None:  # else the plan above is the one taken
        chosen = restricted(chosen, only)
        plan = plan_of(topic, chosen)
    retention = timedelta(days=memory_settings_get().forget_retention_days)
    with transaction.atomic():  # the write lock: what no other forget took since, taken
        if taken := taken_since(chosen):
            not_taken = sorted({*not_taken, *taken}) if only is not None else not_taken
            chosen = restricted(chosen, set(plan.item_ids()) - taken)
            # Nor what restricted() adds back as drawn from a message still free.
            chosen.facts = [f for f in chosen.facts if f"fact:{f.id}" not in taken]
            chosen.summaries = [s for s in chosen.summaries if f"summary:{s.id}" not in taken]
            plan = plan_of(topic, chosen)
        if plan.empty:
            return ForgetResult(
                topic, None, plan.counts(), None, chosen.selection, ids_not_taken=not_taken
            )
        forgetting = forgetting_take(
            topic=topic,
            chosen=chosen,
            actor=actor,
            retention=retention,
            terms=topic_terms(topic),
            request_ids=_request_ids(keep_message_ids, confirmed=confirmed)
            if actor == Actor.AGENT
            else (),
        )
    logger.info("forgot topic n°%s: %s", forgetting.id, plan.counts())
    return ForgetResult(
        topic,
        forgetting.id,
        plan.counts(),
        forgetting.purge_after,
        chosen.selection,
        ids_not_taken=not_taken,
    )


def _request_ids(message_ids: Iterable[int], *, confirmed: bool) -> list[int]:
    """The user messages that asked for a forget: those of the turn asking and, when it
    confirms a dry run (``confirmed``: it sends back a preview's ids), the dry run's
    turns, that is the channel's messages kept out of memory (every one of them asked to
    forget) during a dry run's life (agent.tools_forget.FORGET_PREVIEW_KEEP_S) that no
    other forget records. Matched by their place, never by their words: the owner's
    request need not hold the tool's topic."""
    ids = sorted({int(i) for i in message_ids})
    if not ids or not confirmed:
        return ids
    from agent.tools_forget import FORGET_PREVIEW_KEEP_S

    first = Message.all_objects.filter(pk__in=ids).order_by("id").first()
    if first is None:
        return ids
    since = first.created_at - timedelta(seconds=FORGET_PREVIEW_KEEP_S)
    recorded = {
        int(pk)
        for asked in Forgetting.objects.filter(created_at__gte=since).values_list(
            "request_message_ids", flat=True
        )
        for pk in asked or ()
    }
    earlier = Message.all_objects.filter(
        channel=first.channel,
        role=MessageRole.USER,
        memory_excluded=True,
        forgetting__isnull=True,
        created_at__gte=since,
        pk__lt=first.pk,
    ).values_list("id", flat=True)
    return sorted({*ids, *(pk for pk in earlier if pk not in recorded)})


def request_messages(forgetting: Forgetting):
    """The messages of the turns that asked for ``forgetting`` and their replies, kept out
    of memory (forget_exchange_exclude): never a message in memory, nor one another forget
    took (its purge deletes it)."""
    ids = forgetting.request_message_ids or []
    return Message.all_objects.filter(
        Q(pk__in=ids) | Q(reply_to_id__in=ids), memory_excluded=True, forgetting__isnull=True
    )


@transaction.atomic
def forgetting_take(
    *,
    topic: str,
    chosen: Selection,
    actor: str,
    retention: timedelta,
    terms: Iterable[str] = (),
    points: bool = True,
    request_ids: Iterable[int] = (),
) -> Forgetting:
    """Attach the chosen rows to a new ``Forgetting``: out of every read path from now on.

    The one implementation of "take it out of the memory": the forget of a topic
    and the hard delete (memory.services.erasing) both go through it. ``terms``:
    retrieval logs whose message preview holds them all are redacted too.
    ``request_ids``: the user messages that asked for it (``_request_ids``), recorded
    for its purge.
    """
    plan = plan_of(topic, chosen)
    now = timezone.now()
    forgetting = Forgetting.objects.create(
        topic=topic,
        actor=actor,
        selection=chosen.selection,
        counts=plan.counts(),
        created_at=now,
        purge_after=now + retention,
        request_message_ids=sorted({int(i) for i in request_ids}),
    )
    note = FORGET_NOTE.format(id=forgetting.id)
    # A reply saved since the selection was read (before this transaction: the LLM judge
    # takes seconds) to a message taken here goes with its exchange; a later one joins
    # it when saved (messages.message_save).
    late = (
        Message.all_objects.filter(reply_to_id__in=chosen.message_ids, forgetting__isnull=True)
        .exclude(pk__in=list(chosen.members))
        .values_list("id", flat=True)
    )
    message_ids = {*chosen.message_ids, *late}
    Message.all_objects.filter(pk__in=message_ids).update(forgetting=forgetting)
    fact_ids = [f.id for f in chosen.facts]
    _revisions_add(chosen.facts, actor=actor, reason=RevisionReason.FORGOTTEN, note=note)
    # A fact already forgotten alone keeps its date: an undo gives it back forgotten.
    Fact.all_objects.filter(pk__in=fact_ids, forgotten=False).update(
        forgotten=True, forgotten_at=now
    )
    Fact.all_objects.filter(pk__in=fact_ids).update(forgetting=forgetting)
    summary_ids = [s.id for s in chosen.summaries]
    Summary.all_objects.filter(pk__in=summary_ids).update(forgetting=forgetting)
    summaries_taken(chosen.summaries)  # their other messages back to the history
    # The facts it leaves may have been about the topic once: those lines of their history go.
    FactRevision.all_objects.filter(pk__in=[line.id for line in chosen.revisions]).update(
        forgetting=forgetting
    )
    rows_changed(KIND_MESSAGE, list(chosen.exchanges))
    rows_changed(KIND_FACT, fact_ids)
    rows_changed(KIND_SUMMARY, summary_ids)
    old_values, old_keys = _old_texts(chosen.revisions)
    redact_copies(
        items={
            *(f"message:{i}" for i in {*chosen.exchanges, *message_ids}),
            *(f"fact:{i}" for i in fact_ids),
            *(f"summary:{i}" for i in summary_ids),
        },
        terms=list(terms),
        # A logged preview is a message's start: it may not hold the topic's words.
        message_texts=Message.all_objects.filter(
            pk__in=chosen.message_ids, role=MessageRole.USER
        ).values_list("content", flat=True),
        old_values=old_values,
        old_keys=old_keys,
    )
    if points:  # (an erasure purges at once: its purge removes them)
        # At once when Qdrant answers; the rows stay, so the indexing machine (their
        # version bumped above) removes the points anyway, even if this call is lost.
        roots = list(chosen.exchanges)
        transaction.on_commit(lambda: remove_points(roots, fact_ids, summary_ids))
    return forgetting


def _old_texts(lines) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(fact id, value) and (fact id, key) of the history lines a forget takes from facts
    it leaves (a key: an owner's rename), but those the facts still hold (the forget left
    them in view)."""
    current = {
        pk: (key, value)
        for pk, key, value in Fact.all_objects.filter(
            pk__in={line.fact_id for line in lines}
        ).values_list("id", "key", "value")
    }
    values = [
        (line.fact_id, value)
        for line in lines
        for value in (line.old_value, line.new_value)
        if value and value != current.get(line.fact_id, ("", ""))[1]
    ]
    keys = [
        (line.fact_id, key)
        for line in lines
        for key in (line.changes or {}).get("key") or []
        if isinstance(key, str) and key and key != current.get(line.fact_id, ("", ""))[0]
    ]
    return values, keys


def _revisions_add(facts: Iterable[Fact], *, actor: str, reason: str, note: str) -> None:
    """One revision per fact a forget takes or gives back (the value is unchanged)."""
    FactRevision.objects.bulk_create(
        FactRevision(
            fact=fact,
            actor=actor,
            reason=reason,
            old_value=fact.value,
            new_value=fact.value,
            note=note,
        )
        for fact in facts
    )


def forgetting_lock(forgetting_id: int) -> Forgetting:
    try:
        return Forgetting.objects.select_for_update().get(pk=forgetting_id)
    except Forgetting.DoesNotExist:
        raise MemoryServiceError(FORGETTING_NOT_FOUND_MESSAGE.format(id=forgetting_id)) from None


@transaction.atomic
def forgetting_restore(*, forgetting_id: int, actor: str) -> Forgetting:
    """Undo a forget within its retention window: rows, FTS entries and points come back."""
    forgetting = forgetting_lock(forgetting_id)
    if forgetting.state == ForgettingState.PURGED:
        raise MemoryServiceError(ALREADY_PURGED_MESSAGE)
    if forgetting.state != ForgettingState.ACTIVE:
        raise MemoryServiceError(NOT_ACTIVE_MESSAGE)
    if not forgetting.undoable:  # its window passed, the hourly purge not run yet
        raise MemoryServiceError(WINDOW_PASSED_MESSAGE)
    roots = list(
        Message.all_objects.filter(forgetting=forgetting, reply_to__isnull=True).values_list(
            "id", flat=True
        )
    )
    messages = Message.all_objects.filter(forgetting=forgetting)
    all_ids = list(messages.values_list("id", "reply_to_id"))
    messages.update(forgetting=None)
    facts = list(Fact.all_objects.filter(forgetting=forgetting))
    # A fact forgotten alone before this forget took it goes back to being forgotten alone.
    back = [f for f in facts if f.forgotten_at is None or f.forgotten_at >= forgetting.created_at]
    _revisions_add(
        back, actor=actor, reason=RevisionReason.RESTORED, note=f"oubli n° {forgetting.id} annulé"
    )
    Fact.all_objects.filter(pk__in=[f.id for f in back]).update(
        forgetting=None, forgotten=False, forgotten_at=None
    )
    Fact.all_objects.filter(pk__in=[f.id for f in facts]).update(forgetting=None)
    for fact in facts:
        key_back(fact, forgetting)
    for fact in facts:
        look_alike_aside(fact, forgetting)
    summaries = list(Summary.all_objects.filter(forgetting=forgetting).values_list("id", flat=True))
    Summary.all_objects.filter(pk__in=summaries).update(forgetting=None)
    summaries_given_back(summaries, forgetting)
    FactRevision.all_objects.filter(forgetting=forgetting).update(forgetting=None)
    rows_changed(KIND_MESSAGE, sorted({r or m for m, r in all_ids} | set(roots)))
    rows_changed(KIND_FACT, [f.id for f in facts])
    rows_changed(KIND_SUMMARY, summaries)
    # The extractions that waited for this undo (agent.extraction_jobs) run now.
    from agent.extraction_jobs import extraction_jobs_reading
    from memory.services.jobs import jobs_send

    jobs_send(extraction_jobs_reading(m for m, _ in all_ids))
    forgetting.state = ForgettingState.RESTORED
    forgetting.restored_at = timezone.now()
    forgetting.save(update_fields=["state", "restored_at"])
    return forgetting


def forgettings_purge(*, now: datetime | None = None) -> int:
    """Delete for good what forgets past their retention window took. Returns forgets purged."""
    now = now or timezone.now()
    purged = 0
    due = Forgetting.objects.filter(state=ForgettingState.ACTIVE, purge_after__lte=now)
    for forgetting_id in list(due.values_list("id", flat=True)):
        with transaction.atomic():
            forgetting = forgetting_lock(forgetting_id)
            if forgetting.state != ForgettingState.ACTIVE:
                continue
            forgetting_purge(forgetting, now=now)
        purged += 1
    return purged


def forgetting_purge(forgetting: Forgetting, *, now: datetime | None = None) -> None:
    """Delete for good what ``forgetting`` took: rows (facts with their history), FTS
    entries (by the triggers), points (a durable job written here, run at commit); its
    topic is redacted. The exchanges that asked for it (``request_messages``) go too:
    they name the topic (QA 9a: they stayed word for word once the topic was redacted),
    as do those of the undone forgets of the topic (``_undone_topics_redact``).

    The caller holds the row (``forgetting_lock``, in a transaction) and checked its state.
    """
    undone = _undone_topics_redact(forgetting.topic)
    asked = [request_messages(f) for f in (forgetting, *undone)]
    asked_ids = {pk for rows in asked for pk in rows.values_list("id", flat=True)}
    messages = Message.all_objects.filter(Q(forgetting=forgetting) | Q(pk__in=asked_ids))
    roots = list(messages.filter(reply_to__isnull=True).values_list("id", flat=True))
    facts = list(Fact.all_objects.filter(forgetting=forgetting).values_list("id", flat=True))
    summaries = list(Summary.all_objects.filter(forgetting=forgetting).values_list("id", flat=True))
    history = FactRevision.all_objects.filter(forgetting=forgetting).exists()
    marks_record(
        facts=Fact.all_objects.filter(pk__in=facts),
        revisions=FactRevision.all_objects.filter(Q(fact_id__in=facts) | Q(forgetting=forgetting)),
        messages=messages,
        summaries=Summary.all_objects.filter(pk__in=summaries),
        # Dated by the forget: a statement from a message written since is news.
        now=forgetting.created_at,
    )
    FactRevision.all_objects.filter(fact_id__in=facts).delete()
    FactRevision.all_objects.filter(forgetting=forgetting).delete()
    Fact.all_objects.filter(pk__in=facts).delete()
    Summary.all_objects.filter(pk__in=summaries).delete()
    # Replies first: nothing may point at a deleted row.
    messages.filter(reply_to__isnull=False).delete()
    messages.delete()
    forgetting.topic = PURGED_TOPIC
    forgetting.request_message_ids = []  # deleted
    forgetting.state = ForgettingState.PURGED
    forgetting.purged_at = now or timezone.now()
    forgetting.save(update_fields=["topic", "request_message_ids", "state", "purged_at"])
    remove_deleted_points(roots, facts, summaries, history=history)


def _undone_topics_redact(topic: str) -> list[Forgetting]:
    """The undone forgets of ``topic`` lose it with the forget purged (QA read the erased
    topic in their rows: GET /forgettings, /memory, the admin); returned as they were, so
    the caller deletes the exchanges that asked for them. Of ``topic`` means one holds
    every word of the other, under the forget's word rule (a plural s/x ignored:
    « opérations du genou », « opération du genou de maman »). A forget still undoable
    keeps its own until its purge."""
    from memory.services.forgetting_select import contains_all

    terms = topic_terms(topic)
    if not terms:
        return []
    same = [
        undone
        for undone in Forgetting.objects.filter(state=ForgettingState.RESTORED)
        if topic_terms(undone.topic)
        and (contains_all(undone.topic, terms) or contains_all(topic, topic_terms(undone.topic)))
    ]
    Forgetting.objects.filter(pk__in=[f.pk for f in same]).update(
        topic=PURGED_TOPIC, request_message_ids=[]
    )
    return same


@transaction.atomic
def forget_exchange_exclude(*, message_ids: Iterable[int]) -> int:
    """The exchange that asked to forget never feeds memory (it names the topic).

    Its messages and their replies are marked ``memory_excluded``: out of the
    history, retrieval, search, FTS, extraction and compaction; their points go.
    """
    ids = {int(i) for i in message_ids}
    rows = Message.all_objects.filter(pk__in=ids)
    texts = list(rows.values_list("content", flat=True))
    ids |= set(Message.all_objects.filter(reply_to_id__in=ids).values_list("id", flat=True))
    changed = Message.all_objects.filter(pk__in=ids).update(memory_excluded=True)
    rows_changed(KIND_MESSAGE, sorted(ids))
    redact_copies(items={f"message:{i}" for i in ids}, message_texts=texts)
    return changed


def forget_mark() -> tuple[int, int]:
    """The newest forget and fact revision committed now, for ``forgotten_after``. SQLite
    gives ids in commit order (one writer at a time, AUTOINCREMENT): a forget whose
    transaction is still open gets an id above the mark even when its date is earlier (it
    took its time, then committed while an LLM call ran)."""
    return (
        Forgetting.objects.aggregate(top=Max("id"))["top"] or 0,
        FactRevision.all_objects.aggregate(top=Max("id"))["top"] or 0,
    )


def forgotten_after(mark: tuple[int, int]) -> bool:
    """Whether a topic or a fact was forgotten, erased or expired after ``mark``."""
    forgetting_top, revision_top = mark
    return (
        Forgetting.objects.filter(pk__gt=forgetting_top).exists()
        or FactRevision.all_objects.filter(
            pk__gt=revision_top, reason__in=(RevisionReason.FORGOTTEN, RevisionReason.EXPIRED)
        ).exists()
    )
