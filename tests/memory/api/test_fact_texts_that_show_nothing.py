"""A fact's value or subject that shows nothing is refused as a blank one is (QA).

Spaces were refused (« Ce champ ne peut être vide. »), but a value of zero-width
characters (U+200B, U+FEFF, U+2060) was stored: a blank fact in the prompt block and on the
pages; a subject of them, a badge with nothing in it.
"""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from memory.models import Fact

pytestmark = pytest.mark.django_db

FACTS = "/api/v1/memory/facts"
INVISIBLE = ["\u200b", "\ufeff\u200b\u2060", " \u200b "]


@pytest.mark.parametrize("blank", ["   ", *INVISIBLE])
def test_a_value_that_shows_nothing_is_refused_in_french(agent_api, blank):
    answer = agent_api.post(FACTS, {"key": "invisible", "value": blank}, format="json")
    assert answer.status_code == 400, answer.content
    said = str(answer.json())
    assert "vide" in said, said
    assert not Fact.all_objects.exists()


@pytest.mark.parametrize("blank", INVISIBLE)
def test_an_edit_to_a_value_that_shows_nothing_is_refused(owner_api, blank):
    created = owner_api.post(FACTS, {"key": "velo", "value": "Le vélo est bleu"}, format="json")
    assert created.status_code == 201, created.content
    answer = owner_api.patch(f"{FACTS}/velo", {"value": blank}, format="json")
    assert answer.status_code == 400, answer.content
    assert Fact.objects.get(key="velo").value == "Le vélo est bleu"


@pytest.mark.parametrize("blank", ["  ", *INVISIBLE])
def test_a_subject_that_shows_nothing_is_refused_as_a_blank_one_is(agent_api, blank):
    answer = agent_api.post(
        FACTS, {"key": "sujets", "value": "x", "subjects": ["vélo", blank]}, format="json"
    )
    assert answer.status_code == 400, answer.content
    assert answer.json()["extra"]["fields"]["subjects"] == {"1": ["Ce champ ne peut être vide."]}
    assert not Fact.all_objects.exists()


def test_the_services_drop_such_a_subject_as_they_drop_a_blank_one():
    """A tool or the extraction writing through the services (normalize_subjects)."""
    from memory.services.facts import fact_store

    fact_store(key="sujets", value="x", subjects=["vélo", " ", "\u200b\u2060"])
    assert Fact.objects.get(key="sujets").subjects == ["vélo"]


@pytest.mark.parametrize("blank", ["", *INVISIBLE])
def test_the_model_refuses_them_for_the_admin_and_the_import(blank):
    with pytest.raises(ValidationError, match="ne peut pas être vide"):
        Fact(key="velo", value=blank or "\u2060").full_clean()
    with pytest.raises(ValidationError, match="Un sujet ne peut pas être vide"):
        Fact(key="velo", value="Le vélo est bleu", subjects=[blank]).full_clean()


def test_a_value_stored_before_the_rule_blocks_no_other_edit():
    """Only what an edit changes is checked: the owner can still reweigh, or replace, a value
    of invisible characters stored before the rule."""
    from memory.models import Actor
    from memory.services.facts import fact_store, fact_update

    fact, _ = fact_store(key="vide", value="x", subjects=["vélo"])
    Fact.all_objects.filter(pk=fact.pk).update(value="\u200b", subjects=["\u200b"])
    fact = fact_update(fact=Fact.objects.get(pk=fact.pk), actor=Actor.USER, importance=0.9)
    assert fact.importance == 0.9
    fact = fact_update(fact=fact, actor=Actor.USER, value="Le vélo est bleu")
    assert Fact.objects.get(pk=fact.pk).value == "Le vélo est bleu"
