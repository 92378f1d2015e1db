"""A WSGI application served by waitress as `serve` runs it (makilab.http_server) on a
free local port, in a thread, for tests that need the real server's handling of a request."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def waitress_serving(application, **options) -> Iterator[int]:
    """The port ``application`` is served on until the block ends."""
    from makilab.http_server import http_server_create

    server = http_server_create(application, host="127.0.0.1", port=0, **options)
    stop = threading.Event()

    def run() -> None:
        # The loop in short turns, closed by its own thread: closing the sockets
        # from the test's thread would break the poll under the loop's feet.
        while not stop.is_set():
            server.asyncore.loop(timeout=0.05, map=server._map, count=1)
        server.task_dispatcher.shutdown()
        server.asyncore.close_all(server._map)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield server.effective_port
    finally:
        stop.set()
        thread.join(timeout=5)
