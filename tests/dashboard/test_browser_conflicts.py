"""Changes made since the page opened, in a real browser: a refused slider goes back to
the stored value, and a refused fact edit shows the other client's change and keeps it.

Slow (headless Chromium, as test_browser.py): skipped without /usr/bin/chromium.
"""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact, MemorySettings
from memory.services.facts import fact_store, fact_update
from memory.services.settings import memory_settings_update
from tests.dashboard.test_browser import browser_page, memory_page  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_refused_slider_goes_back_to_the_stored_value(
    memory_page,  # noqa: F811
):
    """QA: after the 422 the slider still said 0,55; moving another one saved it."""
    from playwright.sync_api import expect

    page = memory_page()
    slider = page.locator("#id_min_score")
    shown = page.locator("#min_score_value")
    status = page.locator("#retrieval-status")
    expect(slider).to_have_value("0.5")
    memory_settings_update(changes={"min_score": 0.7})  # the API, meanwhile

    slider.focus()
    slider.press("ArrowRight")

    expect(status).to_contain_text("a changé depuis")
    expect(page.locator("#id_min_score")).to_have_value("0.7")
    expect(shown).to_have_text("0,70")
    assert MemorySettings.load().min_score == 0.7
    # Another slider moved: the refused one is left as stored.
    other = page.locator("#id_max_results")
    other.focus()
    other.press("ArrowRight")
    expect(status).to_contain_text("5 souvenirs au plus")
    expect(status).to_contain_text("score ≥ 0,70")
    assert (MemorySettings.load().max_results, MemorySettings.load().min_score) == (5, 0.7)
    # Moved again, knowingly: the owner's value is saved.
    slider = page.locator("#id_min_score")
    slider.focus()
    slider.press("ArrowLeft")
    expect(status).to_contain_text("score ≥ 0,65")
    expect(shown).to_have_text("0,65")
    assert MemorySettings.load().min_score == 0.65


def test_a_refused_fact_edit_shows_the_change_made_since_and_keeps_it(
    memory_page,  # noqa: F811
):
    """QA: the form came back with the old importance and subjects, and saving again
    wrote them over the other client's change."""
    from playwright.sync_api import expect

    livre = fact_store(key="livre", value="Dune", importance=0.5)[0]
    page = memory_page()
    card = page.locator("article.fact[data-key='livre']")
    card.get_by_role("link", name="Modifier").click()
    editing = page.locator("article.fact.editing[data-key='livre']")
    expect(editing).to_be_visible()
    fact_update(fact=livre, actor=Actor.USER, importance=0.9, subjects=["sf"])  # meanwhile

    editing.get_by_label("Valeur").fill("Fondation")
    editing.get_by_role("button", name="Enregistrer").click()

    alert = editing.locator(".alert")
    expect(alert).to_contain_text("Importance : « 0,9 »")
    expect(alert).to_contain_text("Sujets : « sf »")
    expect(editing.get_by_label("Valeur")).to_have_value("Fondation")
    expect(editing.get_by_label("Importance")).to_have_value("0.9")
    expect(editing.get_by_label("Sujets")).to_have_value("sf")
    editing.get_by_role("button", name="Enregistrer").click()
    expect(card.locator(".notice")).to_have_text("Enregistré.")
    stored = Fact.objects.get(key="livre")
    assert (stored.value, stored.importance, stored.subjects) == ("Fondation", 0.9, ["sf"])
