"""The admin's history of actions (django_admin_log, "Actions récentes") names each row it
changed by its text: once the owner forgets or erases that row, no line names it."""

from __future__ import annotations

from html import unescape

import pytest
from django.contrib.admin.models import LogEntry
from django.urls import reverse

from memory.models import Fact
from memory.services.erasing import fact_erase
from memory.services.facts import fact_forget, fact_store
from memory.services.forgetting import topic_forget
from tests.memory.test_admin import _fact_form

pytestmark = pytest.mark.django_db

SECRET = "Zanzibar"


def _edit_in_admin(staff_client):
    fact, _ = fact_store(key="voyage_ete", value="Voyage en août avec Sophie")
    url = reverse("admin:memory_fact_change", args=[fact.pk])
    response = staff_client.post(
        url, _fact_form(fact, value=f"Voyage à {SECRET} en août avec Sophie")
    )
    assert response.status_code == 302, response.content.decode()[:1000]
    staff_client.get(response.url)  # the owner lands on the list: its "modifié" note is shown
    assert Fact.objects.get(pk=fact.pk).value.startswith(f"Voyage à {SECRET}")
    return fact


def _admin_pages_text(staff_client, fact_pk) -> dict[str, str]:
    seen = {"admin index": unescape(staff_client.get(reverse("admin:index")).content.decode())}
    seen["django_admin_log"] = " ".join(
        f"{e.object_repr} {e.change_message}" for e in LogEntry.objects.all()
    )
    return seen


def _forget_topic(fact):
    topic_forget(topic=f"le voyage à {SECRET}", actor="user")


def _purge_topic(fact):
    from datetime import timedelta

    from django.utils import timezone

    from memory.services.forgetting import forgettings_purge

    topic_forget(topic=f"le voyage à {SECRET}", actor="user")
    assert forgettings_purge(now=timezone.now() + timedelta(days=30)) == 1


def _erase(fact):
    fact_erase(fact=Fact.objects.get(pk=fact.pk), actor="user")


def _forget_alone(fact):
    fact_forget(fact=Fact.objects.get(pk=fact.pk), actor="user")


@pytest.mark.parametrize(
    "forget",
    [_forget_topic, _purge_topic, _erase, _forget_alone],
    ids=["topic", "topic-purged", "erased", "forgotten-alone"],
)
def test_the_admin_history_names_no_fact_the_owner_forgot(staff_client, forget):
    fact = _edit_in_admin(staff_client)
    assert SECRET in " ".join(LogEntry.objects.values_list("object_repr", flat=True))

    forget(fact)

    seen = _admin_pages_text(staff_client, fact.pk)
    leaks = [name for name, text in seen.items() if SECRET in text]
    assert leaks == [], leaks
    assert LogEntry.objects.filter(object_id=str(fact.pk)).exists()  # the line stays, unnamed


def test_the_admin_history_names_no_message_a_topic_forget_took(staff_user):
    from django.contrib.admin.models import CHANGE
    from django.contrib.contenttypes.models import ContentType

    from memory.models import Message
    from tests.memory.world import exchange_save

    question, _ = exchange_save("whatsapp", f"Le voyage à {SECRET} est en août", "Noté.")
    LogEntry.objects.create(  # as the admin writes it when the owner changes the message
        user=staff_user,
        content_type=ContentType.objects.get_for_model(Message),
        object_id=str(question.pk),
        object_repr=str(question),
        action_flag=CHANGE,
    )

    topic_forget(topic=f"le voyage à {SECRET}", actor="user")

    assert SECRET not in " ".join(LogEntry.objects.values_list("object_repr", flat=True))
