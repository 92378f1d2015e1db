"""Retention of the side tables: the retrieval log, the per-call LLM usage, idempotency keys,
the agent's forget dry runs.

They grow with every message. Rows past their window (settings
MAKILAB_RETRIEVAL_LOG_RETENTION_DAYS, MAKILAB_LLM_USAGE_RETENTION_DAYS; 30 days
for the idempotency keys of the messages API) are deleted by a daily task, in
small batches so no write lock is held for long. Each channel's last
``reinjection_turns`` retrieval rows stay whatever their age: the channel's next
auto-retrieval reads them (the memories it carries, its near-duplicate check), as
the history the LLM gets is the last messages whatever their age.
The spend history is not lost: /costs reads the daily totals
(agent.models.UsageDay), which every call adds to as it is recorded.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models, transaction
from django.db.models import OuterRef
from django.utils import timezone

logger = logging.getLogger(__name__)

PURGE_BATCH = 2000


def _delete_before(
    model: type[models.Model], *, now: datetime, retention: timedelta, keep_last: int = 0
) -> int:
    """Delete the rows older than ``retention``, in batches; ``keep_last``: each channel's
    newest rows kept (the order its readers use: newest ``created_at``, then ``id``)."""
    try:
        cutoff = now - retention
    except OverflowError:  # before year 1: no row is that old
        return 0
    old = model.objects.filter(created_at__lt=cutoff)
    if keep_last > 0:
        # Per row, a seek on the (channel, created_at, id) index: no sort of the whole log.
        newest = (
            model.objects.filter(channel=OuterRef("channel"))
            .order_by("-created_at", "-id")
            .values("id")[:keep_last]
        )
        old = old.exclude(pk__in=newest)
    deleted = 0
    while True:
        ids = list(old.order_by("created_at").values_list("id", flat=True)[:PURGE_BATCH])
        if not ids:
            return deleted
        with transaction.atomic():
            deleted += model.objects.filter(pk__in=ids).delete()[1].get(model._meta.label, 0)


def logs_purge(*, now: datetime | None = None) -> dict[str, int]:
    """Delete retrieval log rows and LLM call rows older than their retention."""
    from agent.models import ForgetPreview, LlmUsage
    from agent.tools_forget import FORGET_PREVIEW_KEEP_S
    from memory.models import MemoryRetrieval, MessageRecording
    from memory.selectors import memory_settings_get
    from memory.services.messages_record import IDEMPOTENCY_KEY_RETENTION

    now = now or timezone.now()
    counts = {
        "retrievals": _delete_before(
            MemoryRetrieval,
            now=now,
            retention=timedelta(days=settings.MAKILAB_RETRIEVAL_LOG_RETENTION_DAYS),
            keep_last=memory_settings_get().reinjection_turns,
        ),
        "llm_usage": _delete_before(
            LlmUsage,
            now=now,
            retention=timedelta(days=settings.MAKILAB_LLM_USAGE_RETENTION_DAYS),
        ),
        # An outside agent retries within minutes; a month of keys is plenty.
        "message_recordings": _delete_before(
            MessageRecording, now=now, retention=IDEMPOTENCY_KEY_RETENTION
        ),
        # A forget's dry run nobody agreed to within the hour (the ids it showed).
        "forget_previews": _delete_before(
            ForgetPreview, now=now, retention=timedelta(seconds=FORGET_PREVIEW_KEEP_S)
        ),
    }
    if any(counts.values()):
        logger.info("purged old log rows: %s", counts)
    return counts
