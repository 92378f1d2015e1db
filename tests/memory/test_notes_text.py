"""Note text rules: front matter, excerpts, tags, safe paths (pure functions, no I/O)."""

from __future__ import annotations

import pytest

from memory.exceptions import UnsafeNotePath
from memory.stores.notes import (
    ELLIPSIS,
    EXCERPT_CHARS,
    MSG_PATH_ABSOLUTE,
    MSG_PATH_EMPTY,
    MSG_PATH_PARENT,
    excerpt_cut,
    note_build,
    note_path_normalize,
    note_tags,
    split_front_matter,
    tag_matches,
)


def test_it_strips_a_closed_front_matter_and_keeps_the_body():
    text = "---\ntitle: Profil\ntags: [makilab]\n---\n# Profil\n\nMickaël court le matin.\n"

    yaml, body = split_front_matter(text)

    assert yaml == "title: Profil\ntags: [makilab]\n"
    assert body == "# Profil\n\nMickaël court le matin.\n"


def test_it_strips_an_empty_front_matter_and_one_after_a_bom():
    assert split_front_matter("---\n---\nCorps")[1] == "Corps"
    assert split_front_matter("\ufeff---\na: 1\n...\nCorps")[1] == "Corps"


def test_it_keeps_text_that_only_looks_like_an_unclosed_front_matter():
    text = "---\nce n'est pas fermé\nCorps"

    assert split_front_matter(text) == (None, text)


def test_a_built_note_has_no_front_matter_in_content_or_excerpt():
    note = note_build(path="a.md", text="---\ntags: secret\n---\nBonjour", source="fixed")

    assert note.content == "Bonjour"
    assert note.excerpt == "Bonjour"
    assert "secret" not in note.content


def test_a_short_note_is_its_own_excerpt():
    assert excerpt_cut("  Court texte.  ") == "Court texte."


def test_a_long_note_is_cut_near_500_chars_at_a_word_boundary():
    words = [f"mot{i}" for i in range(400)]
    content = " ".join(words)

    excerpt = excerpt_cut(content)

    assert excerpt.endswith(ELLIPSIS)
    kept = excerpt.removesuffix(ELLIPSIS)
    assert EXCERPT_CHARS - 10 <= len(kept) <= EXCERPT_CHARS
    # Only whole words: the last kept word is a word of the note, and the next one was dropped.
    assert kept.split(" ") == words[: len(kept.split(" "))]
    assert content.startswith(kept + " ")


def test_a_single_huge_word_is_cut_hard_rather_than_emptied():
    excerpt = excerpt_cut("x" * 2000)

    assert excerpt == "x" * EXCERPT_CHARS + ELLIPSIS


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Un projet #makilab en cours", {"makilab"}),
        ("#makilab au début de ligne", {"makilab"}),
        ("Nested #makilab/projet/v2 tag", {"makilab/projet/v2"}),
        ("Casse #MakiLab mélangée", {"makilab"}),
        ("Accents #été-2025 ok", {"été-2025"}),
        ("Ponctuation (#pas) et fin #oui.", {"oui"}),
    ],
)
def test_it_finds_inline_tags_in_the_body(text, expected):
    assert note_tags(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "# Titre de niveau 1",
        "## Titre de niveau 2",
        "Un lien https://exemple.fr/page#section et [ancre](#makilab)",
        "Collé a#makilab sans espace",
        "Code `#makilab` en ligne",
        "```python\n# commentaire\nx = '#makilab'\n```",
        "~~~\n#makilab\n~~~",
        "Commentaire %% #makilab %% masqué",
        "Commentaire <!-- #makilab --> HTML",
        "Numéro #123 et #2024/05",
    ],
)
def test_it_ignores_what_obsidian_does_not_count_as_a_tag(text):
    assert note_tags(text) == set()


def test_a_fence_closes_only_with_the_same_fence():
    text = "````\n```\n#dedans\n````\nAprès #dehors"

    assert note_tags(text) == {"dehors"}


@pytest.mark.parametrize(
    "front_matter",
    [
        "tags: [makilab, sport]",
        "tags: ['#makilab', \"sport\"]",
        "tags:\n  - makilab\n  - sport",
        "tags:\n- '#makilab'\n- sport",
        "tags: makilab, sport",
        "tags: makilab sport",
        "tag: [makilab, sport]",
        "title: x\ntags:\n  # commentaire\n  - makilab\n\n  - sport\nauthor: moi",
        "tags: [makilab,\n  sport]",
    ],
)
def test_it_reads_tags_from_the_front_matter_in_every_yaml_form(front_matter):
    text = f"---\n{front_matter}\n---\nCorps sans tag."

    assert note_tags(text) == {"makilab", "sport"}


def test_it_reads_a_single_string_tag_with_or_without_hash():
    assert note_tags('---\ntags: "#makilab/projet"\n---\n') == {"makilab/projet"}
    assert note_tags("---\ntags: makilab\n---\n") == {"makilab"}


def test_it_does_not_take_other_keys_or_the_body_of_the_list_for_tags():
    text = "---\naliases: [makilab]\ntags: []\nsubtags: makilab\n---\nRien."

    assert note_tags(text) == set()


def test_it_merges_front_matter_and_body_tags():
    text = "---\ntags: [sport]\n---\nNote #makilab/projet"

    assert note_tags(text) == {"sport", "makilab/projet"}


@pytest.mark.parametrize(
    ("note_tag", "matches"),
    [
        ("makilab", True),
        ("makilab/projet", True),
        ("makilab/projet/v2", True),
        ("makilabs", False),
        ("projet/makilab", False),
        ("maki", False),
    ],
)
def test_a_nested_tag_counts_for_its_parent_only(note_tag, matches):
    assert tag_matches(note_tag, "makilab") is matches


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Profil.md", "Profil.md"),
        ("Profil", "Profil.md"),
        ("./Projets//Makilab.md", "Projets/Makilab.md"),
        ("Projets\\Makilab.md", "Projets/Makilab.md"),
        ("  Carrière.MD ", "Carrière.MD"),
        ("dossier/v1.2", "dossier/v1.2.md"),
    ],
)
def test_it_normalizes_a_relative_note_path(raw, expected):
    assert note_path_normalize(raw) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("../secret.md", MSG_PATH_PARENT),
        ("Notes/../../secret.md", MSG_PATH_PARENT),
        ("..\\secret.md", MSG_PATH_PARENT),
        ("/etc/passwd", MSG_PATH_ABSOLUTE),
        ("C:/Users/moi/note.md", MSG_PATH_ABSOLUTE),
        ("\\\\serveur\\partage\\note.md", MSG_PATH_ABSOLUTE),
        ("", MSG_PATH_EMPTY),
        ("./", MSG_PATH_EMPTY),
    ],
)
def test_it_refuses_paths_that_leave_the_vault(raw, message):
    with pytest.raises(UnsafeNotePath) as excinfo:
        note_path_normalize(raw)

    assert str(excinfo.value) == message


def test_it_refuses_control_characters_in_a_path():
    with pytest.raises(UnsafeNotePath):
        note_path_normalize("a\x00b.md")


@pytest.mark.parametrize("raw", ["a.md\u200f", "Pro\u200bfil", "\u2060Profil.md"])
def test_it_refuses_a_path_holding_a_character_nobody_sees(raw):
    """QA: « a.md\u200f » was kept as « a.md\u200f.md », a note that looks like « a.md »."""
    with pytest.raises(UnsafeNotePath, match="caractère invisible"):
        note_path_normalize(raw)


def test_a_notes_control_characters_never_reach_a_page_or_the_prompt():
    """QA: a note holding NUL or \\x01 bytes had them written raw into /memory's HTML (the
    prompt block dropped them); the note is read without them, line breaks and tabs kept."""
    note = note_build(path="a.md", text="Ligne\x00 un\x01\n\tdeux\x7f\x9b fin", source="fixed")

    assert note.content == "Ligne un\n\tdeux fin"
    assert not any(char in note.excerpt for char in "\x00\x01\x7f\x9b")
