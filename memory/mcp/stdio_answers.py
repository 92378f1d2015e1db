"""The MCP server over stdio: every line a client wrote gets its answer.

``stdio_serve`` reads the client's lines itself, as bytes, and hands the SDK's
dispatcher only the messages it can read: the SDK's own reader decodes the input
with replacement characters (bytes that are not UTF-8 reached a tool, and were
stored, as « \ufffd »), reads a request whose id is of no JSON-RPC type as a
notification (nothing runs, no answer) and drops a line that is no message. Those
are answered with JSON-RPC's error, null id, French (memory.mcp.transport_errors).

A client that writes its requests and closes its input (a script piping them in)
must get an answer to each: ``stdio_serve`` counts what it reads (``Unanswered``),
notes what it sends (``NotingAnswers``) and passes the end of input on to the SDK
only once the count is empty.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any, BinaryIO

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
from mcp.shared.message import SessionMessage
from mcp_types import (
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)

from memory.mcp.transport_errors import line_refusal, stdio_refusal

logger = logging.getLogger(__name__)


async def stdio_serve(lowlevel_server: Any, *, drain_s: float) -> None:
    """Serve ``lowlevel_server`` on stdin/stdout until the input ends and every request
    read is answered (``drain_s`` at most), or the dispatcher stops."""
    with _claimed_stdin() as stdin:
        # The SDK's transport writes stdout; its reader gets no input (we read it).
        async with stdio_server(stdin=_NoInput()) as (unused, write_stream):
            await unused.aclose()
            messages, received = anyio.create_memory_object_stream(0)
            unanswered = Unanswered()

            async def read_lines() -> None:
                async with messages:
                    async for raw in anyio.wrap_file(stdin):
                        refusal = line_refusal(raw)
                        if refusal is None:
                            try:
                                message = jsonrpc_message_adapter.validate_json(raw, by_name=False)
                            except Exception as exc:  # what the SDK's reader catches
                                refusal = stdio_refusal(exc)
                        if refusal is not None:
                            await write_stream.send(SessionMessage(refusal))
                            continue
                        unanswered.read(message)
                        await messages.send(SessionMessage(message))
                    # End of input: closing `messages` would make the dispatcher cancel
                    # the handlers still running (Unanswered), so first let them answer.
                    with anyio.move_on_after(drain_s) as drain:
                        await unanswered.all_answered()
                    if drain.cancelled_caught:
                        logger.warning("MCP stdio: requests still unanswered at exit")

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(read_lines)
                await lowlevel_server.run(
                    received,
                    NotingAnswers(write_stream, unanswered),
                    lowlevel_server.create_initialization_options(),
                )
                # The dispatcher is gone (input ended, or it failed): stop reading for it.
                tasks.cancel_scope.cancel()


class _NoInput:
    """The input handed to the SDK's ``stdio_server``: none, ``stdio_serve`` reads it."""

    def __aiter__(self) -> _NoInput:
        return self

    async def __anext__(self) -> str:
        raise StopAsyncIteration


@contextlib.contextmanager
def _claimed_stdin() -> Iterator[BinaryIO]:
    """The client's input, read through a private duplicate of descriptor 0 while 0 itself
    points at the null device, as the SDK's ``stdio_server`` does with the input it reads:
    a tool or a child process reading stdin gets EOF, never a client's request."""
    try:
        private = os.dup(0)
    except OSError:  # no descriptor 0: read what Python has
        yield sys.stdin.buffer
        return
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    try:
        # closefd=False: a worker thread can still be blocked reading it when we return.
        yield os.fdopen(private, "rb", closefd=False)
    finally:
        with contextlib.suppress(OSError):
            os.dup2(private, 0)


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
