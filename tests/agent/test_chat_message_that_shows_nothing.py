"""A chat message of characters nobody sees only is refused as a blank one is (QA: the chat
API and /chat/ took « \u202e\u200b\ufeff », which auto-retrieval then injected)."""

from __future__ import annotations

import pytest

from memory.models import Message

pytestmark = pytest.mark.django_db

INVISIBLE = "\u202e\u200b\ufeff"


def test_the_chat_api_refuses_it_in_french(staff_client):
    response = staff_client.post(
        "/api/v1/agent/chat",
        {"channel": "mission_control", "message": INVISIBLE},
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    assert response.json()["extra"]["fields"]["message"] == ["Ce champ ne peut être vide."]
    assert not Message.objects.exists()


def test_the_chat_page_refuses_it_in_french(staff_client):
    response = staff_client.post("/chat/send/", {"message": INVISIBLE}, HTTP_HX_REQUEST="true")
    assert response.status_code == 422
    assert "ne peut être vide" in response.content.decode() or "vide" in response.content.decode()
    assert not Message.objects.exists()
