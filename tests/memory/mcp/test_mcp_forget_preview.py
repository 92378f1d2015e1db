"""The MCP forget tool's dry run (``forget`` without ``ids``) is the agent's scope: it shows
nothing of a fact the owner forgot, neither the fact nor its old values (README: the agent
can neither read a forgotten fact nor tell it was there)."""

from __future__ import annotations

import asyncio
import json

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def _forget_preview(topic: str) -> dict:
    """The dry run through the server in process, as a client receives it."""
    from memory.mcp.server import build_server

    result = asyncio.run(build_server().call_tool("forget", {"topic": topic}))
    assert not result.is_error, result.content[0].text
    return result.structured_content


def test_the_mcp_dry_run_shows_nothing_of_a_fact_the_owner_forgot(
    forgotten_with_old_value, forgotten_about_topic, vector_store, local_embedder
):
    """Audit 9: its summary and history listed a forgotten fact's old value word for word,
    and its facts the forgotten fact by its key."""
    preview = _forget_preview("Lisbonne")

    text = json.dumps(preview, ensure_ascii=False)
    for words in ("Pereira", "medecin_traitant", "dette_lisbonne", "Paulo"):
        assert words not in text, text
    assert preview["ids"] == [] and preview["summary"] == "Rien à oublier sur « Lisbonne »."
    never = _forget_preview("Tombouctou")  # a topic never stored: the same answer, notice too
    assert preview["notice"] == never["notice"]


def test_the_mcp_forget_explains_a_malformed_id():
    """QA: « ids : 0 : Cette valeur ne satisfait pas le motif imposé. »"""
    from memory.api.forgetting import FORGET_ID_MESSAGE
    from memory.mcp.server import build_server

    result = asyncio.run(build_server().call_tool("forget", {"topic": "Lyon", "ids": ["abc"]}))

    assert result.is_error
    said = result.content[0].text
    assert FORGET_ID_MESSAGE in said and "motif" not in said, said
