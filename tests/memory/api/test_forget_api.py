"""POST /api/memory/forget (dry run first), GET /forgettings, POST /forgettings/<id>/restore."""

import pytest

from memory.api.forgetting import FORGET_ID_MESSAGE
from memory.models import Fact, Forgetting, Message
from memory.services.forgetting_plan import FORGOTTEN_VALUE
from tests.memory.world import marie_messages_save

pytestmark = pytest.mark.django_db


@pytest.fixture
def memory():
    marie_messages_save()


def test_a_dry_run_answers_the_plan_and_changes_nothing(agent_api, memory):
    response = agent_api.post(
        "/api/memory/forget", {"topic": "mariage Marie Lisbonne", "dry_run": True}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["counts"]["exchanges"] == 1 and body["selection"] == "words"
    assert "14 juin" in body["exchanges"][0]["excerpt"]
    assert Message.objects.count() == 2 and not Forgetting.objects.exists()


def test_the_agents_dry_run_shows_no_history_line_of_a_fact_the_owner_forgot(
    agent_api, forgotten_with_old_value
):
    """Audit 9: the preview's history listed the forgotten fact's old value, word for word."""
    response = agent_api.post(
        "/api/memory/forget", {"topic": "Lisbonne", "dry_run": True}, format="json"
    )
    assert response.status_code == 200, response.content
    text = response.content.decode()
    assert "Pereira" not in text and "medecin_traitant" not in text, text
    assert response.json()["ids"] == []


def test_the_agents_dry_run_does_not_tell_a_forgotten_fact_was_there(
    agent_api, forgotten_about_topic
):
    """Audit 9: the preview listed the forgotten fact by its key (words of its own), telling
    the agent's token a forgotten fact was there: its preview is the one of a memory that
    never held it."""
    response = agent_api.post(
        "/api/memory/forget", {"topic": "Lisbonne", "dry_run": True}, format="json"
    )
    assert response.status_code == 200, response.content
    assert "dette_lisbonne" not in response.content.decode(), response.content.decode()
    assert response.json()["ids"] == [] and not any(response.json()["counts"].values())


def test_the_agents_forget_answers_as_if_a_forgotten_fact_had_never_been_stored(
    agent_api, forgotten_about_topic
):
    """Without a preview's ids, the agent's forget takes its own scope: the fact the owner
    forgot stays as it is (restorable by the owner) and the counts say nothing of it."""
    response = agent_api.post("/api/memory/forget", {"topic": "Lisbonne"}, format="json")

    assert response.status_code in (200, 201), response.content
    assert not any(response.json()["counts"].values()), response.json()
    fact = Fact.all_objects.get(pk=forgotten_about_topic.pk)
    assert fact.forgotten and fact.forgetting_id is None


def test_the_owners_dry_run_lists_a_forgotten_fact_and_its_old_values_by_key_only(
    owner_api, forgotten_with_old_value, forgotten_about_topic
):
    """The owner's scope sees what a forget would take, a fact already forgotten included,
    but none of its words: neither its value nor its old values."""
    response = owner_api.post(
        "/api/memory/forget", {"topic": "Lisbonne", "dry_run": True}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["facts"] == [
        {
            "id": forgotten_about_topic.id,
            "key": "dette_lisbonne",
            "kind": "owner",
            "value": FORGOTTEN_VALUE,
        }
    ]
    # Its creation and its edit both held the topic's words.
    assert {(h["key"], h["excerpt"]) for h in body["history"]} == {
        ("medecin_traitant", FORGOTTEN_VALUE)
    }
    assert "Pereira" not in response.content.decode() and "Paulo" not in response.content.decode()
    assert len(body["ids"]) == 1 + len(body["history"])


def test_a_forget_answers_201_and_can_be_listed_and_undone(agent_api, owner_api, memory):
    response = agent_api.post(
        "/api/memory/forget", {"topic": "mariage Marie Lisbonne"}, format="json"
    )
    assert response.status_code == 201, response.content
    forgetting = response.json()
    assert forgetting["state"] == "active" and forgetting["counts"]["exchanges"] == 1
    assert Message.objects.count() == 1
    listed = owner_api.get("/api/memory/forgettings").json()
    assert [f["id"] for f in listed["results"]] == [forgetting["id"]]
    response = owner_api.post(f"/api/memory/forgettings/{forgetting['id']}/restore")
    assert response.status_code == 200 and response.json()["state"] == "restored"
    assert Message.objects.count() == 2
    again = owner_api.post(f"/api/memory/forgettings/{forgetting['id']}/restore")
    assert again.status_code == 400 and "déjà été annulé" in again.json()["message"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "topic"),
        ({"topic": ""}, "topic"),
        ({"topic": "x" * 201}, "topic"),
        ({"topic": "a", "dry_run": "peut-être"}, "dry_run"),
        ({"topic": "a", "inconnu": 1}, "inconnu"),
    ],
)
def test_bad_input_gets_a_french_400(agent_api, body, field):
    response = agent_api.post("/api/memory/forget", body, format="json")
    assert response.status_code == 400 and field in response.content.decode()


@pytest.mark.parametrize("bad_id", ["abc", "fact:-1", "fact:", "Fact:1"])
def test_a_malformed_id_is_explained(agent_api, bad_id):
    """QA: DRF's « Cette valeur ne satisfait pas le motif imposé. » did not say what an id
    looks like."""
    response = agent_api.post(
        "/api/memory/forget", {"topic": "Lyon", "ids": [bad_id]}, format="json"
    )

    assert response.status_code == 400
    assert response.json()["extra"]["fields"] == {"ids": {"0": [FORGET_ID_MESSAGE]}}
    assert "motif" not in response.content.decode()


def test_a_vague_topic_and_an_unknown_forget_are_refused_in_french(agent_api, owner_api):
    response = agent_api.post("/api/memory/forget", {"topic": "tout ça"}, format="json")
    assert response.status_code == 400 and "trop vague" in response.json()["message"]
    response = owner_api.post("/api/memory/forgettings/999/restore")
    assert response.status_code == 404 and "Aucun oubli" in response.json()["message"]


def test_a_purged_forget_cannot_be_undone_and_says_so_in_french(agent_api, owner_api, memory):
    from datetime import timedelta

    from django.utils import timezone

    from memory.services.forgetting import forgettings_purge

    created = agent_api.post("/api/memory/forget", {"topic": "chien Marie"}, format="json")
    assert created.status_code == 201, created.content
    assert forgettings_purge(now=timezone.now() + timedelta(days=8)) == 1

    response = owner_api.post(f"/api/memory/forgettings/{created.json()['id']}/restore")
    assert response.status_code == 400
    assert "effacé définitivement" in response.json()["message"]
    [listed] = owner_api.get("/api/memory/forgettings").json()["results"]
    assert listed["state"] == "purged" and "chien" not in listed["topic"]
    assert not Message.all_objects.filter(content__contains="Filou").exists()


def test_the_forgets_are_listed_newest_first_and_paged(agent_api, owner_api, memory):
    ids = [
        agent_api.post("/api/memory/forget", {"topic": topic}, format="json").json()["id"]
        for topic in ("chien Marie", "mariage Lisbonne")
    ]
    first = owner_api.get("/api/memory/forgettings", {"page_size": 1}).json()
    assert first["count"] == 2 and [f["id"] for f in first["results"]] == [ids[1]]
    second = owner_api.get(first["next"]).json()
    assert [f["id"] for f in second["results"]] == [ids[0]] and second["next"] is None


def test_a_forget_that_finds_nothing_answers_the_empty_plan_and_records_nothing(agent_api, memory):
    response = agent_api.post("/api/memory/forget", {"topic": "vacances Bretagne"}, format="json")
    assert response.status_code == 200 and response.json()["counts"]["exchanges"] == 0
    assert not Forgetting.objects.exists() and Message.objects.count() == 2


def test_the_forget_routes_are_in_the_schema(agent_api):
    schema = agent_api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    forget = schema["paths"]["/api/v1/memory/forget"]["post"]
    assert {"200", "201", "400"} <= set(forget["responses"])
    assert "dry_run" in schema["components"]["schemas"]["ForgetInput"]["properties"]
    assert "get" in schema["paths"]["/api/v1/memory/forgettings"]
    restore = schema["paths"]["/api/v1/memory/forgettings/{forgetting_id}/restore"]["post"]
    assert "404" in restore["responses"]


def test_ids_outside_the_preview_are_named_in_the_answer_not_dropped_silently(agent_api, memory):
    """Ids the topic's preview does not hold were dropped without a word: a confirm with
    one preview id and one stray id answered 201 as if both were taken, and a confirm of
    stray ids only answered the empty plan (black-box QA)."""
    preview = agent_api.post(
        "/api/memory/forget", {"topic": "mariage Marie Lisbonne", "dry_run": True}, format="json"
    ).json()
    stray = f"message:{Message.objects.order_by('-id').first().id + 1000}"

    nothing = agent_api.post(
        "/api/memory/forget", {"topic": "mariage Marie Lisbonne", "ids": [stray]}, format="json"
    )
    assert nothing.status_code == 200, nothing.content
    assert nothing.json()["ids_not_taken"] == [stray]
    assert stray in nothing.json()["message"] and "aperçu" in nothing.json()["message"]
    assert not Forgetting.objects.exists()

    taken = agent_api.post(
        "/api/memory/forget",
        {"topic": "mariage Marie Lisbonne", "ids": [*preview["ids"], stray]},
        format="json",
    )
    assert taken.status_code == 201, taken.content
    assert taken.json()["ids_not_taken"] == [stray]
    assert stray in taken.json()["message"]
    assert taken.json()["counts"]["exchanges"] == 1


def test_a_confirm_of_the_previews_own_ids_says_nothing_more(agent_api, memory):
    preview = agent_api.post(
        "/api/memory/forget", {"topic": "mariage Marie Lisbonne", "dry_run": True}, format="json"
    ).json()

    taken = agent_api.post(
        "/api/memory/forget",
        {"topic": "mariage Marie Lisbonne", "ids": preview["ids"]},
        format="json",
    )

    assert taken.status_code == 201
    assert "ids_not_taken" not in taken.json() and "message" not in taken.json()


def test_a_forget_past_its_undo_window_cannot_be_undone_before_the_purge_runs(
    agent_api, owner_api, staff_client, memory
):
    """The undo window is the promise: a forget whose window has passed (a retention of 0
    days, or the hourly purge not run yet) was still undone; it is final, and says so."""
    from datetime import timedelta

    from django.utils import timezone

    from memory.models import Forgetting

    created = agent_api.post("/api/memory/forget", {"topic": "chien Marie"}, format="json")
    assert created.status_code == 201, created.content
    Forgetting.objects.filter(pk=created.json()["id"]).update(
        purge_after=timezone.now() - timedelta(seconds=1)
    )

    response = owner_api.post(f"/api/memory/forgettings/{created.json()['id']}/restore")
    assert response.status_code == 400, response.content
    assert "délai d'annulation" in response.json()["message"]
    assert not Message.objects.filter(content__contains="Filou").exists()
    page = staff_client.get("/memory/").content.decode()
    assert "Annuler l&#x27;oubli" not in page and "Annuler l'oubli" not in page


def test_the_dry_runs_dates_are_in_the_services_time_zone_as_every_other_date(agent_api, memory):
    """The dry run's dates were in UTC (+00:00) where every other answer's are in Paris's
    time (+01:00 / +02:00): the same moment read an hour apart (black-box QA)."""
    from django.utils import timezone

    preview = agent_api.post(
        "/api/memory/forget", {"topic": "mariage Marie Lisbonne", "dry_run": True}, format="json"
    ).json()
    [exchange] = preview["exchanges"]
    created_at = Message.objects.get(pk=exchange["id"]).created_at
    assert exchange["date"] == timezone.localtime(created_at).isoformat()
    assert not exchange["date"].endswith("+00:00")  # Paris is never at UTC's offset
