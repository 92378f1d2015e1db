"""QA3 (browser): after a topic forget, the search results and the injection log on
screen keep showing what was forgotten.

On /memory: « Recherche » (texte) « docteur Bernard » lists the fact « Le docteur
Bernard est le médecin traitant »; « Oublier un sujet » › « docteur Bernard » ›
« Confirmer l'oubli » answers « Oublié : 0 échange(s), 1 fait(s) … ». The facts
list drops the fact at once, but the search results just above and « Dernières
injections » still show its words until the page is reloaded (a reload redacts
them, as it should).
"""

import pytest

from memory.services.facts import fact_store
from tests.dashboard.test_browser import browser_page, log_in  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

VALUE = "Le docteur Bernard est le médecin traitant"


@pytest.fixture
def logged(settings):
    """One injection of the fact, in the owner's log."""
    from memory.services.retrieval import auto_retrieve
    from memory.services.retrieval.log import retrieval_logs_wait

    settings.ANTHROPIC_API_KEY = ""
    fact_store(key="medecin", value=VALUE)
    fact_store(key="ville", value="Mickael habite à Lyon")
    auto_retrieve(message="Quel est le numéro du docteur Bernard ?", channel="whatsapp")
    retrieval_logs_wait()


def _forget(page, topic):
    from playwright.sync_api import expect

    page.get_by_label("Sujet à oublier").fill(topic)
    page.get_by_role("button", name="Voir ce qui serait oublié").click()
    expect(page.locator("#forget-section .forget-plan")).to_contain_text(VALUE)
    page.get_by_role("button", name="Confirmer l'oubli").click()
    expect(page.locator("#forget-section .notice")).to_contain_text("Oublié")


def test_the_search_results_on_screen_drop_the_forgotten_fact(
    browser_page,
    live_server,
    django_user_model,
    logged,  # noqa: F811
):
    from playwright.sync_api import expect

    page = browser_page
    log_in(page, live_server, django_user_model)
    page.locator("#id_q").fill("docteur Bernard")
    page.locator("#search-section input[name=mode][value=text]").check()
    page.locator("#search-section button[type=submit]").click()
    expect(page.locator("#search-results")).to_contain_text(VALUE)

    _forget(page, "docteur Bernard")

    expect(page.locator("#facts-section")).not_to_contain_text(VALUE)
    expect(page.locator("#search-results")).not_to_contain_text(VALUE, timeout=5_000)


def test_the_injection_log_on_screen_drops_the_forgotten_fact(
    browser_page,
    live_server,
    django_user_model,
    logged,  # noqa: F811
):
    from playwright.sync_api import expect

    page = browser_page
    log_in(page, live_server, django_user_model)
    expect(page.locator("#retrieval-log")).to_contain_text(VALUE)

    _forget(page, "docteur Bernard")

    expect(page.locator("#retrieval-log")).not_to_contain_text(VALUE, timeout=5_000)
