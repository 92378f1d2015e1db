"""Shared lines for the qa2 import tests (a valid header, message, summary and fact)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memory.models import Fact, Message, Summary

HEADER = {
    "format": "makilab-memory",
    "version": 1,
    "exported_at": "2026-11-30T12:00:00+00:00",
    "since": None,
}
GOOD = {
    "type": "message",
    "id": 1,
    "channel": "whatsapp",
    "role": "user",
    "author": "",
    "source": "user",
    "content": "Une ligne valide avant la mauvaise",
    "created_at": "2026-01-01T10:00:00+00:00",
    "compacted": False,
    "reply_to": None,
}
REVISION = {
    "actor": "user",
    "reason": "created",
    "old_value": "",
    "new_value": "Le vélo est gris",
    "changes": {},
    "note": "",
    "created_at": "2026-01-01T10:00:00+00:00",
}
SUMMARY = {
    "type": "summary",
    "channel": "whatsapp",
    "content": "Le propriétaire a parlé de son vélo.",
    "message_count": 2,
    "period_start": "2026-01-01T10:00:00+00:00",
    "period_end": "2026-01-01T10:05:00+00:00",
    "created_at": "2026-01-01T11:00:00+00:00",
}


def fact(**over) -> dict:
    return {
        "type": "fact",
        "key": "velo",
        "value": "Le vélo est gris",
        "memory_type": "fact",
        "importance": 0.5,
        "subjects": [],
        "source": "manual",
        "channel": "",
        "expires_at": None,
        "created_at": "2026-01-01T10:00:00+00:00",
        "updated_at": "2026-01-01T10:00:00+00:00",
        "last_accessed_at": None,
        "access_count": 0,
        "owner_fields": [],
        "source_message": None,
        "revisions": [REVISION],
    } | over


def message(**over) -> dict:
    return GOOD | {"id": 2, "content": "Bonjour le jardin"} | over


def assert_refused(tmp_path, record: dict) -> str:
    """Import GOOD then ``record``: it must be refused on line 3, in French, nothing kept."""
    path = tmp_path / "memoire.jsonl"
    path.write_text(
        "\n".join(json.dumps(line) for line in [HEADER, GOOD, record]) + "\n", encoding="utf-8"
    )
    out = StringIO()
    try:
        call_command("memory_import", str(path), stdout=out, stderr=StringIO())
    except CommandError as exc:
        message = str(exc)
    else:
        pytest.fail(f"import accepted the inconsistent line: {out.getvalue()}")
    assert message.startswith("Rien n'a été importé. ligne 3 : "), message
    assert not Message.all_objects.exists()
    assert not Fact.all_objects.exists()
    assert not Summary.all_objects.exists()
    return message
