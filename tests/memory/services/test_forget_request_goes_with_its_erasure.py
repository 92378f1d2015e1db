"""The chat exchange that asked to forget names the topic: it goes with the forget.

The owner's request and the agent's reply are kept out of memory at once
(forget_exchange_exclude); once the forget is erased for good or purged after its
window, they are deleted like what it took, with the same erasure marks (QA 9a:
they stayed word for word in the messages table, the file and every backup, while
the forget's own topic read « [sujet effacé] »). An undo leaves them out of memory.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from agent.loop import handle_message
from memory.models import ErasedMark, Forgetting, ForgettingState, Message
from memory.services.erased_marks import MESSAGE_KEY, message_mark
from memory.services.erasing import forgetting_erase
from memory.services.forgetting import PURGED_TOPIC, forgetting_restore, forgettings_purge
from tests.agent.exchanges import past_exchange
from tests.fakes.anthropic import text_message, tool_use_message

pytestmark = pytest.mark.django_db

CHANNEL = "mission_control"
WEDDING = "Le mariage de Marie à Lisbonne est le 14 juin, la cérémonie à Belém"
DOG = "Le chien de Marie s'appelle Filou"
TOPIC = "le mariage de Marie à Lisbonne"
REQUEST = "Oublie le mariage de Marie à Lisbonne, la cérémonie à Belém"
REPLY = "C'est oublié : plus rien sur la cérémonie à Belém."
PREVIEW_REPLY = "Je retirerais un échange sur la cérémonie à Belém. Je confirme ?"
CONFIRM = "Oui, vas-y"
# Words that only the forgotten exchange, the request and the reply hold.
TOPIC_WORDS = ("Belém", "Lisbonne", "mariage")


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, settings):
    settings.AGENT_COALESCE_SECONDS = 0
    wedding = past_exchange("whatsapp", WEDDING, "Note-le bien !")
    dog = past_exchange("whatsapp", DOG, "Joli nom.")
    return fake_anthropic, wedding, dog


def _turn(fake, text, tool_input, judged, reply, capture):
    """One chat turn that calls memory__forget with ``tool_input``; ``judged``: the ids
    the forget's judge answers."""
    fake.script(
        tool_use_message(("memory__forget", tool_input)),
        text_message(json.dumps({"ids": judged})),
        text_message(reply),
    )
    with capture(execute=True):
        return handle_message(channel=CHANNEL, text=text)


@pytest.fixture
def forgotten(world, django_capture_on_commit_callbacks):
    """A forget asked in chat, its request and reply kept out of memory."""
    fake, wedding, _ = world
    result = _turn(
        fake,
        REQUEST,
        {"topic": TOPIC},
        [f"message:{wedding.id}"],
        REPLY,
        django_capture_on_commit_callbacks,
    )
    asked = Message.all_objects.filter(pk__in=[*result.message_ids, result.reply_id])
    assert asked.count() == 2 and all(m.memory_excluded for m in asked)
    return Forgetting.objects.get(), result


def _holding(*words: str) -> list[str]:
    """Every message, in memory or not, that still holds one of ``words``."""
    return [
        f"#{m.id} {m.role}: {m.content}"
        for word in words
        for m in Message.all_objects.filter(content__icontains=word)
    ]


def _marks_of(message_ids) -> set[str]:
    return {
        message_mark(row)
        for row in Message.all_objects.filter(pk__in=message_ids).values(*MESSAGE_KEY)
    }


def test_erasing_a_forget_asked_in_chat_deletes_its_request_and_reply(
    forgotten, world, django_capture_on_commit_callbacks
):
    forgetting, result = forgotten
    _, _, dog = world
    marks = _marks_of([*result.message_ids, result.reply_id])

    with django_capture_on_commit_callbacks(execute=True):
        forgetting_erase(forgetting_id=forgetting.pk, actor="user")

    forgetting.refresh_from_db()
    assert forgetting.topic == PURGED_TOPIC
    assert _holding(*TOPIC_WORDS) == []
    # Gone the way an erased row goes: marked, so no import of an older copy brings it back.
    assert set(ErasedMark.objects.filter(digest__in=marks).values_list("digest", flat=True)) == (
        marks
    )
    assert Message.objects.filter(pk=dog.pk).exists()


def test_the_purge_of_a_forget_asked_in_chat_deletes_its_request_and_reply(
    forgotten, world, django_capture_on_commit_callbacks
):
    forgetting, result = forgotten
    _, _, dog = world
    marks = _marks_of([*result.message_ids, result.reply_id])

    with django_capture_on_commit_callbacks(execute=True):
        assert forgettings_purge(now=timezone.now() + timedelta(days=30)) == 1

    forgetting.refresh_from_db()
    assert forgetting.state == ForgettingState.PURGED and forgetting.topic == PURGED_TOPIC
    assert _holding(*TOPIC_WORDS) == []
    assert ErasedMark.objects.filter(digest__in=marks).count() == len(marks)
    assert Message.objects.filter(pk=dog.pk).exists()


def test_a_confirmed_dry_run_goes_with_the_forget_it_led_to(
    world, django_capture_on_commit_callbacks
):
    """The dry run's turn names the topic; the confirmation (« oui ») may not."""
    fake, wedding, dog = world
    judged = [f"message:{wedding.id}"]
    preview = _turn(
        fake,
        REQUEST,
        {"topic": TOPIC, "dry_run": True},
        judged,
        PREVIEW_REPLY,
        django_capture_on_commit_callbacks,
    )
    assert not Forgetting.objects.exists()
    confirm = _turn(
        fake, CONFIRM, {"topic": TOPIC}, judged, REPLY, django_capture_on_commit_callbacks
    )
    assert fake.pending == 0  # each turn read as scripted
    forgetting = Forgetting.objects.get()
    asked = [*preview.message_ids, preview.reply_id, *confirm.message_ids, confirm.reply_id]
    assert Message.all_objects.filter(pk__in=asked, memory_excluded=True).count() == 4

    with django_capture_on_commit_callbacks(execute=True):
        forgetting_erase(forgetting_id=forgetting.pk, actor="user")

    assert _holding(*TOPIC_WORDS, CONFIRM) == []
    assert not Message.all_objects.filter(pk__in=asked).exists()
    assert Message.objects.filter(pk=dog.pk).exists()


def test_an_undone_forget_keeps_its_request_out_of_memory(
    forgotten, django_capture_on_commit_callbacks
):
    forgetting, result = forgotten
    asked = [*result.message_ids, result.reply_id]

    with django_capture_on_commit_callbacks(execute=True):
        forgetting_restore(forgetting_id=forgetting.pk, actor="user")

    # What the forget took is back; the exchange that asked for it is not.
    assert Message.objects.filter(content=WEDDING).exists()
    assert Message.all_objects.filter(pk__in=asked, memory_excluded=True).count() == 2
    assert not Message.objects.filter(pk__in=asked).exists()


def test_a_later_erasure_of_the_topic_deletes_the_request_of_the_undone_forget(
    forgotten, world, django_capture_on_commit_callbacks
):
    """The undone forget's topic is redacted with the erasure: its request goes too."""
    forgetting, _ = forgotten
    fake, wedding, _ = world
    with django_capture_on_commit_callbacks(execute=True):
        forgetting_restore(forgetting_id=forgetting.pk, actor="user")
    again = _turn(
        fake,
        REQUEST,
        {"topic": TOPIC},
        [f"message:{wedding.id}"],
        REPLY,
        django_capture_on_commit_callbacks,
    )
    second = Forgetting.objects.get(state=ForgettingState.ACTIVE)

    with django_capture_on_commit_callbacks(execute=True):
        forgetting_erase(forgetting_id=second.pk, actor="user")

    assert _holding(*TOPIC_WORDS) == []
    assert not Message.all_objects.filter(pk=again.reply_id).exists()
    forgetting.refresh_from_db()
    assert forgetting.topic == PURGED_TOPIC


def test_a_request_to_forget_that_found_nothing_stays_out_of_memory(
    world, django_capture_on_commit_callbacks
):
    fake, _, _ = world
    result = _turn(
        fake,
        "Oublie mes vacances au Japon",
        {"topic": "mes vacances au Japon"},
        [],
        "Je n'ai rien trouvé sur ce sujet.",
        django_capture_on_commit_callbacks,
    )

    assert fake.pending == 0 and not Forgetting.objects.exists()
    asked = Message.all_objects.filter(pk__in=[*result.message_ids, result.reply_id])
    assert asked.count() == 2 and all(m.memory_excluded for m in asked)
