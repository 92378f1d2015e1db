"""A self or goal merge decided while its message was forgotten (an LLM decision in flight)
writes nothing of it: refused where it is written, as dedup's merge of an owner fact is."""

from __future__ import annotations

import pytest

import memory.services.self_memory as self_memory
from memory.exceptions import SourceForgotten
from memory.models import Fact, Message
from memory.services.forgetting import topic_forget
from memory.services.messages import message_save
from memory.services.self_memory import agent_item_store

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_self_merge_from_a_message_forgotten_meanwhile_writes_nothing(monkeypatch):
    from memory.models import KIND_CATEGORIES

    category = KIND_CATEGORIES["self"][0]
    target = agent_item_store(
        kind="self", category=category, content="Je réponds en français", actor="agent"
    ).item
    message = message_save(
        channel="whatsapp", role="user", content="Réponds toujours en tutoiement zanzibar"
    )

    def decide(**kwargs):  # the dedup LLM call is in flight: the owner forgets the message
        topic_forget(topic="zanzibar", actor="user")
        assert not Message.objects.filter(pk=message.pk).exists()
        return "UPDATE", target, "llm"

    monkeypatch.setattr(self_memory, "_decide", decide)
    with pytest.raises(SourceForgotten):
        agent_item_store(
            kind="self",
            category=category,
            content="Je tutoie zanzibar",
            actor="agent",
            source_message_id=message.pk,
        )

    assert "zanzibar" not in Fact.all_objects.get(pk=target.pk).value
