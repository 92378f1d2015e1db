"""README's "Export, import, backup" stays true: its commands exist, its format table is the format."""

from __future__ import annotations

import re
from pathlib import Path

from django.core.management import get_commands

from memory.services.portability import SETTINGS_FIELDS
from memory.services.portability_validate import RECORD_TYPES, SPECS

README = Path(__file__).resolve().parents[2] / "README.md"


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    return text.split("\n## Export, import, backup\n", 1)[1].split("\n## ", 1)[0]


def test_the_commands_shown_are_real_commands():
    shown = set(re.findall(r"python manage\.py (\w+)", _section()))
    assert {"memory_export", "memory_import", "memory_backup", "memory_restore"} <= shown
    assert shown <= set(get_commands())


def test_the_format_table_lists_every_record_type_and_field():
    rows = dict(re.findall(r"^\| `(\w+)` \| (.*) \|$", _section(), re.M))
    assert list(rows) == list(RECORD_TYPES)
    expected = {
        "settings": set(SETTINGS_FIELDS),
        **{kind: set(SPECS[kind]) for kind in RECORD_TYPES if kind != "settings"},
    }
    expected["fact"] |= set(SPECS["revision"])
    for kind, text in rows.items():
        named = set(re.findall(r"`(\w+)`", text)) | set(re.findall(r"\b(\w+)[,}]", text))
        assert expected[kind] <= named, (kind, expected[kind] - named)
