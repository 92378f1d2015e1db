"""A YAML comment in a note's front matter is not read as tags (pure functions, no I/O)."""

from __future__ import annotations

import pytest

from memory.stores.notes import note_tags


@pytest.mark.parametrize(
    "front_matter",
    [
        "tags: projet # pas makilab",
        "tags: [projet] # voir makilab plus tard",
        "tags: [projet, # makilab plus tard\n  sport]",
        "tags:\n  - projet  # makilab ?\n  - sport",
        "tags: projet\t# makilab",
    ],
    ids=["string", "flow-list", "flow-list-over-lines", "block-list", "after-a-tab"],
)
def test_a_yaml_comment_in_the_front_matter_is_not_a_tag(front_matter):
    tags = note_tags(f"---\n{front_matter}\n---\nCorps.")

    assert "makilab" not in tags
    assert "projet" in tags


@pytest.mark.parametrize(
    ("front_matter", "expected"),
    [
        ("tags: '#makilab' # commentaire", {"makilab"}),
        ('tags: ["#makilab", "a # b"]', {"makilab", "a", "b"}),
        ("tags:\n  - '#makilab'\n  # - sport", {"makilab"}),
        ("tags: [d'abord, makilab] # pas sport", {"makilab"}),
    ],
    ids=["single-quoted", "double-quoted", "quoted-item", "apostrophe-in-a-word"],
)
def test_a_hash_inside_quotes_is_not_a_comment_nor_an_apostrophe_a_quote(front_matter, expected):
    assert note_tags(f"---\n{front_matter}\n---\n") == expected
