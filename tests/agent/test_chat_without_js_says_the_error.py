"""QA: without htmx, /chat/send/ drops the LLM's error: the owner sees no reply and no why.

The chat form is a plain form too (``method="post" action="/chat/send/"``, so it works
without JavaScript). When the LLM is down, agent.views.chat_send builds the turn with
its French error (« Le LLM (Anthropic) est indisponible : … ») and then, for a request
that is not htmx, redirects to /chat/ without it: the page that follows shows the
owner's message alone, no reply, no alert. Reproduced on a running serve with the fake
Anthropic answering 500: ``curl -L -d message=… /chat/send/`` (session + CSRF) → the
page lists the message, no « indisponible » anywhere. The htmx path shows the alert.
Expected: the French error on the page the owner lands on (a message, or the page
rendered with the failed turn).
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from memory.models import Message
from tests.fakes.anthropic import fake_anthropic, server_error  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, settings):  # noqa: F811
    settings.AGENT_COALESCE_SECONDS = 0
    settings.ANTHROPIC_MAX_RETRIES = 0
    return fake_anthropic


def test_a_plain_post_shows_why_there_is_no_answer(world, staff_client):
    world.script(server_error())

    response = staff_client.post(
        reverse("agent:chat-send"), {"message": "Bonjour sans JavaScript"}, follow=True
    )

    assert Message.objects.filter(content="Bonjour sans JavaScript").exists()  # kept
    html = response.content.decode()
    assert "Bonjour sans JavaScript" in html
    assert "indisponible" in html, "no word of the LLM outage on the page"
