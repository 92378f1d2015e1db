"""The admin's fact pages (audit 12): a source message a forget took shows nothing of its
text on the page of a fact the forget left; an expiry in the add form's URL is parsed or
dropped, never a 500."""

from __future__ import annotations

from html import unescape

import pytest
from django.urls import reverse

from memory.models import Fact, Message
from memory.services.facts import fact_store
from memory.services.forgetting import topic_forget
from tests.memory.world import exchange_save

pytestmark = pytest.mark.django_db
SECRET = "Zanzibar"


def test_a_fact_page_shows_nothing_of_a_source_message_a_forget_took(staff_client):
    question, _ = exchange_save(
        "whatsapp", f"Mon voyage à {SECRET} est en août ; au fait j'adore le café serré", "Noté."
    )
    fact, _ = fact_store(key="boisson_preferee", value="Aime le café serré")
    Fact.all_objects.filter(pk=fact.pk).update(source_message=question)
    shown = unescape(
        staff_client.get(reverse("admin:memory_fact_change", args=[fact.pk])).content.decode()
    )
    assert SECRET in shown  # the link is shown while the message is in memory

    topic_forget(topic=f"le voyage à {SECRET}", actor="user")
    assert not Message.objects.filter(pk=question.pk).exists()
    assert Fact.objects.filter(pk=fact.pk).exists()  # the coffee fact is not about the trip

    page = unescape(
        staff_client.get(reverse("admin:memory_fact_change", args=[fact.pk])).content.decode()
    )
    assert SECRET not in page


@pytest.mark.parametrize(
    "value", ["abc", "2026-12-01", "2026-12-01 10:00", "2026-13-01 10:00", "\x00"]
)
def test_the_fact_add_form_with_an_expiry_in_the_url_is_no_500(staff_client, value):
    response = staff_client.get("/admin/memory/fact/add/", {"expires_at": value})
    assert response.status_code == 200
