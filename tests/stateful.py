"""The settings of the stateful property tests (hypothesis rule-based machines)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings


def stateful_settings(*, examples: int, steps: int) -> settings:
    """``examples`` runs of up to ``steps`` operations each. No deadline (steps touch
    SQLite and the vector store), no example database (each run explores afresh), no
    health checks (the machines run inside function-scoped fixtures)."""
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


def memory_wipe() -> None:
    """An empty memory at the start of a machine's example: every row the machines write,
    replies before the messages they answer."""
    from memory.models import (
        Fact,
        FactRevision,
        Forgetting,
        Job,
        MemoryRetrieval,
        Message,
        Summary,
    )

    for model in (FactRevision, Job, MemoryRetrieval):
        model.objects.all().delete()
    Message.all_objects.filter(reply_to__isnull=False).delete()
    Message.all_objects.all().delete()
    Fact.all_objects.all().delete()
    Summary.all_objects.all().delete()
    Forgetting.objects.all().delete()
