"""Serve the memory to an MCP client over stdio (Claude Desktop, Claude Code, …).

The client starts this command and speaks JSON-RPC on its stdin/stdout, so
nothing else may write on stdout: logs go to stderr (the settings' console
handler), migrations run silently, and the SDK's stdio transport moves file
descriptor 1 to stderr while it owns the real stdout.

With the in-process broker (the embedded default) there is no worker in this
process: tasks run inline, so a remembered fact is embedded and indexed before
the tool answers. An embedded Qdrant folder has one owner process, so it is
closed after every call: a `serve` running beside it keeps its folder, and
while `serve` holds it a semantic search here falls back to text (the tool
says so), a remembered fact is checked for duplicates against the facts sharing
its words (memory.services.dedup.fact_candidates), and new rows wait, pending,
for serve's sweep.
"""

from __future__ import annotations

import sys

from django.conf import settings
from django.core.management import call_command

from memory.management.french import FrenchCommand


class Command(FrenchCommand):
    help = "Sert la mémoire à un client MCP sur stdio."

    def add_arguments(self, parser):
        parser.add_argument("--no-migrate", action="store_true", help="Ne pas lancer `migrate`.")

    def handle(self, *args, **options):
        from makilab.celery import app as celery_app
        from makilab.runtime import broker_in_process
        from memory.mcp.server import build_server

        if not options["no_migrate"]:
            call_command("migrate", interactive=False, verbosity=0, stdout=sys.stderr)
        if broker_in_process():
            celery_app.conf.task_always_eager = True
            celery_app.conf.task_eager_propagates = False
        server = build_server(release_vector_store=not settings.QDRANT_URL)
        server.run("stdio")
