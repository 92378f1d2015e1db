"""The MCP server's tests, over the real MCP SDK client (stdio and streamable HTTP)."""

# Every tool the server lists, whichever transport a client uses.
MCP_TOOLS = {
    "search",
    "remember",
    "forget",
    "recent",
    "context",
    "self_search",
    "self_remember",
    "self_forget",
}
