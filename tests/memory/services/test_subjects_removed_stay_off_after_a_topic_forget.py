"""A subject the owner took off a fact stays off once a topic forget took the history line
that recorded the removal (QA 3: the agent's next statement put it back).

README: the agent « adds subjects, never one the owner took off ». The removal is read
from the fact's history (fact_ownership.subjects_the_owner_removed, through the default
manager); a topic forget that takes that line (its old value holds the topic's words)
hides it, and the agent's next statement puts the subject back."""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact
from memory.services.dedup import fact_remember
from memory.services.facts import fact_store, fact_update
from memory.services.forgetting import topic_forget

pytestmark = pytest.mark.django_db


def test_a_subject_the_owner_removed_stays_off_after_a_topic_forget_took_the_edit_line(
    settings,
):
    settings.ANTHROPIC_API_KEY = ""
    fact, _ = fact_store(
        key="voyage_david",
        value="David part en Grèce cet été.",
        subjects=["david", "grèce"],
        actor=Actor.AGENT,
    )
    # The owner corrects it: another value, and takes the subject « grèce » off.
    fact_update(
        fact=fact, actor=Actor.USER, value="David part en Crète cet été.", subjects=["david"]
    )
    # Then forgets the topic « Grèce »: the edit's history line (old value) is taken.
    assert topic_forget(topic="Grèce", actor=Actor.USER).forgetting_id
    assert Fact.objects.get(pk=fact.pk).subjects == ["david"]

    # The agent restates the fact (a tool, MCP remember) with its old subjects.
    fact_remember(
        key="voyage_david",
        value="David part en Grèce cet été.",
        subjects=["david", "grèce"],
        source="tool",
        actor=Actor.AGENT,
    )

    after = Fact.objects.get(pk=fact.pk)
    assert after.value == "David part en Crète cet été."  # the owner's value stays
    assert "grèce" not in after.subjects, after.subjects  # the removed subject stays off
