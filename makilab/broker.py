"""The embedded default's in-process broker: kombu's memory transport, woken by events.

kombu's in-memory transport has no events: a consumer that finds no message it
may take (its queue empty, or its one prefetched slot held by a late-acked
task) sleeps ``polling_interval`` and looks again. At kombu's 1 s `serve`'s
worker ran one task a second per thread; at 10 ms (the setting this replaces)
it woke `serve` a hundred times a second, idle or not, and a task freed by an
ack waited up to 10 ms to be taken.

Here every message put, acked or rejected advances one counter under a
condition, and a consumer with nothing to take waits on that condition until it
changes (or until the worker's own timeout, 2 s in its loop): it wakes when
there may be something to do. An idle `serve` measured 99 wake-ups a second
with the poll, 1 without; its indexing rate (`benchmark serve-indexing`) and
the query embedding inside its pre-hook were the same either way, within noise.
Messages pass between the threads of one process, as with kombu's own transport
(the web threads send, the embedded worker takes).
"""

from __future__ import annotations

import threading
from queue import Empty
from time import monotonic

from kombu.transport import memory

_changed = threading.Condition()
_version = 0  # advanced by every change a waiting consumer may be able to act on


def _advance() -> None:
    global _version
    with _changed:
        _version += 1
        _changed.notify_all()


class Channel(memory.Channel):
    """kombu's in-memory channel, announcing each put, ack and reject."""

    def _put(self, queue, message, **kwargs):
        super()._put(queue, message, **kwargs)
        _advance()

    def _put_fanout(self, exchange, message, routing_key=None, **kwargs):
        super()._put_fanout(exchange, message, routing_key=routing_key, **kwargs)
        _advance()

    def basic_ack(self, delivery_tag, multiple=False):
        super().basic_ack(delivery_tag, multiple=multiple)
        _advance()  # a prefetch slot is free: the next message may be taken

    def basic_reject(self, delivery_tag, requeue=False):
        super().basic_reject(delivery_tag, requeue=requeue)
        _advance()


class Transport(memory.Transport):
    """kombu's in-memory transport whose consumers wait for a change instead of polling."""

    Channel = Channel

    def drain_events(self, connection, timeout=None):
        deadline = None if timeout is None else monotonic() + timeout
        while True:
            with _changed:
                seen = _version
            try:
                self.cycle.get(self._deliver, timeout=timeout)
                return
            except Empty:
                pass
            with _changed:
                while _version == seen:
                    remaining = None if deadline is None else deadline - monotonic()
                    if remaining is not None and remaining <= 0:
                        raise TimeoutError()  # socket.timeout, what the worker loop expects
                    _changed.wait(remaining)
