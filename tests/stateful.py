"""The settings of the stateful property tests (hypothesis rule-based machines)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

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


def qdrant_fresh(settings_fixture, *, prefix: str) -> Path:
    """A fresh embedded Qdrant in a folder of its own for a machine's example (pytest's
    ``settings`` fixture points QDRANT_PATH there); the folder, for ``qdrant_drop``."""
    from memory.stores.vectors import vector_store_reset

    vector_store_reset()
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    settings_fixture.QDRANT_PATH = folder / "qdrant"
    return folder


def qdrant_drop(folder: Path) -> None:
    """Close the example's embedded Qdrant and delete its folder."""
    from memory.stores.vectors import vector_store_reset

    vector_store_reset()
    shutil.rmtree(folder, ignore_errors=True)
