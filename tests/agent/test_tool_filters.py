"""Search filters in memory__search and memory__search_text, through the tool runner."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from django.utils import timezone

from agent.tools import TOOLS, ToolContext, tool_run
from memory.models import Fact
from memory.services.facts import fact_store
from memory.services.indexing import KIND_FACT, KIND_MESSAGE, index_rows
from memory.services.messages import message_save
from memory.services.search import memory_search, search_filters_build

pytestmark = pytest.mark.django_db


def _aware(*args) -> datetime:
    return timezone.make_aware(datetime(*args))


@pytest.fixture
def bikes(vector_store, local_embedder):
    """Three memories about bikes: two facts that differ in every filter, an old exchange."""
    broken = fact_store(
        key="velo_derailleur",
        value="Le dérailleur de son vélo est cassé",
        memory_type="fact",
        subjects=["vélo", "réparation"],
        channel="whatsapp",
    )[0]
    wanted = fact_store(
        key="velo_route",
        value="Il veut acheter un vélo de route",
        memory_type="goal",
        subjects=["achat"],
        channel="telegram",
    )[0]
    Fact.objects.filter(pk=broken.pk).update(**{Fact.DATE_FIELD: _aware(2026, 3, 10, 12)})
    Fact.objects.filter(pk=wanted.pk).update(**{Fact.DATE_FIELD: _aware(2026, 5, 2, 12)})
    question = message_save(
        channel="whatsapp",
        role="user",
        content="J'ai crevé mon vélo sur la route de Brest",
        created_at=_aware(2025, 1, 10, 9),
    )
    message_save(
        channel="whatsapp",
        role="assistant",
        content="Pense à la rustine !",
        reply_to_id=question.id,
        created_at=_aware(2025, 1, 10, 9, 1),
    )
    index_rows(KIND_MESSAGE, [question.id])
    index_rows(KIND_FACT, [broken.id, wanted.id])
    return {
        "broken": f"fact:{broken.id}",
        "wanted": f"fact:{wanted.id}",
        "ride": f"message:{question.id}",
    }


@pytest.fixture
def context():
    request = message_save(channel="mission_control", role="user", content="(la demande)")
    return ToolContext(channel="mission_control", message_ids=(request.id,))


def _found(name, tool_input, context) -> list[str]:
    outcome = tool_run(name=name, tool_input=tool_input, context=context)
    assert not outcome.is_error, outcome.content
    results = json.loads(outcome.content)["results"]
    return [f"{'fact' if r['kind'] == 'fact' else 'message'}:{r['id']}" for r in results]


@pytest.mark.parametrize("name", ["memory__search", "memory__search_text"])
@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, {"broken", "wanted", "ride"}),
        ({"memory_type": "goal"}, {"wanted"}),
        ({"subjects": ["Vélo"]}, {"broken"}),
        ({"subjects": ["achat", "vélo"]}, {"broken", "wanted"}),
        ({"channel": "whatsapp"}, {"broken", "ride"}),
        ({"since": "2026-03-01", "until": "2026-04-01"}, {"broken"}),
        ({"until": "2026-01-01"}, {"ride"}),
        ({"channel": "telegram", "since": "2026-04-01"}, {"wanted"}),
    ],
)
def test_the_search_tools_apply_the_filters(name, filters, expected, bikes, context):
    found = _found(name, {"query": "vélo", "limit": 20, **filters}, context)

    assert set(found) == {bikes[k] for k in expected}


@pytest.mark.parametrize("name", ["memory__search", "memory__search_text"])
def test_the_tools_build_the_filters_the_search_service_builds(name, bikes, context):
    """One reading of the filters: the tool's answer is the service's with search_filters_build."""
    arguments = {"channel": "whatsapp", "since": "2025-01-01"}
    mode = "semantic" if name == "memory__search" else "text"
    service = memory_search(
        query="vélo", mode=mode, limit=20, filters=search_filters_build(**arguments)
    )

    found = _found(name, {"query": "vélo", "limit": 20, **arguments}, context)

    assert found == [f"{'fact' if h.kind == 'fact' else 'message'}:{h.id}" for h in service]


@pytest.mark.parametrize(
    ("tool_input", "fragment"),
    [
        ({"since": "le mois dernier"}, "Date invalide"),
        ({"since": "2026-05-01", "until": "2026-04-01"}, "La fin doit être après le début."),
        ({"memory_type": "secret"}, "memory_type"),
        ({"subjects": "vélo"}, "subjects"),
    ],
)
def test_bad_filters_come_back_as_french_tool_errors(tool_input, fragment, bikes, context):
    outcome = tool_run(
        name="memory__search_text", tool_input={"query": "vélo", **tool_input}, context=context
    )

    assert outcome.is_error
    error = json.loads(outcome.content)["error"]
    assert error.startswith("Entrée invalide pour memory__search_text")
    assert fragment in error


def test_the_filter_parameters_are_described_in_both_search_tools():
    for name in ("memory__search", "memory__search_text"):
        properties = TOOLS[name].input_schema["properties"]
        for param in ("channel", "memory_type", "subjects", "since", "until"):
            assert properties[param]["description"]
