"""Text the owner or the agent wrote is bidi-isolated wherever the dashboard shows it.

A right-to-left override (U+202E) in a value, a key, a message or a path must
reverse that text only, never the page's own words after it ("» prendrait…",
"· 12/03/2026"). So each such text sits alone in an isolating element: a <bdi>,
an element with a dir attribute, or one the stylesheet's unicode-bidi rule
names (read from dashboard.css, so the rule and these tests cannot drift).
test_browser.py checks the computed style of the same elements in Chromium.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from memory.models import Actor, Fact, FactKind, MemoryRetrieval, MemorySettings, Message
from memory.services.facts import fact_store, fact_update
from memory.services.self_memory import agent_item_store
from tests.dashboard.conftest import HTMX, forget_confirmed

pytestmark = pytest.mark.django_db

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: reverses what follows, up to the end of its isolate
CSS = Path(django_settings.BASE_DIR) / "dashboard" / "static" / "dashboard" / "dashboard.css"
KEY = f"cle{RLO}inversee"
NOTE = f"Note {RLO}inversee.md"
VOID = frozenset("area base br col embed hr img input link meta source track wbr".split())


def isolating_selectors() -> list[tuple[str, str]]:
    """The (tag, class) of each selector of the stylesheet's isolating unicode-bidi rules."""
    css = re.sub(r"/\*.*?\*/", "", CSS.read_text(encoding="utf-8"), flags=re.S)
    found = []
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        if not re.search(r"unicode-bidi:\s*(isolate|plaintext)\b", body):
            continue
        for selector in selectors.split(","):
            simple = re.fullmatch(r"([a-z]*)(?:\.([\w-]+))?", selector.strip())
            assert simple, f"keep the bidi rule's selectors simple (tag, .class): {selector!r}"
            found.append((simple[1], simple[2] or ""))
    return found


class _BareText(HTMLParser):
    """The text nodes holding an RLO whose parent element does not isolate them."""

    def __init__(self, selectors: list[tuple[str, str]]) -> None:
        super().__init__()
        self.selectors = selectors
        self.stack: list[tuple[str, dict[str, str]]] = []
        self.bare: list[str] = []
        self.seen = 0

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.stack.append((tag, {name: value or "" for name, value in attrs}))

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop()[0] != tag:
            pass

    def handle_data(self, data):
        if RLO not in data:
            return
        self.seen += 1
        tag, attrs = self.stack[-1] if self.stack else ("", {})
        if not self._isolates(tag, attrs):
            self.bare.append(f"<{tag} class={attrs.get('class', '')!r}> {data.strip()!r}")

    def _isolates(self, tag: str, attrs: dict[str, str]) -> bool:
        # A form control's text is its own (it never joins the line around it).
        if tag in ("bdi", "textarea") or "dir" in attrs:
            return True
        classes = attrs.get("class", "").split()
        return any(
            (not s_tag or s_tag == tag) and (not s_class or s_class in classes)
            for s_tag, s_class in self.selectors
        )


def assert_isolated(html: str, *, at_least: int = 1) -> None:
    parser = _BareText(isolating_selectors())
    parser.feed(html)
    assert parser.seen >= at_least, f"only {parser.seen} text(s) with an RLO on the page"
    assert parser.bare == [], "text shown without bidi isolation:\n" + "\n".join(parser.bare)


@pytest.fixture
def reversed_world(settings, vault):
    """Every kind of text the pages show, each holding a right-to-left override."""
    settings.ANTHROPIC_API_KEY = ""
    fact, _ = fact_store(key="cle", value=f"Lisbonne {RLO}valeur", subjects=[f"sujet{RLO}"])
    # A key stored before keys were checked for invisible characters (validate_fact_key).
    Fact.all_objects.filter(pk=fact.pk).update(key=KEY)
    fact.refresh_from_db()
    fact_update(
        fact=fact,
        actor=Actor.USER,
        value=f"Lisbonne {RLO}nouvelle valeur",
        subjects=[f"sujet{RLO}", "autre"],
    )
    agent_item_store(kind=FactKind.SELF, category="context", content=f"Lisbonne {RLO}moi")
    agent_item_store(
        kind=FactKind.GOAL, category="understanding", content=f"Comprendre Lisbonne {RLO}but"
    )
    Message.objects.create(channel=f"canal{RLO}", role="user", content=f"Lisbonne {RLO}message")
    MemoryRetrieval.objects.create(
        channel=f"canal{RLO}",
        message_preview=f"Lisbonne {RLO}question",
        memories=[
            {"kind": "fact", "sources": {"semantic": {"score": 0.9}}, "text": f"{RLO}souvenir"}
        ],
        notes=[{"path": f"{RLO}note.md"}],
    )
    (vault / NOTE).write_text(f"# Titre\n\n{RLO}contenu\n", encoding="utf-8")
    MemorySettings.objects.update_or_create(pk=1, defaults={"obsidian_context_notes": [NOTE]})
    return fact


def test_the_stylesheet_isolates_the_elements_that_hold_stored_text():
    selectors = isolating_selectors()
    for element in (("code", ""), ("", "value"), ("", "excerpt"), ("", "tag"), ("pre", "")):
        assert element in selectors, f"{element} is not bidi-isolated by dashboard.css"


def test_the_memory_page_isolates_facts_self_items_the_log_and_notes(staff_client, reversed_world):
    html = staff_client.get("/memory/").content.decode()
    # Key, value, subject, 2 self items, log channel, question, memory, note, note path.
    assert_isolated(html, at_least=10)


def test_a_facts_history_isolates_old_and_new_values(staff_client, reversed_world):
    html = staff_client.get(f"/memory/facts/{KEY}/history/", **HTMX).content.decode()
    assert_isolated(html, at_least=4)


def test_the_edit_form_and_an_empty_filter_isolate_what_they_echo(staff_client, reversed_world):
    html = staff_client.get(f"/memory/facts/{KEY}/edit/", **HTMX).content.decode()
    assert_isolated(html)
    html = staff_client.get("/memory/facts/", {"filter": f"{RLO}rien"}, **HTMX).content.decode()
    assert "Aucun fait ne correspond" in html
    assert_isolated(html)


def test_search_results_isolate_the_query_keys_channels_and_excerpts(staff_client, reversed_world):
    html = staff_client.get(
        "/memory/search/", {"q": f"Lisbonne {RLO}", "mode": "text"}, **HTMX
    ).content.decode()
    assert "résultat" in html
    assert_isolated(html, at_least=4)


def test_the_forget_preview_and_the_recent_forgets_isolate_topic_and_items(
    staff_client, reversed_world
):
    topic = f"Lisbonne {RLO}"
    html = staff_client.post("/memory/forget/preview/", {"topic": topic}, **HTMX).content.decode()
    assert "Confirmer l'oubli" in html
    assert_isolated(html, at_least=5)
    html = forget_confirmed(staff_client, topic, **HTMX).content.decode()
    assert "Oublié" in html
    assert_isolated(html)


def test_erasing_a_fact_isolates_its_key_in_the_notice(staff_client, reversed_world):
    html = staff_client.post(f"/memory/facts/{KEY}/erase/", **HTMX).content.decode()
    assert "effacé définitivement" in html
    assert_isolated(html)


def test_a_note_preview_isolates_its_content(staff_client, reversed_world, vault):
    (vault / "Note droite.md").write_text(f"# Titre\n\n{RLO}contenu\n", encoding="utf-8")
    html = staff_client.get(
        "/memory/notes/preview/", {"path": "Note droite.md"}, **HTMX
    ).content.decode()
    assert_isolated(html, at_least=1)


def test_a_note_path_holding_an_override_is_refused_and_its_echo_isolated(
    staff_client, reversed_world
):
    """A path holding a character nobody sees names another note than the one it shows:
    refused (memory.stores.notes.note_path_normalize), the path it echoes isolated."""
    html = staff_client.get("/memory/notes/preview/", {"path": NOTE}, **HTMX).content.decode()
    assert "caractère invisible" in html
    assert_isolated(html, at_least=1)


def test_the_chat_isolates_messages_and_their_author(staff_client, reversed_world):
    from agent.views import CHAT_CHANNEL
    from memory.services.messages import message_save

    question = message_save(
        channel=CHAT_CHANNEL, role="user", content=f"{RLO}question", author=f"{RLO}Mickael"
    )
    message_save(
        channel=CHAT_CHANNEL, role="assistant", content=f"{RLO}réponse", reply_to_id=question.id
    )
    html = staff_client.get("/chat/").content.decode()
    assert_isolated(html, at_least=3)
