"""A JSONL seed is cut into lines on "\\n" alone, as the import reads its lines: a line
separator JSON allows raw inside a string neither breaks a line nor shifts the numbering."""

from __future__ import annotations

import json

import pytest

from memory.exceptions import MemoryServiceError
from memory.services.self_seed import seed_items_parse

SEPARATORS = pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])


def _line(content: str, kind: str = "self", category: str = "context") -> str:
    # ensure_ascii=False writes the separators raw, as JSON allows
    record = {"kind": kind, "category": category, "content": content}
    return json.dumps(record, ensure_ascii=False)


@SEPARATORS
def test_a_line_with_a_raw_line_separator_in_a_string_is_one_item(separator):
    text = "\n".join(
        [
            _line(f"Je vis chez Mickael{separator}à Lyon"),
            _line("Comprendre le vélo", kind="goal", category="understanding"),
        ]
    )

    items = seed_items_parse(text + "\n")

    assert [(item.where, item.kind) for item in items] == [("ligne 1", "self"), ("ligne 2", "goal")]


@SEPARATORS
def test_a_bad_line_after_one_holding_a_separator_is_named_by_its_number(separator):
    text = "\n".join([_line(f"Je vis{separator}à Lyon"), "{pas du json"])

    with pytest.raises(MemoryServiceError, match=r"^ligne 2 : JSON invalide"):
        seed_items_parse(text)


def test_windows_line_ends_are_read_too():
    text = "\r\n".join([_line("Je vis à Lyon"), "", _line("J'aime le vélo", category="preference")])

    items = seed_items_parse(text + "\r\n")

    assert [item.where for item in items] == ["ligne 1", "ligne 3"]
