"""access_count / last_accessed_at: a fact counts an access when it reaches the agent."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agent.tools import ToolContext, tool_run
from memory.models import Fact, FactRevision
from memory.services.fact_access import facts_accessed
from memory.services.facts import fact_store
from memory.services.indexing import KIND_FACT, index_rows
from memory.services.messages import message_save
from memory.services.retrieval import auto_retrieve, auto_retrieve_preview

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder, settings, tmp_path):
    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path / "vault"
    (tmp_path / "vault").mkdir()
    dentist = fact_store(key="dentist", value="Rendez-vous chez le dentiste mardi à 9 heures")[0]
    bike = fact_store(key="bike", value="Le vélo est rangé au garage")[0]
    index_rows(KIND_FACT, [dentist.pk, bike.pk])
    return dentist, bike


def _fresh(fact: Fact) -> Fact:
    return Fact.objects.get(pk=fact.pk)


def test_a_fact_injected_by_auto_retrieval_counts_one_access(world):
    dentist, bike = world
    before = _fresh(dentist)
    revisions = FactRevision.objects.count()
    result = auto_retrieve(message="quand est le dentiste ?", channel="whatsapp")
    injected = {m["id"] for m in result.memories}
    assert f"fact:{dentist.pk}" in injected
    after = _fresh(dentist)
    assert after.access_count == 1 and after.last_accessed_at is not None
    # An access is not a change: no revision, no re-embedding, the fact's date unchanged.
    assert FactRevision.objects.count() == revisions
    assert (after.updated_at, after.version) == (before.updated_at, before.version)
    # Only what was injected was accessed.
    assert _fresh(bike).access_count == (1 if f"fact:{bike.pk}" in injected else 0)


def test_the_preview_does_not_count_as_an_access(world):
    dentist, _ = world
    preview = auto_retrieve_preview(message="quand est le dentiste ?", channel="whatsapp")
    assert f"fact:{dentist.pk}" in [m["id"] for m in preview.memories]
    assert _fresh(dentist).access_count == 0


def test_a_fact_returned_by_the_agents_search_tool_counts_one_access(world):
    dentist, _ = world
    request = message_save(channel="mission_control", role="user", content="(la demande)")
    context = ToolContext(channel="mission_control", message_ids=(request.id,))
    outcome = tool_run(
        name="memory__search", tool_input={"query": "rendez-vous dentiste"}, context=context
    )
    results = json.loads(outcome.content)["results"]
    assert any(r["kind"] == "fact" and str(r["id"]) == str(dentist.pk) for r in results)
    after = _fresh(dentist)
    assert after.access_count == 1 and after.last_accessed_at is not None


def test_an_access_is_one_update_with_no_read_so_none_is_lost():
    fact = fact_store(key="dentist", value="mardi 9 h")[0]
    stale = _fresh(fact)
    with CaptureQueriesContext(connection) as queries:
        facts_accessed([fact.pk, fact.pk])
    [update] = queries.captured_queries
    assert update["sql"].startswith("UPDATE") and '"access_count" + 1' in update["sql"]
    facts_accessed([stale.pk])  # a caller holding an old instance still adds, never overwrites
    assert _fresh(fact).access_count == 2
