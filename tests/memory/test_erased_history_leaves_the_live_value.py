"""Erasing a forget that took a fact's old history lines leaves the fact's live value.

QA: « budget_ete » said « Budget pour le mariage à Lisbonne : 800 euros », then the
owner changed it to « Budget de l'été : 500 euros ». Forgetting « mariage Lisbonne »
took two of its history lines (not the fact), and erasing that forget marked every
text of those lines as erased, the live value included: a backup restore then deleted
the fact (« Effacé à nouveau … : 2 faits »), an export made after the erasure could
not import it (« effacé de cette mémoire, non réimporté »), and the agent's late
statement of it was refused. Only the texts that leave the memory are marked.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from memory.models import Actor, Fact
from memory.services.erased_marks import fact_erased_since, marks_known
from memory.services.erased_replay import marks_replay
from memory.services.erasing import forgetting_erase
from memory.services.facts import fact_store, fact_update
from memory.services.forgetting import topic_forget, topic_forget_preview

pytestmark = pytest.mark.django_db

OLD = "Budget pour le mariage à Lisbonne : 800 euros."
LIVE = "Budget de l'été : 500 euros."


@pytest.fixture
def erased():
    fact, _ = fact_store(key="budget_ete", value=OLD)
    fact_update(fact=fact, actor=Actor.USER, value=LIVE)
    plan = topic_forget_preview(topic="mariage Lisbonne")
    assert plan.facts == [] and plan.history  # only the history lines are about it
    result = topic_forget(topic="mariage Lisbonne", actor=Actor.USER, only=plan.item_ids())
    forgetting_erase(forgetting_id=result.forgetting_id, actor=Actor.USER)
    assert Fact.objects.get(key="budget_ete").value == LIVE
    return fact


def test_the_live_value_is_not_marked_erased(erased):
    assert not fact_erased_since(key="budget_ete", value=LIVE, moment=None)
    assert fact_erased_since(key="budget_ete", value=OLD, moment=None)


def test_a_restore_replaying_the_marks_keeps_the_fact(erased):
    counts = marks_replay([(digest, None) for digest in marks_known()])

    assert counts["facts"] == 0
    assert Fact.objects.get(key="budget_ete").value == LIVE


def test_an_export_made_after_the_erasure_imports_the_fact_back(erased, tmp_path):
    path = tmp_path / "apres.jsonl"
    call_command("memory_export", str(path), stdout=StringIO())
    Fact.all_objects.filter(key="budget_ete").delete()

    out = StringIO()
    call_command("memory_import", str(path), stdout=out, stderr=StringIO())

    assert "non réimporté" not in out.getvalue(), out.getvalue()
    assert Fact.objects.get(key="budget_ete").value == LIVE
