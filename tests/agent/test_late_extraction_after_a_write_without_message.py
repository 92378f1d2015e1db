"""A late extraction of an older message never replaces a newer statement written with no
message: the API's POST or PATCH (agent token), MCP `remember`. Done in order, the newer
statement wins; whichever runs last, so does it (fact_sources.said_before_the_value).

QA 9b: the value written with no message had no date, so the old extraction replaced it.
"""

from __future__ import annotations

import json

import pytest

from agent.extraction_jobs import extraction_job_enqueue
from memory.models import Fact
from memory.services.jobs import job_run
from tests.fakes.anthropic import fake_anthropic  # noqa: F401
from tests.memory.api.conftest import agent_api, agent_token, agent_user  # noqa: F401
from tests.memory.world import exchange_save

pytestmark = pytest.mark.django_db


def _extract_ville(body: dict) -> str:
    prompt = json.dumps(body["messages"][-1]["content"], ensure_ascii=False)
    facts = []
    if "Lyon" in prompt:
        facts = [{"key": "ville", "value": "Habite à Lyon", "type": "fact"}]
    return json.dumps({"facts": facts})


def test_a_late_extraction_leaves_the_apis_newer_word(
    vector_store,
    local_embedder,
    fake_anthropic,  # noqa: F811
    agent_api,  # noqa: F811
):
    fake_anthropic.handler = _extract_ville
    # The owner said Lyon; its extraction is queued behind an LLM outage.
    question, reply = exchange_save("whatsapp", "J'habite à Lyon", "Noté.")
    job = extraction_job_enqueue(message_ids=[question.id], reply_id=reply.id, channel="whatsapp")
    # Later, the outside agent (gateway) stores the newer fact through the API.
    answer = agent_api.post(
        "/api/v1/memory/facts",
        {"key": "ville", "value": "Habite à Paris depuis son déménagement"},
        format="json",
    )
    assert answer.status_code in (200, 201), answer.content

    # The old extraction finally runs.
    assert job_run(job.id) == "done"

    # In order (extraction first, then the API's newer word), the memory says Paris.
    assert Fact.objects.get(key="ville").value == "Habite à Paris depuis son déménagement"


def test_a_late_extraction_leaves_the_apis_newer_word_on_an_extracted_fact(
    vector_store,
    local_embedder,
    fake_anthropic,  # noqa: F811
    agent_api,  # noqa: F811
):
    """Same, when the fact already existed from an even older message: the API's newer
    word clears its source message, so the late extraction is no longer seen as late."""
    fake_anthropic.handler = _extract_ville
    q0, r0 = exchange_save("whatsapp", "Je vis à Lyon maintenant, pas à Lille", "Noté.")
    first = extraction_job_enqueue(message_ids=[q0.id], reply_id=r0.id, channel="whatsapp")
    assert job_run(first.id) == "done"
    assert Fact.objects.get(key="ville").value == "Habite à Lyon"
    question, reply = exchange_save("whatsapp", "Je confirme : Lyon", "Noté.")
    job = extraction_job_enqueue(message_ids=[question.id], reply_id=reply.id, channel="whatsapp")
    answer = agent_api.post(
        "/api/v1/memory/facts",
        {"key": "ville", "value": "Habite à Paris depuis son déménagement"},
        format="json",
    )
    assert answer.status_code == 200, answer.content
    assert job_run(job.id) == "done"
    assert Fact.objects.get(key="ville").value == "Habite à Paris depuis son déménagement"


def test_a_late_extraction_leaves_the_agents_newer_patch(
    vector_store,
    local_embedder,
    fake_anthropic,  # noqa: F811
    agent_api,  # noqa: F811
):
    """The agent token's PATCH keeps the fact's old source message: an extraction of a
    message written before the PATCH (but after that source) replaces the PATCH's value."""
    fake_anthropic.handler = _extract_ville
    q0, r0 = exchange_save("whatsapp", "Je vis à Lyon maintenant, pas à Lille", "Noté.")
    first = extraction_job_enqueue(message_ids=[q0.id], reply_id=r0.id, channel="whatsapp")
    assert job_run(first.id) == "done"
    # A second message about Lyon; its extraction waits behind an outage.
    question, reply = exchange_save("whatsapp", "Je confirme : Lyon", "Noté.")
    job = extraction_job_enqueue(message_ids=[question.id], reply_id=reply.id, channel="whatsapp")
    # Then the outside agent corrects the fact through the API.
    answer = agent_api.patch(
        "/api/v1/memory/facts/ville",
        {"value": "Habite à Paris depuis son déménagement"},
        format="json",
    )
    assert answer.status_code == 200, answer.content
    assert job_run(job.id) == "done"
    assert Fact.objects.get(key="ville").value == "Habite à Paris depuis son déménagement"


def test_a_late_extraction_leaves_mcp_remembers_newer_word(
    vector_store,
    local_embedder,
    fake_anthropic,  # noqa: F811
):
    from memory.models import Actor, FactSource
    from memory.services.dedup import fact_remember

    fake_anthropic.handler = _extract_ville
    question, reply = exchange_save("whatsapp", "J'habite à Lyon", "Noté.")
    job = extraction_job_enqueue(message_ids=[question.id], reply_id=reply.id, channel="whatsapp")
    # What MCP `remember` does (memory/mcp/tools.py): no source message.
    fact_remember(
        key="ville",
        value="Habite à Paris depuis son déménagement",
        source=FactSource.TOOL,
        actor=Actor.AGENT,
    )
    assert job_run(job.id) == "done"
    assert Fact.objects.get(key="ville").value == "Habite à Paris depuis son déménagement"


def test_an_extraction_of_a_message_said_after_the_apis_word_replaces_it(
    vector_store,
    local_embedder,
    fake_anthropic,  # noqa: F811
    agent_api,  # noqa: F811
):
    """The other side: the owner's later message is newer than the API's word."""
    fake_anthropic.handler = _extract_ville
    answer = agent_api.post(
        "/api/v1/memory/facts",
        {"key": "ville", "value": "Habite à Paris depuis son déménagement"},
        format="json",
    )
    assert answer.status_code in (200, 201), answer.content
    question, reply = exchange_save("whatsapp", "J'habite à Lyon", "Noté.")
    job = extraction_job_enqueue(message_ids=[question.id], reply_id=reply.id, channel="whatsapp")

    assert job_run(job.id) == "done"

    assert Fact.objects.get(key="ville").value == "Habite à Lyon"
