"""/memory "Oublier un sujet": a preview first, then the confirmation, then undo."""

import html as html_lib

import pytest

from memory.models import Forgetting, ForgettingState, Message
from memory.services.facts import fact_store
from tests.dashboard.conftest import HTMX, forget_confirmed
from tests.memory.world import marie_messages_save

pytestmark = pytest.mark.django_db


@pytest.fixture
def memory():
    marie_messages_save()


def test_the_section_is_on_the_page_in_french(staff_client):
    html = staff_client.get("/memory/").content.decode()
    assert "Oublier un sujet" in html and "Aucun oubli pour l'instant." in html


def test_the_preview_shows_what_would_be_taken_and_changes_nothing(staff_client, memory):
    response = staff_client.post(
        "/memory/forget/preview/", {"topic": "le mariage de Marie à Lisbonne"}, **HTMX
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "Confirmer l'oubli" in html and "14 juin" in html and "Filou" not in html
    assert Message.objects.count() == 2 and not Forgetting.objects.exists()


def test_confirming_forgets_and_undo_brings_it_back(staff_client, memory):
    response = forget_confirmed(staff_client, "le mariage de Marie à Lisbonne", **HTMX)
    assert response.status_code == 200 and "Oublié : 1 échange(s)" in response.content.decode()
    assert Message.objects.count() == 1
    forgetting = Forgetting.objects.get()
    assert "Annuler l'oubli" in response.content.decode()
    response = staff_client.post(f"/memory/forget/{forgetting.pk}/restore/", **HTMX)
    assert "Oubli annulé" in response.content.decode()
    assert Message.objects.count() == 2
    forgetting.refresh_from_db()
    assert forgetting.state == ForgettingState.RESTORED


def test_a_vague_topic_is_refused_in_the_form(staff_client, memory):
    response = staff_client.post("/memory/forget/preview/", {"topic": "tout ça"}, **HTMX)
    assert response.status_code == 422 and "trop vague" in response.content.decode()


def test_the_forms_need_the_csrf_token(client, staff_user, memory):
    from django.test import Client

    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(staff_user)
    response = csrf_client.post("/memory/forget/confirm/", {"topic": "Marie"})
    assert response.status_code == 403 and Message.objects.count() == 2


def test_recent_forgets_show_their_state_and_the_undo_button_only_while_restorable(
    staff_client, memory
):
    from datetime import timedelta

    from django.utils import timezone

    from memory.services.forgetting import forgettings_purge, topic_forget

    purged = topic_forget(topic="chien Marie", actor="user")
    forgettings_purge(now=timezone.now() + timedelta(days=8))
    active = topic_forget(topic="mariage Lisbonne", actor="user")

    html = staff_client.get("/memory/forget/", **HTMX).content.decode()
    assert "Oublis récents" in html
    # The owner's date (TIME_ZONE): the UTC one differs from 23:00 UTC (a failure each night).
    assert f"définitif le {timezone.localtime(active.purge_after):%d/%m/%Y}" in html
    assert "Effacé définitivement" in html and "Filou" not in html
    assert html.count("Annuler l'oubli") == 1
    assert f"/memory/forget/{active.forgetting_id}/restore/" in html
    assert f"/memory/forget/{purged.forgetting_id}/restore/" not in html


def test_undoing_a_purged_or_unknown_forget_answers_a_french_message_not_a_500(
    staff_client, memory
):
    from datetime import timedelta

    from django.utils import timezone

    from memory.services.forgetting import forgettings_purge, topic_forget

    purged = topic_forget(topic="chien Marie", actor="user")
    forgettings_purge(now=timezone.now() + timedelta(days=8))

    response = staff_client.post(f"/memory/forget/{purged.forgetting_id}/restore/", **HTMX)
    assert response.status_code == 422
    assert "effacé définitivement" in response.content.decode()
    response = staff_client.post("/memory/forget/999/restore/", **HTMX)
    assert response.status_code == 422 and "Aucun oubli n° 999" in response.content.decode()


def test_without_htmx_the_preview_answers_the_whole_page(staff_client, memory):
    response = staff_client.post("/memory/forget/preview/", {"topic": "mariage Lisbonne"})
    html = response.content.decode()
    assert response.status_code == 200 and "<html" in html
    assert "Confirmer l'oubli" in html and "14 juin" in html
    assert not Forgetting.objects.exists()


def test_the_confirmation_takes_only_the_items_the_preview_showed(staff_client, memory):
    html = staff_client.post(
        "/memory/forget/preview/", {"topic": "le mariage de Marie à Lisbonne"}, **HTMX
    ).content.decode()
    assert 'name="item" value="message:' in html
    # Confirming a preview that listed nothing (stale page): nothing is taken.
    staff_client.post(
        "/memory/forget/confirm/",
        {"topic": "le mariage de Marie à Lisbonne", "item": ["fact:999"]},
        **HTMX,
    )
    assert Message.objects.count() == 2


def test_a_confirmation_without_the_previews_items_takes_nothing(staff_client, memory):
    """QA: a confirmation posted without ``item`` (no preview behind it) took everything
    the topic matched, though a confirmation takes nothing its preview did not show."""
    response = staff_client.post(
        "/memory/forget/confirm/", {"topic": "le mariage de Marie à Lisbonne"}, **HTMX
    )

    assert response.status_code == 422
    assert "aperçu" in response.content.decode()
    assert Message.objects.count() == 2 and not Forgetting.objects.exists()


@pytest.mark.parametrize("headers", [HTMX, {}], ids=["htmx-preview", "full-page-preview"])
def test_the_preview_names_the_agents_items_by_their_kind_and_text_not_their_key(
    staff_client, memory, agent_items_about_the_wedding, headers
):
    from memory.services.facts import fact_store

    knows, goal = agent_items_about_the_wedding
    fact_store(key="mariage_marie", value="Marie se marie à Lisbonne le 14 juin")
    html = staff_client.post(
        "/memory/forget/preview/", {"topic": "mariage Marie Lisbonne"}, **headers
    ).content.decode()
    plan = html[html.index('class="plan"') : html.index("Confirmer l'oubli")]

    assert knows.key.startswith("self_") and knows.key not in plan
    assert goal.key not in plan
    assert '<span class="badge">Moi (l&#x27;agent)</span>' in plan
    assert '<span class="badge">Objectif de l&#x27;agent</span>' in plan
    assert "Je connais le mariage de Marie à Lisbonne" in plan
    assert "Comprendre le mariage de Marie à Lisbonne" in plan
    # The owner's own fact keeps its badge and its key.
    assert '<span class="badge">fait</span> <code>mariage_marie</code>' in plan
    assert plan.count('<span class="badge">fait</span>') == 1


def _wedding_preview(staff_client) -> str:
    """The /memory forget preview of the wedding, as htmx asks for it."""
    return staff_client.post(
        "/memory/forget/preview/", {"topic": "mariage Marie Lisbonne"}, **HTMX
    ).content.decode()


def _old_value_of_the_agents_item(agent_items_about_the_wedding):
    """The owner changed the agent's self item: its old value is a history line."""
    from memory.models import Actor
    from memory.services.facts import fact_update

    knows, _ = agent_items_about_the_wedding
    fact_update(fact=knows, actor=Actor.USER, value="Je connais Marie")
    return knows


def test_an_old_value_of_the_agents_item_is_named_by_its_kind_not_its_key(
    staff_client, memory, agent_items_about_the_wedding
):
    knows = _old_value_of_the_agents_item(agent_items_about_the_wedding)
    html = _wedding_preview(staff_client)
    plan = html[html.index('class="plan"') : html.index("Confirmer l'oubli")]

    line = next(li for li in plan.split("<li>") if "historique" in li)
    assert knows.key not in line
    assert '<span class="badge">Moi (l&#x27;agent)</span>' in line
    assert "mariage de Marie à Lisbonne" in line


def test_the_preview_counts_the_owners_facts_and_the_agents_items_apart(
    staff_client, memory, agent_items_about_the_wedding
):
    from memory.services.facts import fact_store

    fact_store(key="mariage_marie", value="Marie se marie à Lisbonne le 14 juin")
    html = _wedding_preview(staff_client)

    assert "1 fait(s), 2 élément(s) de l&#x27;agent et 0 résumé(s)" in html


def test_an_old_value_of_the_agents_item_is_counted_as_such(
    staff_client, memory, agent_items_about_the_wedding
):
    _old_value_of_the_agents_item(agent_items_about_the_wedding)
    html = _wedding_preview(staff_client)

    # Its lines (stored, then changed) both said the topic; the goal itself is taken.
    assert "2 ancienne(s) valeur(s) d&#x27;éléments de l&#x27;agent qui restent" in html
    assert "valeur(s) de faits" not in html


def test_a_forget_of_agents_items_is_not_worded_as_facts_only(
    staff_client, memory, agent_items_about_the_wedding
):
    response = forget_confirmed(staff_client, "mariage Marie Lisbonne", **HTMX)
    html = response.content.decode()
    message = html[html.index("Oublié :") : html.index("Annulable")]
    assert "2 fait(s) ou élément(s) de l&#x27;agent" in message
    recent = html[html.index("Oublis récents") :]
    assert "2 fait(s) ou élément(s) de l&#x27;agent" in recent


def test_the_template_tells_the_owners_facts_by_the_model_value_not_a_literal():
    """A literal "owner" would silently show every fact as an agent's item once renamed."""
    from django.template.loader import get_template

    source = get_template("dashboard/memory/_forget.html").template.source
    assert '"owner"' not in source and "'owner'" not in source


def test_the_confirmation_gives_the_undo_date_the_list_gives(staff_client, memory):
    """At 23:30 UTC (00:30 in Paris) the confirmation said « Annulable jusqu'au » the UTC
    date while the list said « définitif le » the next day, Paris's (black-box QA)."""
    import datetime as dt

    import time_machine

    moment = dt.datetime(2026, 11, 29, 23, 30, tzinfo=dt.UTC)
    with time_machine.travel(moment, tick=False):
        response = forget_confirmed(staff_client, "le mariage de Marie à Lisbonne", **HTMX)
    html = response.content.decode()
    assert "Annulable jusqu&#x27;au 07/12/2026." in html, html
    assert "définitif le 07/12/2026" in html


def test_the_confirmation_counts_the_history_lines_it_took(staff_client):
    """QA: « Oublié : 0 échange(s), 0 fait(s)…, 0 résumé(s). » when the topic was only in
    an old value of a fact, which the forget took (the recent forgets' list said it)."""
    fact_store(key="voyage", value="Voyage à Lisbonne en mai")
    fact_store(key="voyage", value="Voyage à Porto en mai")

    response = forget_confirmed(staff_client, "Lisbonne", **HTMX)

    text = html_lib.unescape(response.content.decode())
    assert Forgetting.objects.count() == 1
    message = text[text.index("Oublié :") : text.index("Annulable")]
    assert "2 ligne(s) d'historique" in message, message  # stored, then changed
    recent = text[text.index("Oublis récents") :]
    assert "2 ligne(s) d'historique" in recent
