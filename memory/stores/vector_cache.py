"""The stored vectors the near-duplicate checks read, kept by the process that writes them.

After every query embedding the pre-hook compares the memories it selects with
each other and with those injected in the last turns (retrieval.selection), by
their stored vectors. Read from Qdrant Edge, each vector is built as a new list
of 384 Python floats while the binding holds the GIL: about 0.65 ms a message
at 10,000 memories, on the critical path. The same vectors come back turn after
turn (the last turns' injections, a topic the conversation stays on): in the
retrieval benchmark 76 % of the vectors asked had been asked before.

Only the embedded store keeps them: its process is the folder's one writer
(vectors_edge), so every write to a point goes through the store that drops
its entry (upsert, delete, a collection dropped or created, the store closed)
and an entry is always what the shard holds. A Qdrant server is written by other
processes too (a Celery worker): it keeps none.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

# Vectors kept per process (float64, 3 KB each at 384 dimensions: 6 MB at most).
POINT_VECTORS_KEPT = 2048


class PointVectorCache:
    """The least recently read ``capacity`` point vectors, by (collection, point id).

    Not locked on its own: its store calls it under the store's lock.
    """

    def __init__(self, capacity: int = POINT_VECTORS_KEPT) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[tuple[str, str], Any] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def found(self, name: str, ids: Iterable[str]) -> tuple[dict[str, Any], list[str]]:
        """(the vectors kept of ``ids``, the ids not kept)."""
        found: dict[str, Any] = {}
        missing: list[str] = []
        for point in ids:
            vector = self._entries.get((name, point))
            if vector is None:
                missing.append(point)
            else:
                self._entries.move_to_end((name, point))
                found[point] = vector
        return found, missing

    def keep(self, name: str, point: str, vector: list[float]) -> Any:
        """Keep ``vector`` as read from the store; returns it as an array (read-only)."""
        import numpy as np  # not at import: importing the project loads no numpy

        array = np.asarray(vector, dtype=np.float64)
        array.flags.writeable = False  # shared by every reader until the point changes
        self._entries[(name, point)] = array
        self._entries.move_to_end((name, point))
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)
        return array

    def forget(self, name: str, ids: Iterable[str]) -> None:
        """The points were written or deleted (under any spelling of their uuid: an entry
        is kept under the engine's, the canonical one)."""
        for point in ids:
            self._entries.pop((name, _canonical(str(point))), None)

    def forget_collection(self, name: str) -> None:
        for key in [key for key in self._entries if key[0] == name]:
            del self._entries[key]

    def clear(self) -> None:
        self._entries.clear()


def _canonical(point: str) -> str:
    """A point id as the engine gives it back (a uuid in its canonical form)."""
    try:
        return str(uuid.UUID(point))
    except ValueError:
        return point
