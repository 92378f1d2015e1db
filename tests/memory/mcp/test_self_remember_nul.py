"""self_remember refuses a NUL character as every other tool does, with the same French
message (Django's ProhibitNullCharactersValidator, which DRF's CharField runs)."""

from __future__ import annotations

import asyncio

import pytest
from django.core.validators import ProhibitNullCharactersValidator

from memory.exceptions import MemoryServiceError
from memory.models import Fact
from memory.services.self_memory_validate import agent_item_validate

pytestmark = pytest.mark.django_db(transaction=True)

NUL_MESSAGE = str(ProhibitNullCharactersValidator.message)
CONTENTS = ["\x00", "\x00\x00 \x00", "Je peux lire\x00 le Lobby"]


@pytest.mark.parametrize("content", CONTENTS)
def test_self_remember_refuses_a_nul_character_and_stores_nothing(
    content, vector_store, local_embedder
):
    from memory.mcp.server import build_server

    server = build_server()
    result = asyncio.run(
        server.call_tool("self_remember", {"content": content, "category": "capability"})
    )
    remember = asyncio.run(server.call_tool("remember", {"key": "k", "value": content}))

    assert result.is_error and NUL_MESSAGE in result.content[0].text
    assert remember.is_error and NUL_MESSAGE in remember.content[0].text  # the same rule
    assert not Fact.all_objects.exists()


@pytest.mark.parametrize("kind, category", [("self", "capability"), ("goal", "understanding")])
def test_the_service_every_path_uses_refuses_it(kind, category):
    with pytest.raises(MemoryServiceError, match=NUL_MESSAGE):
        agent_item_validate(kind=kind, category=category, content="Comprendre\x00")
