"""Dashboard clients: an htmx request is a request with the HX-Request header."""

from __future__ import annotations

import pytest

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def vault(tmp_path, settings):
    """An Obsidian vault folder with two notes, as the notes provider reads it."""
    folder = tmp_path / "vault"
    (folder / "Projets").mkdir(parents=True)
    (folder / "Profil.md").write_text(
        "# Profil\n\nMickael, grimpeur, vit à Lyon.\n", encoding="utf-8"
    )
    (folder / "Projets" / "Makilab.md").write_text(
        "---\ntags: [makilab]\n---\nLe projet Makilab : un agent personnel. #makilab\n",
        encoding="utf-8",
    )
    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = folder
    try:
        from memory.services.notes import notes_cache_clear
    except ImportError:
        yield folder
        return
    notes_cache_clear()
    yield folder
    notes_cache_clear()


def forget_confirmed(client, topic: str, **headers):
    """The owner's path on /memory: the preview, then its confirmation with the items it
    showed (the page's hidden ``item`` fields)."""
    import html as html_lib
    import re

    preview = client.post("/memory/forget/preview/", {"topic": topic}, **HTMX).content.decode()
    items = [html_lib.unescape(i) for i in re.findall(r'name="item" value="([^"]+)"', preview)]
    return client.post("/memory/forget/confirm/", {"topic": topic, "item": items}, **headers)
