"""Our agent's memory tools answer a malformed call in French, as MCP does.

QA: the agent loop's tool errors quoted the schema validator in English (« '0.5' is not of
type 'number' », « 'value' is a required property », « Additional properties are not
allowed ('foo' was unexpected) », « 50 is greater than the maximum of 20 »), and a call
whose input was no object was told of an unexpected property « _ ».
"""

import json

import pytest

from agent.tools import ToolContext, tool_run

pytestmark = pytest.mark.django_db

ENGLISH = ("is not", "required property", "Additional properties", "greater than", "should be")
REGEX = ("^", "$", "\\d", "[a-z")


@pytest.mark.parametrize(
    ("name", "tool_input", "said"),
    [
        (
            "memory__store_fact",
            {"key": "k", "value": "x", "importance": "0.5"},
            "importance : doit être un nombre.",
        ),
        ("memory__store_fact", {"key": "k"}, "value : champ obligatoire."),
        ("memory__store_fact", {"key": "k", "value": "x", "foo": 1}, "foo : Champ inconnu."),
        ("memory__recent", {"limit": 50}, "limit : doit être au plus 20."),
        ("memory__recent", {"limit": 0}, "limit : doit être au moins 1."),
        ("memory__search", {"query": ""}, "query : doit contenir au moins 1 caractère."),
        (
            "memory__store_fact",
            {"key": "Bad Key!", "value": "x"},
            "key : n'a pas la forme attendue (clé courte en snake_case : minuscules sans accent",
        ),
        (
            "memory__forget",
            {"topic": "Marie", "ids": ["fait 3"]},
            "ids : n'a pas la forme attendue (un id de l'aperçu, ex. message:12 ou fact:3).",
        ),
        ("memory__recent", "pas un objet", "les arguments doivent être un objet JSON"),
    ],
)
def test_a_malformed_call_is_told_in_french(name, tool_input, said):
    outcome = tool_run(
        name=name, tool_input=tool_input, context=ToolContext(channel="mission_control")
    )

    error = json.loads(outcome.content)["error"]
    assert outcome.is_error
    assert said in error, error
    assert not any(words in error for words in ENGLISH), error
    assert not any(part in error for part in REGEX), error  # QA: a regex was quoted


@pytest.mark.parametrize(
    ("tool_input", "said"),
    [
        ({"query": "x", "channel": "bad channel!"}, "canal"),
        ({"query": "   "}, "query : le texte cherché est vide"),
    ],
)
def test_a_search_the_other_paths_refuse_is_refused_not_answered_empty(tool_input, said):
    """QA: memory__search with « bad channel! » or a query of spaces answered an empty
    list, while MCP's context refused the channel and an empty query was refused."""
    outcome = tool_run(
        name="memory__search", tool_input=tool_input, context=ToolContext(channel="mission_control")
    )

    assert outcome.is_error, outcome.content
    assert said in json.loads(outcome.content)["error"]


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_an_importance_no_json_can_carry_is_refused_in_french(number):
    """QA: Python's JSON parser (the SDK's) reads NaN and Infinity; NaN passed the schema's
    bounds and reached the database's check: « a échoué : IntegrityError »."""
    from memory.models import Fact

    outcome = tool_run(
        name="memory__store_fact",
        tool_input={"key": "humeur", "value": "bonne", "importance": number},
        context=ToolContext(channel="mission_control"),
    )

    error = json.loads(outcome.content)["error"]
    assert outcome.is_error
    assert "importance : doit être un nombre fini." in error, error
    assert not Fact.all_objects.exists()
