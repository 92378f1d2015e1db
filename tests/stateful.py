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
