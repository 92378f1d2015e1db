"""Every request a stdio client wrote is answered before the server stops.

A client that writes its requests and closes its input (a script piping them in)
must get an answer to each: ``MemoryMCPServer.run_stdio_async`` counts what it
reads (``Unanswered``), notes what it sends (``NotingAnswers``) and passes the end
of input on to the SDK only once the count is empty.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse


class Unanswered:
    """The requests read from a stdio client and not answered yet (their ids, counted).

    At end of input the SDK's dispatcher (``JSONRPCDispatcher.run``) cancels every
    handler still running: a tool in its worker thread runs to its end, then the
    write of its answer is cancelled and the SDK sends no other (never two answers),
    so a ``remember`` was stored and its client never told. The server hides the end
    of input from the dispatcher until this count is empty."""

    def __init__(self) -> None:
        self._ids: Counter = Counter()
        self._changed = anyio.Event()

    def read(self, message: Any) -> None:
        if isinstance(message, JSONRPCRequest):
            self._ids[coerce_request_id(message.id)] += 1
        elif (
            isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled"
        ):
            # A request its client cancelled is never answered (the protocol says so).
            request_id = cancelled_request_id_from_params(message.params)
            if request_id is not None:
                self._settle(coerce_request_id(request_id))

    def sent(self, message: Any) -> None:
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            self._settle(coerce_request_id(message.id))

    def _settle(self, request_id: Any) -> None:
        if self._ids[request_id] > 0:
            self._ids[request_id] -= 1
            if not self._ids[request_id]:
                del self._ids[request_id]
        self._changed.set()
        self._changed = anyio.Event()

    async def all_answered(self) -> None:
        while self._ids:
            await self._changed.wait()


class NotingAnswers:
    """The stdio write stream, telling ``Unanswered`` of each answer sent through it.

    A proxy, not a relayed stream: the SDK's close of the stream it was given must
    reach the transport's stdout writer, or the transport waits for it on exit."""

    def __init__(self, stream: Any, unanswered: Unanswered) -> None:
        self._stream, self._unanswered = stream, unanswered

    async def send(self, item: Any) -> None:
        try:
            await self._stream.send(item)
        finally:  # sent, or it never will be: nothing to wait for either way
            self._unanswered.sent(item.message)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> NotingAnswers:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()
