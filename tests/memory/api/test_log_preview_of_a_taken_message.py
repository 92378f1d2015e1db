"""A message a topic forget took leaves the retrieval log, even when its logged preview (its
start) does not hold the topic's words."""

from __future__ import annotations

from html import unescape

import pytest
from django.urls import reverse

from memory.models import MemoryRetrieval, Message
from memory.services.forgetting import topic_forget
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db

DETAIL = "Mnarani"  # only in the forgotten message's first 200 characters
LONG = (
    f"Sophie a réservé l'hôtel {DETAIL} et les billets pour le 3 août, départ de Lyon "
    "à 6 h, escale à Doha, retour le 17, on a pris l'assurance annulation et les vaccins "
    "sont faits depuis lundi chez le médecin de garde : tout est prêt pour le voyage à Zanzibar."
)


@pytest.fixture
def world(vector_store, local_embedder, settings, tmp_path):
    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path / "vault"
    (tmp_path / "vault").mkdir()
    return vector_store


def test_a_forgotten_message_s_preview_leaves_the_retrieval_log(
    world, agent_api, owner_api, staff_client
):
    assert len(LONG) > 200 and LONG.index("Zanzibar") > 200 and LONG.index(DETAIL) < 200
    response = agent_api.post(
        "/api/memory/context",
        {"channel": "whatsapp", "message": LONG, "record": True},
        format="json",
    )
    assert response.status_code == 200, response.content
    [message_id] = response.json()["message_ids"]
    from memory.services.retrieval.log import retrieval_logs_wait

    retrieval_logs_wait()
    assert DETAIL in owner_api.get("/api/memory/retrievals").content.decode()

    result = topic_forget(topic="le voyage à Zanzibar", actor="user")
    assert result.forgetting_id is not None
    assert not Message.objects.filter(pk=message_id).exists(), "the forget took the message"

    seen = {
        "api retrievals (owner)": owner_api.get("/api/memory/retrievals").content.decode(),
        "/memory retrieval": staff_client.get("/memory/retrieval/", **HTMX).content.decode(),
        "admin list": staff_client.get(
            reverse("admin:memory_memoryretrieval_changelist")
        ).content.decode(),
    }
    leaks = [name for name, text in seen.items() if DETAIL in unescape(text)]
    assert leaks == [], leaks
    assert not MemoryRetrieval.objects.filter(message_preview__contains=DETAIL).exists()
