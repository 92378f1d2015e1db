"""Stored text is data: HTML/JS payloads in facts, messages, logs and notes come out escaped."""

from __future__ import annotations

import pytest

from memory.models import Fact, MemoryRetrieval, MemorySettings, Message
from memory.services.facts import fact_store
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db

SCRIPT = '<script>alert("xss")</script>'
IMG = "<img src=x onerror=alert(1)>"
CLOSE = '</textarea><svg onload=alert(2)>"'
# What must never reach a page as markup.
RAW = ("<script>alert", "<img src=x", "<svg onload", "<b>")


def assert_escaped(html: str) -> None:
    for raw in RAW:
        assert raw not in html, f"{raw!r} reached the page unescaped"


@pytest.fixture
def hostile_fact():
    fact, _ = fact_store(
        key=f"k{IMG}",
        value=f"{SCRIPT} {CLOSE}",
        subjects=["<b>gras</b>"],
    )
    # A channel stored before the channels' rule held for facts (writers refuse it now).
    Fact.all_objects.filter(pk=fact.pk).update(channel="<b>canal</b>")
    fact_store(key=f"k{IMG}", value=f"{SCRIPT} v2")
    fact.refresh_from_db()
    return fact


def test_the_facts_section_escapes_keys_values_subjects_and_channels(staff_client, hostile_fact):
    for response in (
        staff_client.get("/memory/"),
        staff_client.get("/memory/facts/", **HTMX),
        staff_client.get(f"/memory/facts/{hostile_fact.key}/", **HTMX),
        staff_client.get(f"/memory/facts/{hostile_fact.key}/edit/", **HTMX),
        staff_client.get(f"/memory/facts/{hostile_fact.key}/edit/"),
        staff_client.get(f"/memory/facts/{hostile_fact.key}/history/", **HTMX),
    ):
        assert response.status_code == 200
        html = response.content.decode()
        assert_escaped(html)
        assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_the_confirm_text_of_forget_cannot_break_out_of_its_attribute(staff_client):
    fact_store(key='k"onmouseover="alert(1)', value="v")
    html = staff_client.get("/memory/facts/", **HTMX).content.decode()
    assert 'onmouseover="alert' not in html
    assert "k&quot;onmouseover=&quot;alert(1)" in html


def test_search_results_escape_excerpts(staff_client, hostile_fact):
    Message.objects.create(channel="<b>c</b>", role="user", content=f"alerte {SCRIPT} {IMG}")
    html = staff_client.get(
        "/memory/search/", {"q": "alert", "mode": "text"}, **HTMX
    ).content.decode()
    assert "résultat" in html
    assert_escaped(html)
    assert "&lt;script&gt;alert(&quot;xss&quot;)&lt;/script&gt;" in html


def test_the_query_itself_is_escaped(staff_client):
    html = staff_client.get(
        "/memory/search/", {"q": SCRIPT, "mode": "text"}, **HTMX
    ).content.decode()
    assert_escaped(html)
    html = staff_client.get("/memory/search/", {"q": SCRIPT, "mode": "text"}).content.decode()
    assert_escaped(html)


def test_the_retrieval_log_escapes_messages_memories_and_failures(staff_client):
    MemoryRetrieval.objects.create(
        channel="<b>c</b>",
        message_preview=SCRIPT,
        memories=[
            {"id": 1, "kind": "<b>k</b>", "sources": {"<b>s</b>": {"score": 0.9}}, "text": IMG}
        ],
        notes=[{"path": SCRIPT}],
        failed_sources={"<b>notes</b>": SCRIPT},
        timings_ms={"<b>t</b>": 1.0},
    )
    for response in (staff_client.get("/memory/"), staff_client.get("/memory/retrieval/", **HTMX)):
        html = response.content.decode()
        assert_escaped(html)
        assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_notes_escape_paths_and_content(staff_client, vault):
    pytest.importorskip("memory.services.notes")
    name = "Note <img src=x onerror=alert(1)>.md"
    (vault / name).write_text(f"{SCRIPT}\n{IMG}\n", encoding="utf-8")
    MemorySettings.objects.update_or_create(pk=1, defaults={"obsidian_context_notes": [name]})
    html = staff_client.get("/memory/notes/", **HTMX).content.decode()
    assert_escaped(html)
    assert "Note &lt;img src=x onerror=alert(1)&gt;.md" in html
    preview = staff_client.get("/memory/notes/preview/", {"path": name}, **HTMX).content.decode()
    assert_escaped(preview)
    assert "&lt;script&gt;alert(&quot;xss&quot;)&lt;/script&gt;" in preview


def test_form_errors_echo_input_escaped(staff_client):
    response = staff_client.post(
        "/memory/facts/", {"key": "", "value": SCRIPT, "memory_type": IMG}, **HTMX
    )
    assert response.status_code == 422
    assert_escaped(response.content.decode())


def test_the_retrieval_preview_escapes_what_it_would_inject(
    staff_client, vector_store, local_embedder
):
    retrieval = pytest.importorskip("memory.services.retrieval")
    if not hasattr(retrieval, "auto_retrieve_preview"):
        pytest.skip("memory.services.retrieval has no auto_retrieve_preview yet")
    fact = fact_store(key="nom", value=f"{SCRIPT} {IMG}", memory_type="identity")[0]
    from memory.services.indexing import KIND_FACT, index_row

    index_row(KIND_FACT, fact.pk)  # found by the sources, so the relevance gate lets it in
    response = staff_client.get(
        "/memory/retrieval/preview/", {"message": f"qui suis-je ? {IMG}", "channel": "c"}, **HTMX
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "tokens ajoutés" in html
    assert_escaped(html)
    assert "&lt;script&gt;" in html
