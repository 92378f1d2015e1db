"""A seed (memory_seed_self, written as the system) never rewrites what the owner wrote.

The agent's writes were kept off the owner's fields, a seed's were not (QA 7b): a seed
line the rule took for the opposite of a limitation the owner wrote herself superseded
it, text and category, where the seed promises a re-run never undoes anything."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from memory.models import Actor, Fact, FactKind
from memory.services.facts import fact_store, fact_update
from memory.services.self_memory import agent_item_store

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_llm(settings):
    settings.ANTHROPIC_API_KEY = ""


def _seed(tmp_path, *items: dict) -> None:
    path = tmp_path / "seed.jsonl"
    path.write_text("\n".join(json.dumps(item) for item in items) + "\n", encoding="utf-8")
    call_command("memory_seed_self", str(path))


def test_a_seed_line_contradicting_an_item_the_owner_wrote_is_stored_beside_it(
    tmp_path, no_llm, vector_store, local_embedder
):
    owner_item = agent_item_store(
        kind=FactKind.SELF,
        category="limitation",
        content="Je ne peux pas chercher sur le web",
        actor=Actor.USER,
    ).item

    _seed(
        tmp_path,
        {"kind": "self", "category": "capability", "content": "Je peux chercher sur le web"},
    )

    owner_item.refresh_from_db()
    assert (owner_item.value, owner_item.category) == (
        "Je ne peux pas chercher sur le web",
        "limitation",
    )
    seeded = Fact.all_objects.get(kind=FactKind.SELF, value="Je peux chercher sur le web")
    assert seeded.category == "capability" and seeded.pk != owner_item.pk


def test_a_seed_line_contradicting_the_agents_own_item_still_supersedes_it(
    tmp_path, no_llm, vector_store, local_embedder
):
    agents = agent_item_store(
        kind=FactKind.SELF, category="limitation", content="Je ne peux pas chercher sur le web"
    ).item

    _seed(
        tmp_path,
        {"kind": "self", "category": "capability", "content": "Je peux chercher sur le web"},
    )

    agents.refresh_from_db()
    assert (agents.value, agents.category) == ("Je peux chercher sur le web", "capability")


def test_a_system_write_leaves_the_fields_the_owner_set():
    fact, _ = fact_store(key="medecin", value="Dr Martin", actor=Actor.USER, subjects=["santé"])

    fact_update(fact=fact, actor=Actor.SYSTEM, value="Dr Durand", subjects=["médecin"])

    fact.refresh_from_db()
    assert fact.value == "Dr Martin"
    assert set(fact.subjects) == {"santé", "médecin"}  # subjects only added to, as the agent's


def test_a_seed_run_again_does_not_bring_back_an_item_the_owner_erased(
    vector_store, local_embedder, no_llm, django_capture_on_commit_callbacks
):
    """A topic forget took the seeded goal and was purged (its erasure marks stay): the
    same seed run again stored it again, word for word (QA 7a)."""
    from datetime import timedelta

    from django.utils import timezone

    from memory.services.forgetting import forgettings_purge, topic_forget
    from memory.services.self_seed import seed_report_lines, self_seed

    seed = "\n".join(
        json.dumps(item, ensure_ascii=False)
        for item in (
            {
                "kind": "goal",
                "category": "connection",
                "content": "Je veux aider mon propriétaire à préparer son voyage à Zanzibar",
            },
            {"kind": "self", "category": "context", "content": "Je suis Makilab, l'agent."},
        )
    )
    self_seed(text=seed)
    with django_capture_on_commit_callbacks(execute=True):
        assert topic_forget(topic="voyage à Zanzibar", actor="user").counts["facts"] == 1
        forgettings_purge(now=timezone.now() + timedelta(days=30))
    assert not Fact.all_objects.filter(value__contains="Zanzibar").exists()

    report = self_seed(text=seed)

    assert not Fact.all_objects.filter(value__contains="Zanzibar").exists()
    assert ([i.where for i in report.erased], len(report.present)) == (["ligne 1"], 1)
    said = "\n".join(seed_report_lines(report))
    assert "1 élément effacé par le propriétaire, non rechargé : ligne 1." in said
    assert "Zanzibar" not in said
