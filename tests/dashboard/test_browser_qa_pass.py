"""A QA pass of /memory in a real browser: the facts count follows the page's actions, a
look-alike key is refused once, and a slider's number reads as the status line does.

Slow (headless Chromium, as test_browser.py): skipped without /usr/bin/chromium.
"""

from __future__ import annotations

import pytest

from memory.models import Fact
from memory.services.facts import fact_store
from tests.dashboard.test_browser import browser_page, memory_page  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_facts_count_follows_forget_restore_add_and_erase(
    memory_page,  # noqa: F811
):
    """QA: after a forget confirmed on the page, the header's count stayed as it was."""
    from playwright.sync_api import expect

    fact_store(key="ville", value="Paul habite à Lyon")
    fact_store(key="sport", value="Paul grimpe le mardi")
    page = memory_page()
    page.on("dialog", lambda dialog: dialog.accept())
    count = page.locator("#faits-title .count")
    expect(count).to_contain_text("2")

    card = page.locator("article.fact[data-key='ville']")
    card.get_by_role("button", name="Oublier").click()
    expect(card.locator(".notice")).to_contain_text("Fait oublié")
    expect(count).to_contain_text("1")
    card.get_by_role("button", name="Restaurer").click()
    expect(card.locator(".notice")).to_contain_text("Fait restauré")
    expect(count).to_contain_text("2")

    page.locator("#facts-section summary", has_text="Ajouter un fait").click()
    page.get_by_label("Clé").fill("chat")
    page.get_by_label("Valeur").first.fill("Un chat nommé Pixel")
    page.get_by_role("button", name="Enregistrer le fait").click()
    expect(page.locator("#facts-section .notice")).to_contain_text("ajouté")
    expect(page.locator("#faits-title .count")).to_contain_text("3")

    page.locator("article.fact[data-key='sport']").get_by_role(
        "button", name="Effacer définitivement"
    ).click()
    expect(page.locator("#facts-section")).to_contain_text("effacé définitivement")
    expect(page.locator("#faits-title .count")).to_contain_text("2")
    assert Fact.objects.count() == 2


def test_a_look_alike_key_is_refused_once(
    memory_page,  # noqa: F811
):
    from playwright.sync_api import expect

    fact_store(key="courses", value="lait")
    page = memory_page()
    page.locator("#facts-section summary", has_text="Ajouter un fait").click()
    page.get_by_label("Clé").fill("Courses")
    page.get_by_label("Valeur").first.fill("pain")
    page.get_by_role("button", name="Enregistrer le fait").click()
    refusal = page.locator("#facts-section").get_by_text("ressemble trop")
    expect(refusal.first).to_be_visible()
    assert refusal.count() == 1, page.locator("#facts-section form").first.inner_text()


def test_a_sliders_number_reads_as_the_status_line_says_it(
    memory_page,  # noqa: F811
):
    """QA: « 0.5 » beside the slider, « score ≥ 0,50 » in the status line."""
    from playwright.sync_api import expect

    page = memory_page()
    slider = page.locator("#id_min_score")
    shown = page.locator("#min_score_value")
    expect(slider).to_have_value("0.5")  # the input's own value stays the browser's
    expect(shown).to_have_text("0,50")
    slider.focus()
    slider.press("ArrowRight")
    expect(shown).to_have_text("0,55")
    expect(page.locator("#retrieval-status")).to_contain_text("score ≥ 0,55")
    expect(shown).to_have_text("0,55")


def test_a_topic_forget_takes_its_facts_off_the_list_and_its_undo_brings_them_back(
    memory_page,  # noqa: F811
):
    """QA: after a topic forget confirmed on the page, the facts it took stayed in the list
    (with their Oublier buttons) until a reload; the filter typed meanwhile is kept."""
    from playwright.sync_api import expect

    fact_store(key="ville", value="Paul habite à Lyon")
    fact_store(key="travail_lyon", value="Paul travaille à Lyon le lundi")
    fact_store(key="sport", value="Paul grimpe le mardi")
    page = memory_page()
    cards = page.locator("#facts-list article.fact")
    expect(cards).to_have_count(3)
    page.locator("#id_filter").fill("Paul")
    expect(cards).to_have_count(3)

    forget = page.locator("#forget-section")
    forget.get_by_label("Sujet à oublier").fill("Lyon")
    forget.get_by_role("button", name="Voir ce qui serait oublié").click()
    expect(page.locator("#forget-section .forget-plan")).to_contain_text("prendrait")
    forget.get_by_role("button", name="Confirmer l'oubli").click()
    expect(page.locator("#forget-section .notice")).to_contain_text("Oublié")
    expect(cards).to_have_count(1)
    expect(page.locator("#facts-list article.fact[data-key='sport']")).to_have_count(1)
    expect(page.locator("#id_filter")).to_have_value("Paul")

    forget.get_by_role("button", name="Annuler l'oubli").click()
    expect(page.locator("#forget-section .notice")).to_contain_text("Oubli annulé")
    expect(cards).to_have_count(3)
