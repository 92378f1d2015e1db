"""The MCP resources: the owner's identity facts and the memory settings, as JSON.

Same shapes as the HTTP API (``GET /api/memory/facts``, ``GET /api/memory/settings``).
"""

from __future__ import annotations

import json

IDENTITY_URI = "memory://facts/identity"
SETTINGS_URI = "memory://settings"


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def identity_facts() -> str:
    """Who the owner is: the identity facts (name, family, home, work…), most important first."""
    from memory.api.serializers import FactOutputSerializer
    from memory.models import MemoryType
    from memory.selectors import facts_active

    facts = facts_active().filter(memory_type=MemoryType.IDENTITY)
    facts = facts.order_by("-importance", "-updated_at", "-id")
    return _json({"facts": FactOutputSerializer(facts, many=True).data})


def memory_settings() -> str:
    """The memory's settings: auto-retrieval on/off, max results, score threshold, notes…"""
    from memory.api.serializers import MemorySettingsSerializer
    from memory.selectors import memory_settings_get

    return _json(MemorySettingsSerializer(memory_settings_get()).data)


RESOURCES = (
    (IDENTITY_URI, "identity_facts", identity_facts),
    (SETTINGS_URI, "memory_settings", memory_settings),
)
