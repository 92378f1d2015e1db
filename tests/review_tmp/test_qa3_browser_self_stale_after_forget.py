"""QA3 (browser): after a topic forget, « Moi & objectifs » still lists what it took.

On /memory, « Oublier un sujet » › « Vertical Art » › « Voir ce qui serait oublié »
lists « Moi (l'agent) Je connais le club d'escalade Vertical Art de Lyon. », and
« Confirmer l'oubli » answers « Oublié : … 1 fait(s) ou élément(s) de l'agent ».
The facts list reloads itself (sections.with_facts_reloaded), but the « Moi &
objectifs » section above keeps the item, its count (8 instead of 7) and its live
buttons until a reload: « Modifier » on it then gets a 404 that htmx drops — the
button does nothing, silently.
"""

import pytest

from memory.models import FactKind
from memory.services.self_memory import agent_item_store
from tests.dashboard.test_browser import browser_page, log_in  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ITEM = "Je connais le club d'escalade Vertical Art de Lyon."


def test_the_self_section_drops_the_item_a_topic_forget_took(
    browser_page,
    live_server,
    django_user_model,
    settings,  # noqa: F811
):
    from playwright.sync_api import expect

    settings.ANTHROPIC_API_KEY = ""
    agent_item_store(kind=FactKind.SELF, category="context", content=ITEM)
    agent_item_store(
        kind=FactKind.SELF, category="preference", content="Je préfère les réponses courtes."
    )
    page = browser_page
    log_in(page, live_server, django_user_model)
    expect(page.locator("#self-section")).to_contain_text(ITEM)

    page.get_by_label("Sujet à oublier").fill("Vertical Art")
    page.get_by_role("button", name="Voir ce qui serait oublié").click()
    expect(page.locator("#forget-section .forget-plan")).to_contain_text(ITEM)
    page.get_by_role("button", name="Confirmer l'oubli").click()
    expect(page.locator("#forget-section .notice")).to_contain_text("Oublié")

    expect(page.locator("#self-section")).not_to_contain_text(ITEM, timeout=5_000)
