"""A request to forget sent in two quick messages (coalesced into one answer): the exchange
is excluded from memory, but the retrieval log keeps the request as its message preview."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection

from agent.loop import handle_message
from memory.models import MemorySettings, Message
from tests.agent.exchanges import past_exchange
from tests.fakes.anthropic import text_message, tool_use_message

WEDDING = "Le mariage de Marie à Lisbonne est le 14 juin, la cérémonie à Belém"
TOPIC = "le mariage de Marie à Lisbonne"
FIRST = "Au fait, une chose"
REQUEST = "Oublie le mariage de Marie à Lisbonne, la cérémonie à Belém"


@pytest.fixture
def agent_api(django_user_model):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    user = django_user_model.objects.create_user(username="agent", password=None)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.mark.django_db(transaction=True)
def test_a_coalesced_request_to_forget_leaves_no_preview_in_the_retrieval_log(
    vector_store, local_embedder, fake_anthropic, settings, agent_api, staff_client
):
    settings.AGENT_COALESCE_SECONDS = 0.6
    MemorySettings.objects.update_or_create(pk=1, defaults={"min_score": 0.3})
    wedding = past_exchange("whatsapp", WEDDING, "Note-le bien !")
    fake_anthropic.script(
        tool_use_message(("memory__forget", {"topic": TOPIC, "dry_run": True})),
        text_message(json.dumps({"ids": [f"message:{wedding.id}"]})),
        text_message("Voici ce que j'oublierais : confirmez-vous ?"),
    )
    results: dict[str, object] = {}

    def send(name: str, text: str, delay: float) -> None:
        threading.Event().wait(delay)
        try:
            results[name] = handle_message(channel="mission_control", text=text)
        except Exception as exc:
            results[name] = exc
        finally:
            connection.close()

    threads = [
        threading.Thread(target=send, args=("first", FIRST, 0)),
        threading.Thread(target=send, args=("second", REQUEST, 0.2)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    result = results["first"]
    assert not isinstance(result, Exception), result
    assert results["second"] is result and result.coalesced

    from memory.services.retrieval.log import retrieval_logs_wait

    retrieval_logs_wait()
    # The exchange asking to forget is excluded from memory.
    ids = [*result.message_ids, result.reply_id]
    assert len(result.message_ids) == 2
    assert Message.all_objects.filter(pk__in=ids, memory_excluded=True).count() == 3
    assert not Message.objects.filter(pk__in=ids).exists()

    seen = {
        "api retrievals": staff_client.get("/api/memory/retrievals").content.decode(),
        "/memory retrieval": staff_client.get(
            "/memory/retrieval/", HTTP_HX_REQUEST="true"
        ).content.decode(),
    }
    leaks = [name for name, text in seen.items() if "Oublie le mariage" in text]
    from memory.models import MemoryRetrieval

    previews = list(MemoryRetrieval.objects.values_list("message_preview", flat=True))
    assert leaks == [], (leaks, previews)
