"""QA: the /chat/ panel labels each injected memory with its internal code.

Under a reply, « N souvenirs injectés » lists each memory with a badge holding the
retrieval's raw kind — « fact », « exchange », « summary » (templates/agent/_turn.html
prints ``memory.kind``) — where the /memory search shows the same hits as « Fait »,
« Échange », « Résumé » (dashboard.views.HIT_KIND_LABELS). Seen on a running serve:
the turn of /chat/send/ and the history on /chat/ both show ``<span
class="badge">exchange</span>``.
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from memory.models import MemorySettings
from memory.services.facts import fact_store
from memory.services.indexing import KIND_FACT, index_rows
from tests.fakes.anthropic import fake_anthropic, text_message  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, settings):  # noqa: F811
    settings.AGENT_COALESCE_SECONDS = 0
    fact, _ = fact_store(key="velo_couleur", value="Son vélo de course est rouge")
    index_rows(KIND_FACT, [fact.id])
    MemorySettings.objects.update_or_create(pk=1, defaults={"min_score": 0.3})
    return fake_anthropic


def _badges(html: str) -> list[str]:
    return re.findall(r'<span class="badge">([^<]*)</span>', html)


def test_the_injected_memories_are_labelled_in_french(world, staff_client):
    world.script(text_message("Ton vélo de course est rouge."))

    turn = staff_client.post(
        reverse("agent:chat-send"),
        {"message": "De quelle couleur est mon vélo ?"},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    page = staff_client.get(reverse("agent:chat")).content.decode()

    assert "Son vélo de course est rouge" in turn  # precondition: the fact was injected
    codes = {"fact", "exchange", "summary"}
    assert not codes & set(_badges(turn)), _badges(turn)
    assert not codes & set(_badges(page)), _badges(page)
