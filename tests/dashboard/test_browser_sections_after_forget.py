"""After a topic forget, every section of /memory drops what it took, without a reload (QA:
the facts list reloaded itself, but « Moi & objectifs » kept the agent's item it took,
its count and its dead buttons, and the search results and « Dernières injections » kept
the forgotten text until a reload). They listen to the same event (sections.
with_facts_reloaded). A real browser: the swaps are htmx's."""

import pytest

from memory.models import FactKind
from memory.services.facts import fact_store
from memory.services.self_memory import agent_item_store
from tests.dashboard.test_browser import browser_page, log_in  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ITEM = "Je connais le club d'escalade Vertical Art de Lyon."
VALUE = "Le docteur Bernard est le médecin traitant"


@pytest.fixture
def self_items(settings):
    """Two items of the agent's own memory, one of them about the club."""
    settings.ANTHROPIC_API_KEY = ""
    agent_item_store(kind=FactKind.SELF, category="context", content=ITEM)
    agent_item_store(
        kind=FactKind.SELF, category="preference", content="Je préfère les réponses courtes."
    )


@pytest.fixture
def logged(settings, vector_store, local_embedder, eager_tasks):
    """One injection of the fact, in the owner's log."""
    from memory.services.retrieval import auto_retrieve
    from memory.services.retrieval.log import retrieval_logs_wait

    settings.ANTHROPIC_API_KEY = ""
    fact_store(key="medecin", value=VALUE)
    fact_store(key="ville", value="Mickael habite à Lyon")
    auto_retrieve(message="Quel est le numéro du docteur Bernard ?", channel="whatsapp")
    retrieval_logs_wait()


@pytest.fixture
def owner_page(browser_page, live_server, django_user_model):  # noqa: F811
    """The owner's browser, logged in on /memory (request it after the data fixtures)."""
    log_in(browser_page, live_server, django_user_model)
    return browser_page


def _forget(page, topic: str, planned: str = VALUE) -> None:
    """Forget ``topic`` through the page: preview (showing ``planned``), then confirm."""
    from playwright.sync_api import expect

    page.get_by_label("Sujet à oublier").fill(topic)
    page.get_by_role("button", name="Voir ce qui serait oublié").click()
    expect(page.locator("#forget-section .forget-plan")).to_contain_text(planned)
    page.get_by_role("button", name="Confirmer l'oubli").click()
    expect(page.locator("#forget-section .notice")).to_contain_text("Oublié")


def test_the_self_section_drops_the_item_a_topic_forget_took(self_items, owner_page):
    from playwright.sync_api import expect

    expect(owner_page.locator("#self-section")).to_contain_text(ITEM)

    _forget(owner_page, "Vertical Art", planned=ITEM)

    expect(owner_page.locator("#self-section")).not_to_contain_text(ITEM, timeout=5_000)


def test_the_search_results_on_screen_drop_the_forgotten_fact(logged, owner_page):
    from playwright.sync_api import expect

    page = owner_page
    page.locator("#id_q").fill("docteur Bernard")
    page.locator("#search-section input[name=mode][value=text]").check()
    page.locator("#search-section button[type=submit]").click()
    expect(page.locator("#search-results")).to_contain_text(VALUE)

    _forget(page, "docteur Bernard")

    expect(page.locator("#facts-section")).not_to_contain_text(VALUE)
    expect(page.locator("#search-results")).not_to_contain_text(VALUE, timeout=5_000)


def test_the_injection_log_on_screen_drops_the_forgotten_fact(logged, owner_page):
    from playwright.sync_api import expect

    expect(owner_page.locator("#retrieval-log")).to_contain_text(VALUE)

    _forget(owner_page, "docteur Bernard")

    expect(owner_page.locator("#retrieval-log")).not_to_contain_text(VALUE, timeout=5_000)


def test_a_preview_on_screen_is_run_again_without_the_forgotten_fact(logged, owner_page):
    from playwright.sync_api import expect

    page = owner_page
    preview_form = page.locator("form.preview-form")
    preview_form.locator("textarea, input[name=message]").first.fill(
        "Quel est le numéro du docteur Bernard ?"
    )
    preview_form.locator("button[type=submit]").click()
    expect(page.locator("#retrieval-preview")).to_contain_text(VALUE)

    _forget(page, "docteur Bernard")

    expect(page.locator("#retrieval-preview #preview-shown")).to_be_visible()
    expect(page.locator("#retrieval-preview")).not_to_contain_text(VALUE, timeout=5_000)


def test_no_preview_is_run_when_none_was_shown(logged, owner_page):
    from playwright.sync_api import expect

    _forget(owner_page, "docteur Bernard")
    expect(owner_page.locator("#facts-section")).not_to_contain_text(VALUE)
    owner_page.wait_for_timeout(500)
    assert owner_page.locator("#retrieval-preview .alert").count() == 0
