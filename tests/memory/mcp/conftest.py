"""Fixtures of the MCP tests: the server in process, without a transport."""

from __future__ import annotations

import asyncio

import pytest


@pytest.fixture
def mcp():
    """The MCP server in process: call(name, args) -> CallToolResult."""
    from memory.mcp.server import build_server

    server = build_server()

    def call(name, args):
        return asyncio.run(server.call_tool(name, args))

    return call
