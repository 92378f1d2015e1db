"""The copies a forget cannot delete keep no forgotten text: the retrieval logs (their
memories and message previews), the jobs not done yet (their saved candidates and tool
results) and the admin's history of actions (memory.services.forgetting, facts, erasing
and erased_replay call ``redact_copies``)."""

from __future__ import annotations

from collections.abc import Iterable

from memory.models import MemoryRetrieval
from memory.services.preview_rule import REDACTED, PreviewRule
from memory.services.removal import memories_present

# A logged memory shows a fact by the start of its value: this much of an old value names it.
OLD_VALUE_PROBE_CHARS = 60


def redact_copies(
    *,
    items: set[str],
    terms: list[str] = (),
    message_texts: Iterable[str] = (),
    old_values: Iterable[tuple[int, str]] = (),
    old_keys: Iterable[tuple[int, str]] = (),
):
    """The copies a forget cannot delete keep no forgotten text: the retrieval logs (their
    memories and message previews), the extraction jobs not done yet and the admin's
    history of actions. ``old_values``: (fact id, value) of the history lines a forget
    took from a fact it leaves, ``old_keys`` (fact id, key) the keys of its renames; a copy
    showing that fact by such a value or key goes too (QA, review: an old value or key
    about the topic stayed in the log and on the admin's index)."""
    old_values = [(f"fact:{pk}", value) for pk, value in old_values if value and value.strip()]
    old_keys = [(f"fact:{pk}", key) for pk, key in old_keys if key]
    _redact_logs(
        items=items,
        rule=PreviewRule.of(terms=[terms] if terms else [], texts=message_texts),
        old_values=old_values,
        old_keys=old_keys,
    )
    _redact_jobs(items=items, terms=terms)
    _redact_admin_log(items, old_values, old_keys)


def _redact_admin_log(
    items: set[str], old_values: list[tuple[str, str]] = (), old_keys: list[tuple[str, str]] = ()
) -> None:
    """The admin's history of actions names each row it changed by its text (a fact's
    "key = value", a message's start): those lines no longer name a row a forget took,
    nor a fact by a value it took from its history."""
    from django.contrib.admin.models import LogEntry
    from django.contrib.contenttypes.models import ContentType
    from django.db.models import Q

    from memory.models import AgentItem, Fact, Message, Summary

    models = {"fact": (Fact, AgentItem), "message": (Message,), "summary": (Summary,)}
    ids: dict[str, list[str]] = {kind: [] for kind in models}
    for item in items:
        kind, _, raw = item.partition(":")
        if kind in ids:
            ids[kind].append(raw)
    types = {
        kind: list(
            ContentType.objects.get_for_models(*models[kind], for_concrete_models=False).values()
        )
        for kind, pks in ids.items()
        if pks or (kind == "fact" and (old_values or old_keys))
    }
    lines = Q()
    for kind, pks in ids.items():
        if pks:
            lines |= Q(content_type__in=types[kind], object_id__in=pks)
    for item, value in old_values:  # Fact.__str__: "key = " and the value's first 60
        lines |= Q(
            content_type__in=types["fact"],
            object_id=item.partition(":")[2],
            object_repr__endswith=f" = {value[:60]}",
        )
    for item, key in old_keys:  # Fact.__str__: "key = …"
        lines |= Q(
            content_type__in=types["fact"],
            object_id=item.partition(":")[2],
            object_repr__startswith=f"{key} = ",
        )
    if lines:
        LogEntry.objects.filter(lines).exclude(object_repr=REDACTED).update(object_repr=REDACTED)


def _redact_logs(
    *,
    items: set[str],
    rule: PreviewRule,
    old_values: list[tuple[str, str]] = (),
    old_keys: list[tuple[str, str]] = (),
) -> None:
    from django.db.models import Q, TextField
    from django.db.models.functions import Cast

    probes = [(item, " ".join(value.split())[:OLD_VALUE_PROBE_CHARS]) for item, value in old_values]
    from memory.services.retrieval.candidates import fact_line

    # A logged memory starts with its key as words (retrieval.candidates.fact_line).
    starts = [(item, fact_line(key, "")) for item, key in old_keys]
    rows = MemoryRetrieval.objects.all()
    if not rule:
        named_items = items | {item for item, _ in [*probes, *starts]}
        if not named_items:
            return
        # Only the rows naming one of the items (their JSON holds its quoted id): a single
        # fact's forget does not read every log row in Python.
        named = Q()
        for item in named_items:
            named |= Q(memories_text__contains=f'"{item}"')
        rows = rows.annotate(memories_text=Cast("memories", TextField())).filter(named)
    for row in rows.iterator():
        changed = False
        for memory in row.memories:
            text, item = memory.get("text") or "", memory.get("id")
            if text == REDACTED:
                continue
            if (
                item in items
                or any(item == i and probe in text for i, probe in probes)
                or any(item == i and text.startswith(start) for i, start in starts)
            ):
                memory["text"] = REDACTED
                changed = True
        if rule.hits(row.message_preview):
            row.message_preview = REDACTED
            changed = True
        if changed:
            row.save(update_fields=["memories", "message_preview"])


def _redact_jobs(*, items: set[str], terms: Iterable[str]) -> None:
    """A job's payload (shown by the admin) keeps nothing a forget took. An extraction's
    tool results go (a run after a forget drops them: agent.extraction_jobs), and so do the
    LLM's saved candidates when the exchange was taken, or stating a forgotten fact's
    key, or holding every word of the topic (a run stores none of them again). A digest's
    saved answer goes when its batch lost a message or one of its facts was taken: the
    batch the next run reads differs, and it asks the LLM again."""
    from memory.models import Fact, Job, JobKind, JobState
    from memory.services.forgetting_select import contains_all

    terms = list(terms)
    fact_ids = [int(i.split(":")[1]) for i in items if i.startswith("fact:")]
    keys = set(Fact.all_objects.filter(pk__in=fact_ids).values_list("key", flat=True))

    def taken(candidate: dict) -> bool:
        text = f"{candidate.get('key', '')} {candidate.get('value', '')}"
        return candidate.get("key") in keys or bool(terms and contains_all(text, terms))

    jobs = list(
        Job.objects.filter(kind__in=[JobKind.EXTRACT, JobKind.DIGEST]).exclude(state=JobState.DONE)
    )
    asked = {f"message:{i}" for job in jobs for i in _job_messages(job.payload)}
    present = memories_present(asked)
    for job in jobs:
        payload = dict(job.payload)
        exchange_gone = any(f"message:{i}" not in present for i in _job_messages(payload))
        saved = payload.get("digest_batch") or {}
        found = [item.get("candidate") or {} for item in saved.get("found") or []]
        if saved and (exchange_gone or any(taken(c) for c in found)):
            payload.pop("digest_batch")
        if payload.get("tool_results"):
            payload["tool_results"] = []
        if exchange_gone:
            # Asked again if an undo gives the exchange back (the job waits for it).
            payload.pop("candidates", None)
        elif payload.get("candidates"):
            payload["candidates"] = [c for c in payload["candidates"] if not taken(c)]
        if payload != job.payload:
            Job.objects.filter(pk=job.pk).update(payload=payload)


def _job_messages(payload: dict) -> list[int]:
    """The messages a job's payload names: an extraction's exchange, a digest's saved batch."""
    return [
        *(payload.get("message_ids") or []),
        *((payload.get("digest_batch") or {}).get("batch") or []),
    ]
