"""Progress bars for the commands: tqdm (rate and ETA) on stderr, one bar per step."""

from __future__ import annotations

import sys

# The steps of reindex, as the owner reads them.
STEP_LABELS = {"message": "échanges", "fact": "faits", "summary": "résumés"}


class ProgressBars:
    """A ``progress(step, done, total)`` callback drawing one tqdm bar per step.

    The same callback follows a run in this process and a run in the serving
    process (whose progress arrives by polling, so a step may end between two
    reports: the bar is completed when the next step starts).
    """

    def __init__(self, *, unit: str = " lignes", stream=None) -> None:
        self.unit = unit
        self.stream = stream or sys.stderr
        self._step: str | None = None
        self._bar = None

    def __call__(self, step: str, done: int, total: int) -> None:
        from tqdm import tqdm

        if step == self._step and self._bar is not None and done == self._bar.n:
            return  # the same report polled again
        if step != self._step:
            self.close()
            self._step = step
            self._bar = tqdm(
                total=total,
                desc=f"{STEP_LABELS.get(step, step):<9}",
                unit=self.unit,
                file=self.stream,
                leave=True,
            )
        self._bar.total = total
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            if self._bar.total is not None and self._bar.n < self._bar.total:
                self._bar.update(self._bar.total - self._bar.n)
            self._bar.close()
            self._bar = None
        self._step = None
