"""POST /api/memory/messages: an outside agent records messages as our own agent would."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from agent.loop import handle_message
from memory.api.messages import BODY_NOT_AN_OBJECT
from memory.models import Fact, IndexState, Job, Message, MessageRecording, MessageRole
from memory.services.jobs import job_run
from memory.services.messages import EMPTY_MESSAGE
from memory.services.messages_record import (
    FUTURE_TIMESTAMP,
    KEY_REUSED,
    MessageDraft,
    MessageItemInvalid,
    messages_record,
)
from memory.stores.fts import fts_search
from tests.fakes.anthropic import text_message

pytestmark = pytest.mark.django_db

URL = "/api/memory/messages"


@pytest.fixture
def world(vector_store, local_embedder, settings):
    settings.AGENT_COALESCE_SECONDS = 0
    return vector_store


def _post(api, body):
    return api.post(URL, body, format="json")


def _exchange(channel: str = "gateway") -> list[dict]:
    return [
        {"channel": channel, "role": "user", "author": "mickael", "content": "Je pars à Lisbonne"},
        {"channel": channel, "source": "tool", "content": "météo Lisbonne : 24 °C, soleil"},
        {"channel": channel, "role": "user", "content": "en mai, pour le marathon"},
        {"channel": channel, "role": "assistant", "content": "Bon marathon à Lisbonne !"},
    ]


def test_one_message_is_stored_indexed_and_searchable(
    world, agent_api, eager_tasks, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(
            agent_api,
            {"channel": "gateway", "content": "Le code du portail est 4821", "author": "mickael"},
        )

    assert response.status_code == 201, response.content
    body = response.json()
    [saved] = Message.objects.all()
    assert body == {"message_ids": [saved.id], "count": 1, "replayed": False}
    assert (saved.channel, saved.role, saved.source, saved.author) == (
        "gateway",
        "user",
        "user",
        "mickael",
    )
    saved.refresh_from_db()
    assert saved.index_state == IndexState.INDEXED
    assert [hit.message_id for hit in fts_search("portail 4821")] == [saved.id]


def test_a_batch_is_stored_in_order_and_the_reply_closes_the_exchange(world, agent_api):
    response = _post(agent_api, {"messages": _exchange()})

    assert response.status_code == 201, response.content
    ids = response.json()["message_ids"]
    rows = {m.id: m for m in Message.objects.all()}
    assert [rows[i].role for i in ids] == ["user", "tool", "user", "assistant"]
    reply = rows[ids[3]]
    # Keyed on the last user message, like a coalesced batch of the agent loop.
    assert reply.reply_to_id == ids[2]
    job = Job.objects.get(kind="extract")
    assert job.key == f"extract:{reply.id}"
    assert job.payload["message_ids"] == [ids[0], ids[2]]
    assert job.payload["reply_id"] == reply.id
    assert job.payload["tool_results"] == ["météo Lisbonne : 24 °C, soleil"]


def test_user_messages_alone_wait_for_their_reply_before_extraction(world, agent_api):
    first = _post(agent_api, {"channel": "gateway", "content": "J'ai un nouveau vélo"})
    assert first.status_code == 201
    assert not Job.objects.exists()

    reply = _post(agent_api, {"channel": "gateway", "role": "assistant", "content": "Super !"})

    job = Job.objects.get(kind="extract")
    assert job.payload["message_ids"] == first.json()["message_ids"]
    assert job.payload["reply_id"] == reply.json()["message_ids"][0]
    # A second reply answers nothing new: nothing more to extract.
    _post(agent_api, {"channel": "gateway", "role": "assistant", "content": "Autre chose ?"})
    assert Job.objects.filter(kind="extract").count() == 1


def test_the_extraction_job_is_the_one_our_agent_records(world, agent_api, fake_anthropic):
    """Same payload shape as the loop's job for the same exchange: one implementation."""
    fake_anthropic.script(text_message("Bon marathon à Lisbonne !"))
    ours = handle_message(channel="whatsapp", text="Je pars à Lisbonne")
    theirs = _post(
        agent_api,
        {
            "messages": [
                {"channel": "gateway", "content": "Je pars à Lisbonne"},
                {"channel": "gateway", "role": "assistant", "content": "Bon marathon à Lisbonne !"},
            ]
        },
    ).json()["message_ids"]

    loop_job = Job.objects.get(key=f"extract:{ours.reply_id}")
    api_job = Job.objects.get(key=f"extract:{theirs[1]}")
    assert loop_job.payload == {
        **api_job.payload,
        "message_ids": ours.message_ids,
        "reply_id": ours.reply_id,
        "channel": "whatsapp",
    }
    reply = Message.objects.get(pk=theirs[1])
    assert reply.source == Message.objects.get(pk=ours.reply_id).source


def test_tool_results_are_fed_to_extraction(world, agent_api, fake_anthropic):
    ids = _post(agent_api, {"messages": _exchange()}).json()["message_ids"]
    facts = {"facts": [{"key": "marathon_lisbonne", "value": "Marathon de Lisbonne en mai"}]}
    fake_anthropic.script(text_message(json.dumps(facts, ensure_ascii=False)))

    assert job_run(Job.objects.get(kind="extract").pk) == "done"

    prompt = fake_anthropic.last.messages[-1]["content"]
    prompt = prompt if isinstance(prompt, str) else json.dumps(prompt, ensure_ascii=False)
    assert "météo Lisbonne : 24 °C, soleil" in prompt
    assert "en mai, pour le marathon" in prompt
    fact = Fact.objects.get(key="marathon_lisbonne")
    assert fact.source_message_id == ids[2] and fact.channel == "gateway"


def test_a_long_channel_gets_its_compaction_job(world, agent_api, settings):
    settings.AGENT_COMPACTION_THRESHOLD = 3

    _post(agent_api, {"messages": _exchange()})

    assert Job.objects.filter(kind="compact", payload__channel="gateway").count() == 1


def test_an_import_keeps_the_original_dates(world, agent_api):
    when = timezone.now() - timedelta(days=400)
    response = _post(
        agent_api, {"channel": "gateway", "content": "Vieux message", "timestamp": when.isoformat()}
    )
    [saved] = Message.objects.filter(pk__in=response.json()["message_ids"])
    assert saved.created_at == when


def test_a_reply_dated_before_its_question_is_refused(world, agent_api):
    """QA: the API took a reply written an hour before the question it answers, which no
    history holds (the history and the extraction read them in that order)."""
    asked = timezone.now() - timedelta(days=1)
    batch = [
        {
            "channel": "gateway",
            "role": "user",
            "content": "Quelle heure ?",
            "timestamp": asked.isoformat(),
        },
        {
            "channel": "gateway",
            "role": "assistant",
            "content": "Midi.",
            "timestamp": (asked - timedelta(hours=1)).isoformat(),
        },
    ]

    response = _post(agent_api, {"messages": batch})

    assert response.status_code == 400, response.content
    assert "datée avant la question" in str(response.json()), response.json()
    assert not Message.objects.exists()
    batch[1]["timestamp"] = (asked + timedelta(minutes=1)).isoformat()
    assert _post(agent_api, {"messages": batch}).status_code == 201


def test_a_bad_item_refuses_the_whole_batch_naming_its_index(world, agent_api):
    batch = _exchange()
    batch[2] = {**batch[2], "content": "   "}

    response = _post(agent_api, {"messages": batch})

    assert response.status_code == 400
    [error] = response.json()["extra"]["fields"]["messages"]["2"]
    assert "index 2" in error and EMPTY_MESSAGE in error and "rien n'a été enregistré" in error
    assert not Message.objects.exists() and not Job.objects.exists()


def test_a_failure_inside_the_batch_rolls_back_what_was_already_saved(world):
    drafts = [
        MessageDraft(channel="gateway", content="Premier"),
        MessageDraft(channel="gateway", role="assistant", content="Réponse"),
        MessageDraft(channel="pas un canal !", content="Troisième"),
    ]

    with pytest.raises(MessageItemInvalid) as refused:
        messages_record(drafts=drafts)

    assert refused.value.index == 2 and "index 2" in str(refused.value)
    assert not Message.objects.exists() and not Job.objects.exists()


def test_a_retry_with_the_same_key_returns_the_same_ids_and_stores_nothing(world, agent_api):
    body = {"messages": _exchange(), "idempotency_key": "gw-2026-11-23-0001"}
    first = _post(agent_api, body)
    counts = Message.objects.count(), Job.objects.count()

    again = _post(agent_api, body)

    assert first.status_code == 201 and again.status_code == 200
    assert again.json()["message_ids"] == first.json()["message_ids"]
    assert again.json()["replayed"] is True
    assert (Message.objects.count(), Job.objects.count()) == counts
    assert MessageRecording.objects.get().message_ids == first.json()["message_ids"]


def test_a_single_message_takes_its_key_too(world, agent_api):
    body = {"channel": "gateway", "content": "Bonjour", "idempotency_key": "k1"}
    ids = _post(agent_api, body).json()["message_ids"]
    assert _post(agent_api, body).json()["message_ids"] == ids
    assert Message.objects.count() == 1


def test_a_key_reused_for_other_messages_is_a_409(world, agent_api):
    _post(agent_api, {"channel": "gateway", "content": "Bonjour", "idempotency_key": "k1"})

    response = _post(agent_api, {"channel": "gateway", "content": "Autre", "idempotency_key": "k1"})

    assert response.status_code == 409
    assert response.json()["message"] == KEY_REUSED
    assert Message.objects.count() == 1


def test_a_refused_batch_does_not_burn_its_key(world, agent_api):
    batch = _exchange()
    bad = {"messages": [*batch[:3], {"channel": "gateway", "content": ""}], "idempotency_key": "k"}
    assert _post(agent_api, bad).status_code == 400

    good = _post(agent_api, {"messages": batch, "idempotency_key": "k"})

    assert good.status_code == 201 and len(good.json()["message_ids"]) == 4


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"content": "Bonjour"}, "channel"),
        ({"channel": "gateway"}, "content"),
        ({"channel": "gateway", "content": "  "}, "content"),
        ({"channel": "a b/c", "content": "x"}, "channel"),
        ({"channel": "gateway", "content": "x", "role": "robot"}, "role"),
        ({"channel": "gateway", "content": "x", "source": "assistant"}, "source"),
        ({"channel": "gateway", "content": "x", "role": "user", "source": "tool"}, "source"),
        ({"channel": "gateway", "content": "x", "timestamp": "hier"}, "timestamp"),
        ({"channel": "gateway", "content": "x", "colour": "bleu"}, "colour"),
        ({"channel": "gateway", "content": "x", "idempotency_key": "k" * 101}, "idempotency_key"),
        ({"messages": []}, "messages"),
        ({"messages": "bonjour"}, "messages"),
        ({"messages": ["bonjour"]}, "messages"),
        (
            {"messages": [{"channel": "gateway", "content": "x", "idempotency_key": "k"}]},
            "messages",
        ),
    ],
)
def test_bad_input_is_a_french_400_naming_the_field(world, agent_api, payload, field):
    response = _post(agent_api, payload)

    assert response.status_code == 400, response.content
    body = response.json()
    assert body["message"] == "Données invalides."
    assert field in body["extra"]["fields"]
    assert not Message.objects.exists()


def test_a_date_in_the_future_is_refused(world, agent_api):
    later = (timezone.now() + timedelta(days=2)).isoformat()
    response = _post(agent_api, {"channel": "gateway", "content": "x", "timestamp": later})
    assert response.status_code == 400
    assert response.json()["extra"]["fields"]["timestamp"] == [FUTURE_TIMESTAMP]


def test_a_staff_session_may_record_but_a_stranger_may_not(world, staff_api, anonymous_api):
    body = {"channel": "mission_control", "content": "Bonjour"}
    assert _post(anonymous_api, body).status_code == 401
    assert not Message.objects.exists()
    assert _post(staff_api, body).status_code == 201
    assert Message.objects.get().role == MessageRole.USER


@pytest.mark.parametrize("body", [None, [], [{"channel": "gateway", "content": "x"}], "x", 3])
def test_a_body_that_is_not_an_object_is_a_french_400(world, agent_api, body):
    response = agent_api.post(URL, json.dumps(body), content_type="application/json")

    assert response.status_code == 400
    assert response.json()["extra"]["fields"]["non_field_errors"] == [BODY_NOT_AN_OBJECT]
    assert not Message.objects.exists()


def test_a_concurrent_retry_that_missed_the_first_commit_stores_nothing(world, monkeypatch):
    """Two requests with one key both pass the first check: the key row decides, whole."""
    from memory.services import messages_record as messages

    drafts = [
        MessageDraft(channel="gateway", content="Bonjour"),
        MessageDraft(channel="gateway", role="assistant", content="Salut !"),
    ]
    first = messages_record(drafts=drafts, idempotency_key="k")
    replay = messages._replay
    checks = []

    def late(key, fingerprint):
        checks.append(key)
        # The first check ran before the other request committed: it saw nothing.
        return None if len(checks) == 1 else replay(key, fingerprint)

    monkeypatch.setattr(messages, "_replay", late)

    again = messages_record(drafts=drafts, idempotency_key="k")

    assert len(checks) == 2  # the insert of the key failed, then the recording was read
    assert again.message_ids == first.message_ids and again.replayed
    assert Message.objects.count() == 2 and Job.objects.filter(kind="extract").count() == 1


def test_the_schema_documents_one_message_or_a_batch_and_the_409(agent_api):
    schema = agent_api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    post = schema["paths"]["/api/v1" + URL.removeprefix("/api")]["post"]
    body = post["requestBody"]["content"]["application/json"]["schema"]["$ref"].split("/")[-1]
    variants = [v["$ref"].split("/")[-1] for v in schema["components"]["schemas"][body]["oneOf"]]
    assert variants == ["SingleMessageInput", "MessageBatchInput"]
    items = schema["components"]["schemas"]["MessageBatchInput"]["properties"]["messages"]
    assert items["items"]["$ref"].endswith("/MessageInput") and items["maxItems"] == 500
    assert {"201", "200", "400", "409"} <= set(post["responses"])


def test_a_forget_exchange_recorded_as_excluded_never_feeds_memory(
    world, agent_api, eager_tasks, django_capture_on_commit_callbacks
):
    """As after our agent's memory__forget: the request and its reply name the topic."""
    with django_capture_on_commit_callbacks(execute=True):
        kept = _post(agent_api, {"channel": "gateway", "content": "Mon vélo est au garage"})
        response = _post(
            agent_api,
            {
                "messages": [
                    {"channel": "gateway", "content": "Oublie tout sur mon épaule cassée"},
                    {
                        "channel": "gateway",
                        "role": "assistant",
                        "content": "C'est oublié : ton épaule cassée.",
                        "memory_excluded": True,
                    },
                ]
            },
        )

    assert response.status_code == 201, response.content
    request_id, reply_id = response.json()["message_ids"]
    # The whole exchange is out, the earlier message too since the reply answers it.
    excluded = set(Message.all_objects.filter(memory_excluded=True).values_list("id", flat=True))
    assert excluded == {kept.json()["message_ids"][0], request_id, reply_id}
    assert not Job.objects.filter(kind="extract").exists()
    assert fts_search("épaule cassée") == []
    context = agent_api.post(
        "/api/memory/context", {"message": "Mon épaule cassée ?", "channel": "cli"}, format="json"
    ).json()
    assert "épaule" not in context["prompt_block"]


def test_an_excluded_user_message_stays_out_of_the_next_exchange(world, agent_api):
    ids = _post(
        agent_api,
        {
            "messages": [
                {"channel": "gateway", "content": "Oublie mon adresse", "memory_excluded": True},
                {"channel": "gateway", "content": "Et note que je joue du piano"},
                {"channel": "gateway", "role": "assistant", "content": "Noté pour le piano."},
            ]
        },
    ).json()["message_ids"]

    job = Job.objects.get(kind="extract")
    assert job.payload["message_ids"] == [ids[1]]
    assert Message.objects.get(pk=ids[2]).reply_to_id == ids[1]
    assert list(Message.all_objects.filter(memory_excluded=True).values_list("id", flat=True)) == [
        ids[0]
    ]


def test_each_account_has_its_own_keys(world, agent_api, staff_api):
    """Two agents counting their sends from 1 never replay or refuse each other's."""
    first = _post(agent_api, {"channel": "gateway", "content": "Bonjour", "idempotency_key": "1"})
    other = _post(staff_api, {"channel": "dashboard", "content": "Salut", "idempotency_key": "1"})

    assert first.status_code == other.status_code == 201
    assert first.json()["message_ids"] != other.json()["message_ids"]
    assert Message.objects.count() == 2


def test_the_daily_purge_drops_keys_past_their_retention(world):
    from memory.services.messages_record import IDEMPOTENCY_KEY_RETENTION
    from memory.services.retention import logs_purge

    messages_record(drafts=[MessageDraft(channel="gateway", content="Ancien")], idempotency_key="a")
    messages_record(drafts=[MessageDraft(channel="gateway", content="Récent")], idempotency_key="b")
    old = timezone.now() - IDEMPOTENCY_KEY_RETENTION - timedelta(hours=1)
    MessageRecording.objects.filter(key="a").update(created_at=old)

    assert logs_purge()["message_recordings"] == 1

    assert list(MessageRecording.objects.values_list("key", flat=True)) == ["b"]
    assert Message.objects.count() == 2  # the messages themselves stay


def test_an_empty_batch_is_said_in_good_french(world, agent_api):
    """QA: « Assurez-vous que ce champ a au moins 1 éléments. » (DRF's own words)."""
    response = _post(agent_api, {"messages": []})

    assert response.status_code == 400
    assert response.json()["extra"]["fields"]["messages"] == ["Au moins un message est attendu."]


@pytest.mark.parametrize("item", [[], "bonjour", 3, None])
def test_an_item_that_is_no_object_is_said_without_an_internal_field_name(world, agent_api, item):
    """QA: « Le message d'index 0 est invalide (non_field_errors : Chaque message doit être
    un objet JSON.) » named DRF's internal key to the agent's developer."""
    response = _post(agent_api, {"messages": [item]})

    assert response.status_code == 400
    [error] = response.json()["extra"]["fields"]["messages"]["0"]
    assert error == (
        "Le message d'index 0 est invalide (Chaque message doit être un objet JSON.) : "
        "rien n'a été enregistré."
    )
    assert not Message.objects.exists()


def test_errors_of_the_whole_item_are_written_without_a_field_name():
    from memory.services.messages_record import item_errors_text

    said = item_errors_text(
        {"__all__": ["Tout le message."], "non_field_errors": ["Lui aussi."], "content": ["Vide."]}
    )
    assert said == "Tout le message.; Lui aussi.; content : Vide."


def test_a_room_no_longer_observed_keeps_what_it_said_out_of_the_owners_exchange(world, agent_api):
    """QA 8b: what the room said while observed is other people's words, the digest's."""
    from memory.services.channels import channel_settings_set

    channel_settings_set(channel="lobby", observed=True)
    room = _post(
        agent_api,
        {
            "messages": [
                {"channel": "lobby", "author": "david", "content": "Je pars en Grèce demain"},
                {"channel": "lobby", "author": "eve", "content": "Sophie a eu une promotion"},
            ]
        },
    ).json()["message_ids"]
    channel_settings_set(channel="lobby", observed=False)  # the owner uses the channel now

    ids = _post(
        agent_api,
        {
            "messages": [
                {"channel": "lobby", "author": "moi", "content": "Rappelle-moi le pain"},
                {"channel": "lobby", "role": "assistant", "content": "C'est noté."},
            ]
        },
    ).json()["message_ids"]

    [job] = Job.objects.filter(kind="extract")
    assert job.payload["message_ids"] == [ids[0]]
    assert Message.objects.get(pk=ids[1]).reply_to_id == ids[0]
    # Still the digest's: observed, undigested, in `live`.
    live = Message.objects.filter(observed=True, digested_at__isnull=True).order_by("id")
    assert list(live.values_list("id", flat=True)) == room


def _room_said_then_left(agent_api, content: str) -> int:
    """A room message saved while ``lobby`` was observed; the room is no longer observed."""
    from memory.services.channels import channel_settings_set

    channel_settings_set(channel="lobby", observed=True)
    [room] = _post(agent_api, {"channel": "lobby", "author": "david", "content": content}).json()[
        "message_ids"
    ]
    channel_settings_set(channel="lobby", observed=False)
    return room


def test_a_reply_never_answers_a_forgotten_room_message(world, agent_api):
    """The rooms' review: other people's words, forgotten, were taken as the question a
    reply answers: the agent's next message went with their forget (reachable by no path,
    its own words lost from the history)."""
    from memory.models import Actor
    from memory.services.forgetting import topic_forget

    room = _room_said_then_left(agent_api, "Je pars en Grèce demain")
    topic_forget(topic="Grèce", actor=Actor.USER, only=[f"message:{room}"])

    [reply_id] = _post(
        agent_api, {"channel": "lobby", "role": "assistant", "content": "Bonjour à tous."}
    ).json()["message_ids"]

    reply = Message.all_objects.get(pk=reply_id)
    assert reply.reply_to_id is None
    assert reply.forgetting_id is None and not reply.memory_excluded


def test_a_reply_is_not_refused_for_an_erased_room_message(world, agent_api):
    """An erased room message is not an erased question of the owner: the agent's next
    message is kept."""
    from memory.models import Actor, Forgetting
    from memory.services.erasing import forgetting_erase
    from memory.services.forgetting import topic_forget

    room = _room_said_then_left(agent_api, "Je pars en Grèce demain")
    topic_forget(topic="Grèce", actor=Actor.USER, only=[f"message:{room}"])
    forgetting_erase(forgetting_id=Forgetting.objects.get().id, actor=Actor.USER)

    response = _post(
        agent_api, {"channel": "lobby", "role": "assistant", "content": "Bonjour à tous."}
    )

    assert response.status_code == 201, response.content
    [reply_id] = response.json()["message_ids"]
    assert Message.objects.get(pk=reply_id).reply_to_id is None
