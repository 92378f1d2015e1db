"""The /memory page in a real headless Chromium (Debian's package, driven by Playwright).

Walks what the owner does: log in, add a fact, edit it inline, find it with
both search modes, move a slider and see it kept after a reload (and only it
saved: a score the API changed meanwhile stays), add a note
and open its preview, forget a topic (preview, confirm, undo). Screenshots of each section go to ./artifacts/ (not
committed). Skips when /usr/bin/chromium is missing, unless
MAKILAB_REQUIRE_BROWSER=1 (CI), where a missing browser is a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from memory.models import Fact, Forgetting, MemoryRetrieval, MemorySettings, Message
from memory.services.messages import message_save
from memory.services.settings import memory_settings_update

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(django_settings.BASE_DIR) / "artifacts"
PASSWORD = "mot-de-passe-du-navigateur"
TIMEOUT_MS = 15_000
WEDDING = "Le mariage de Marie à Lisbonne est le 14 juin"

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _browser_or_skip():
    required = os.environ.get("MAKILAB_REQUIRE_BROWSER") == "1"
    reason = ""
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing (apt-get install -y chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "the playwright package is missing (pip install -e '.[test]')"
    if reason:
        if required:
            pytest.fail(f"MAKILAB_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)


@pytest.fixture
def browser_page(monkeypatch):
    _browser_or_skip()
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the test's own ORM
    # calls are plain synchronous code all the same.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="fr-FR")
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on(
            "requestfailed",
            lambda request: errors.append(f"request failed: {request.url} {request.failure}"),
        )
        try:
            yield page
        finally:
            context.close()
            browser.close()
        assert errors == [], errors


@pytest.fixture
def memory_page(browser_page, live_server, django_user_model, settings):
    """The owner's /memory in a real browser, no LLM configured: call it once the test's
    memories are stored, it logs in and returns the page."""
    settings.ANTHROPIC_API_KEY = ""

    def opened():
        log_in(browser_page, live_server, django_user_model)
        return browser_page

    return opened


def log_in(page, live_server, django_user_model) -> None:
    """Create the owner's staff account and log in through the French login page."""
    from playwright.sync_api import expect

    django_user_model.objects.create_user(username="proprietaire", password=PASSWORD, is_staff=True)
    page.goto(f"{live_server.url}/memory/")
    expect(page.locator("h1")).to_have_text("Connexion")
    shot(page, "00-login")
    page.get_by_label("Nom d'utilisateur").fill("proprietaire")
    page.get_by_label("Mot de passe").fill(PASSWORD)
    page.get_by_role("button", name="Se connecter").click()
    expect(page).to_have_url(f"{live_server.url}/memory/")


def shot(page, name: str, selector: str | None = None) -> None:
    path = ARTIFACTS / f"{name}.png"
    if selector:
        page.locator(selector).screenshot(path=str(path))
    else:
        page.screenshot(path=str(path), full_page=True)


def test_the_owner_uses_the_memory_page_in_a_real_browser(
    browser_page, live_server, django_user_model, vector_store, local_embedder, vault
):
    from playwright.sync_api import expect

    from memory.services.indexing import index_rows

    page = browser_page
    external: list[str] = []
    page.on(
        "request",
        lambda request: (
            None
            if request.url.startswith(live_server.url) or request.url.startswith("data:")
            else external.append(request.url)
        ),
    )

    log_in(page, live_server, django_user_model)
    expect(page.locator("#faits h2")).to_contain_text("Faits")
    assert page.evaluate("typeof htmx") == "object", "htmx must load from our static files"

    # Add a fact.
    page.locator("#facts-section summary", has_text="Ajouter un fait").click()
    page.get_by_label("Clé").fill("sport_prefere")
    page.get_by_label("Valeur").first.fill("Mickael fait de l'escalade le mardi soir.")
    page.locator("#facts-section").get_by_label("Type").select_option("preference")
    page.get_by_label("Sujets").first.fill("Mickael, escalade")
    page.get_by_role("button", name="Enregistrer le fait").click()
    expect(page.locator("#facts-section .notice")).to_contain_text("Fait « sport_prefere » ajouté.")
    card = page.locator("article.fact[data-key='sport_prefere']")
    expect(card).to_contain_text("escalade le mardi soir")
    assert Fact.objects.get(key="sport_prefere").subjects == ["mickael", "escalade"]

    # Edit it inline.
    card.get_by_role("link", name="Modifier").click()
    editing = page.locator("article.fact.editing[data-key='sport_prefere']")
    expect(editing).to_be_visible()
    editing.get_by_label("Valeur").fill("Mickael fait de l'escalade le mardi et le jeudi soir.")
    editing.get_by_label("Importance").fill("0.9")
    shot(page, "01-fact-inline-edit", "article.fact.editing")
    editing.get_by_role("button", name="Enregistrer").click()
    expect(card).to_contain_text("le mardi et le jeudi soir")
    expect(card.locator(".notice")).to_have_text("Enregistré.")
    fact = Fact.objects.get(key="sport_prefere")
    assert fact.importance == 0.9
    card.get_by_role("link", name="Historique").click()
    expect(card.locator(".history-list")).to_contain_text("Modifié")
    shot(page, "02-section-faits", "#faits")

    # Find it in text mode (FTS-free: facts are ranked in T1)...
    search = page.locator("#search-section")
    search.get_by_label("Recherche").fill("jeudi escalade")
    search.get_by_label("Texte").check()
    search.get_by_role("button", name="Chercher").click()
    expect(page.locator("#search-results .hit").first).to_contain_text("sport_prefere")
    expect(page.locator("#search-results")).to_contain_text("(texte)")
    # ... and by meaning, once indexed (what the indexing task does after a save).
    index_rows("fact", [fact.pk])
    search = page.locator("#search-section")
    search.get_by_label("Recherche").fill("quel sport pratique-t-il ?")
    search.get_by_label("Sémantique").check()
    search.get_by_role("button", name="Chercher").click()
    expect(page.locator("#search-results")).to_contain_text("(sémantique)")
    expect(page.locator("#search-results .hit").first).to_contain_text("sport_prefere")
    shot(page, "03-section-recherche", "#recherche")
    # Narrow it with the filters: the fact is a preference about climbing, not a goal.
    search.get_by_label("Type de fait").select_option("goal")
    search.get_by_role("button", name="Chercher").click()
    expect(page.locator("#search-results")).to_contain_text("avec ces filtres")
    search = page.locator("#search-section")
    search.get_by_label("Type de fait").select_option("preference")
    search.get_by_label("Sujets").fill("escalade")
    search.get_by_role("button", name="Chercher").click()
    expect(page.locator("#search-results")).to_contain_text("filtrés")
    expect(page.locator("#search-results .hit").first).to_contain_text("sport_prefere")

    # Move a slider: saved as it moves, still there after a reload. Only what moved is
    # saved: the score the API changed since the page opened keeps the API's value.
    slider = page.locator("#id_max_results")
    status = page.locator("#retrieval-status")
    expect(slider).to_have_value("4")
    memory_settings_update(changes={"min_score": 0.7})
    slider.focus()
    slider.press("ArrowRight")
    slider.press("ArrowRight")
    expect(page.locator("#max_results_value")).to_have_text("6")
    expect(status).to_contain_text("6 souvenirs au plus")
    assert (MemorySettings.load().max_results, MemorySettings.load().min_score) == (6, 0.7)
    memory_settings_update(changes={"min_score": 0.5})  # the preview below expects 0.5
    # Back to the value the page opened with: a move all the same, saved.
    slider.press("ArrowLeft")
    slider.press("ArrowLeft")
    expect(status).to_contain_text("4 souvenirs au plus")
    assert MemorySettings.load().max_results == 4
    slider.press("ArrowRight")
    slider.press("ArrowRight")
    expect(status).to_contain_text("6 souvenirs au plus")
    assert MemorySettings.load().max_results == 6
    page.reload()
    expect(page.locator("#id_max_results")).to_have_value("6")
    expect(page.locator("#max_results_value")).to_have_text("6")
    # The observed rooms' extracts: turned off with their own slider.
    live = page.locator("#id_live_max_results")
    expect(live).to_have_value("10")
    live.focus()
    live.press("Home")
    expect(page.locator("#live_max_results_value")).to_have_text("0")
    expect(page.locator("#retrieval-status")).to_contain_text("aucun extrait des salons observés")
    assert MemorySettings.load().live_max_results == 0
    # What would be injected for a message (the lead's auto_retrieve_preview).
    retrieval = page.locator("#retrieval-section")
    retrieval.get_by_label("Message").fill("Quel sport Mickael pratique-t-il ?")
    retrieval.get_by_role("button", name="Voir l'aperçu").click()
    expect(page.locator("#retrieval-preview")).to_contain_text("tokens ajoutés")
    expect(page.locator("#retrieval-preview")).to_contain_text("escalade")
    shot(page, "04-section-auto-retrieval", "#auto-retrieval")

    # Add a fixed note and open its preview.
    notes = page.locator("#notes-section")
    notes.get_by_label("Chemin de la note").fill("Profil")
    notes.get_by_role("button", name="Ajouter la note").click()
    expect(page.locator("#notes-section .notice")).to_contain_text("ajoutée au contexte")
    fixed = page.locator("#notes-section .notes-fixed li", has_text="Profil.md")
    fixed.get_by_role("link", name="Aperçu").click()
    expect(page.locator("#note-preview")).to_contain_text("Mickael, grimpeur, vit à Lyon.")
    shot(page, "05-section-notes", "#notes")

    # Forget a topic: the preview first (nothing changes), then the confirmation, then undo.
    for text in (WEDDING, "Le chien de Marie s'appelle Filou"):
        message_save(channel="whatsapp", role="user", content=text)
    forget = page.locator("#forget-section")
    forget.get_by_label("Sujet à oublier").fill("le mariage de Marie à Lisbonne")
    forget.get_by_role("button", name="Voir ce qui serait oublié").click()
    plan = page.locator("#forget-section .forget-plan")
    expect(plan).to_contain_text("1 échange(s)")
    expect(plan).to_contain_text("14 juin")
    expect(plan).not_to_contain_text("Filou")
    assert not Forgetting.objects.exists()
    shot(page, "06-section-oubli-apercu", "#oubli")
    page.locator("#forget-section").get_by_role("button", name="Confirmer l'oubli").click()
    expect(page.locator("#forget-section .notice")).to_contain_text("Oublié : 1 échange(s)")
    expect(page.locator("#forget-section .forgettings")).to_contain_text("définitif le")
    assert not Message.objects.filter(content=WEDDING).exists()
    page.locator("#forget-section").get_by_role("button", name="Annuler l'oubli").click()
    expect(page.locator("#forget-section .notice")).to_contain_text("Oubli annulé")
    expect(page.locator("#forget-section .forgettings")).to_contain_text("Restauré")
    expect(
        page.locator("#forget-section").get_by_role("button", name="Annuler l'oubli")
    ).to_have_count(0)
    assert Message.objects.filter(content=WEDDING).exists()
    shot(page, "07-section-oubli", "#oubli")

    shot(page, "08-page-memoire")
    page.set_viewport_size({"width": 375, "height": 812})
    page.reload()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, f"the page scrolls sideways on a phone ({width}px)"
    shot(page, "09-page-memoire-telephone")

    page.get_by_role("link", name="Coûts").click()
    expect(page.locator("h1")).to_have_text("Coûts LLM")
    shot(page, "10-page-couts")
    assert external == [], f"the page reached outside the server: {external}"


RLO = "\u202e"
# Each text node holding a right-to-left override, with its parent and that parent's
# computed unicode-bidi (what the bidi algorithm isolates).
RLO_TEXTS_BIDI = """() => {
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const found = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.data.includes("\\u202e")) continue;
    const parent = node.parentElement;
    found.push([`${parent.tagName.toLowerCase()}.${parent.className}`, node.data.trim(),
                getComputedStyle(parent).unicodeBidi]);
  }
  return found;
}"""
# Whether ``word``, in the first text node under ``selector`` holding it, is drawn left to
# right: its first letter left of its last one (an override spilling over reverses it).
DRAWN_LEFT_TO_RIGHT = """([selector, word]) => {
  const walker = document.createTreeWalker(document.querySelector(selector), NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const at = node.data.indexOf(word);
    if (at < 0) continue;
    const box = (i) => { const r = document.createRange(); r.setStart(node, i);
                         r.setEnd(node, i + 1); return r.getBoundingClientRect(); };
    return box(at).left < box(at + word.length - 1).left;
  }
  return null;
}"""
ISOLATING = {"isolate", "plaintext", "isolate-override"}


def test_stored_text_is_bidi_isolated_in_a_real_browser(
    browser_page, live_server, django_user_model, settings
):
    """A right-to-left override in what the owner or the agent wrote reverses that text
    only: the words the page writes after it still read left to right."""
    from playwright.sync_api import expect

    from memory.models import FactKind
    from memory.services.facts import fact_store
    from memory.services.self_memory import agent_item_store

    settings.ANTHROPIC_API_KEY = ""
    fact, _ = fact_store(
        key="cle", value=f"Lisbonne {RLO}valeur", subjects=[f"sujet{RLO}", "autre"]
    )
    # A key stored before keys were checked for invisible characters (validate_fact_key).
    type(fact).all_objects.filter(pk=fact.pk).update(key=f"cle{RLO}inversee")
    agent_item_store(kind=FactKind.SELF, category="context", content=f"Lisbonne {RLO}moi")
    message_save(channel="whatsapp", role="user", content=f"Lisbonne {RLO}message")
    MemoryRetrieval.objects.create(channel=f"canal{RLO}", message_preview=f"{RLO}question")
    page = browser_page
    log_in(page, live_server, django_user_model)

    search = page.locator("#search-section")
    search.get_by_label("Recherche").fill(f"Lisbonne {RLO}")
    search.get_by_label("Texte").check()
    search.get_by_role("button", name="Chercher").click()
    expect(page.locator("#search-results")).to_contain_text("(texte)")
    forget = page.locator("#forget-section")
    forget.get_by_label("Sujet à oublier").fill(f"Lisbonne {RLO}")
    forget.get_by_role("button", name="Voir ce qui serait oublié").click()
    expect(page.locator("#forget-section .forget-plan")).to_contain_text("prendrait")
    shot(page, "11-texte-bidirectionnel", "#oubli")

    reversed_words = [
        word
        for selector, word in (
            ("#search-results > p.muted", "texte"),
            ("#forget-section .forget-plan > p", "prendrait"),
            ("#retrieval-log header", "tokens"),
        )
        if not page.evaluate(DRAWN_LEFT_TO_RIGHT, [selector, word])
    ]
    assert reversed_words == [], "the page's own words drawn reversed"
    texts = page.evaluate(RLO_TEXTS_BIDI)
    assert len(texts) >= 10, texts
    assert [t for t in texts if t[2] not in ISOLATING] == [], texts


def test_a_fact_whose_importance_is_no_tenth_can_be_edited_in_a_real_browser(
    browser_page, live_server, django_user_model, settings
):
    """QA: the importance input stepped by 0.1, so a fact the agent stored at 0.75 could not
    be saved: the browser refused the form (« nearest valid values 0.7 and 0.8 ») and the
    owner had to change the importance to change the text."""
    from playwright.sync_api import expect

    from memory.services.facts import fact_store

    settings.ANTHROPIC_API_KEY = ""
    fact_store(key="cafe", value="Aime le café noir", importance=0.75)
    page = browser_page
    log_in(page, live_server, django_user_model)

    card = page.locator("article.fact[data-key='cafe']")
    card.get_by_role("link", name="Modifier").click()
    editing = page.locator("article.fact.editing[data-key='cafe']")
    editing.get_by_label("Valeur").fill("Aime le café noir, sans sucre.")
    editing.get_by_role("button", name="Enregistrer").click()

    expect(card.locator(".notice")).to_have_text("Enregistré.")
    fact = Fact.objects.get(key="cafe")
    assert fact.value == "Aime le café noir, sans sucre." and fact.importance == 0.75


def test_the_keyboard_keeps_its_place_through_an_inline_edit(
    browser_page, live_server, django_user_model, settings
):
    """QA: after « Modifier » (Enter) and after « Enregistrer », the focus went to the
    page's body: a keyboard user tabbed again from the top of the page."""
    from playwright.sync_api import expect

    from memory.services.facts import fact_store

    settings.ANTHROPIC_API_KEY = ""
    fact_store(key="ville", value="Paul habite à Lyon")
    page = browser_page
    log_in(page, live_server, django_user_model)

    card = page.locator("article.fact[data-key='ville']")
    card.get_by_role("link", name="Modifier").focus()
    page.keyboard.press("Enter")
    editing = page.locator("article.fact.editing[data-key='ville']")
    expect(editing.get_by_label("Valeur")).to_be_focused()
    page.keyboard.type(" (3e)")
    editing.get_by_role("button", name="Enregistrer").focus()
    page.keyboard.press("Enter")

    expect(card.locator(".notice")).to_have_text("Enregistré.")
    expect(card.locator(".notice")).to_be_focused()
    assert "(3e)" in Fact.objects.get(key="ville").value
