"""The memory as an MCP server (official ``mcp`` SDK).

``server.build_server`` defines the one server: its tools (``tools.py``) and
resources (``resources.py``). ``manage.py mcp`` serves it over stdio; ``http.py``
serves the same server over streamable HTTP at ``/mcp`` in the running service.
The SDK is imported only here, never by ``urls`` or ``tasks`` at import time.
"""
