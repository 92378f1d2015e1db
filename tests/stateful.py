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


def captured_indexing(monkeypatch, settings_fixture, time_machine, queue: list) -> None:
    """An indexing machine's surroundings: the clock stopped (rules move it), every task
    sent appended to ``queue`` instead of a broker (rules run them in any order), no
    process-wide embedder (the machine installs its fake), the embedded Qdrant."""
    from django.utils import timezone

    from memory.services import index_queue
    from memory.stores import embedders

    time_machine.move_to(timezone.now(), tick=False)
    monkeypatch.setattr(
        index_queue, "_send", lambda kind, row_ids: queue.extend((kind, r) for r in row_ids)
    )
    monkeypatch.setattr(embedders, "_embedder", None)
    settings_fixture.QDRANT_URL = ""


def machine_run(machine, machine_settings: settings, capsys, report) -> None:
    """Run ``machine``, close the vector store whatever happens, and print ``report(seconds)``
    (the run's statistics) past pytest's capture."""
    import time

    from hypothesis.stateful import run_state_machine_as_test

    from memory.stores.vectors import vector_store_reset

    started = time.perf_counter()
    try:
        run_state_machine_as_test(machine, settings=machine_settings)
    finally:
        vector_store_reset()
        with capsys.disabled():
            print("\n" + report(time.perf_counter() - started))


def machine_profile(ci: settings, slow: settings) -> tuple[str, settings]:
    """The profile HYPOTHESIS_PROFILE names ("ci" unless "slow"), and its settings."""
    import os

    name = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    return ("slow", slow) if name == "slow" else ("ci", ci)


class MachineWorld:
    """What outlives one example of an indexing machine: the captured broker's queue, the
    clock, pytest's settings (every override undone), the run's statistics."""

    def __init__(self, traveller, settings_fixture) -> None:
        self.queue: list[tuple[str, int]] = []
        self.traveller = traveller
        self.settings = settings_fixture
        self.examples = 0
        self.steps = 0
        self.settles = 0
