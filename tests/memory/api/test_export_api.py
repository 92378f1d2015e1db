"""GET /api/memory/export: the owner downloads the memory_export file; nobody else does."""

from __future__ import annotations

import json
import re

import pytest

from memory.models import Fact
from memory.services.facts import fact_store
from memory.services.messages import message_save
from memory.services.portability import FORMAT_NAME, export_lines
from memory.services.portability_import import memory_import_lines

pytestmark = pytest.mark.django_db

SECRET = "Le code du cadenas du vélo est 0712"


@pytest.fixture
def memory():
    question = message_save(channel="whatsapp", role="user", content="Où est mon vélo ?")
    message_save(
        channel="whatsapp", role="assistant", content="Au garage.", reply_to_id=question.id
    )
    fact_store(key="cadenas_velo", value=SECRET)


def _body(response) -> str:
    assert response.streaming
    return b"".join(response.streaming_content).decode("utf-8")


def test_the_owner_downloads_the_same_jsonl_as_the_command(staff_api, memory):
    response = staff_api.get("/api/memory/export")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson; charset=utf-8"
    assert re.fullmatch(
        r'attachment; filename="makilab-memoire-\d{8}-\d{4}\.jsonl"',
        response["Content-Disposition"],
    )
    lines = _body(response).splitlines()
    header = json.loads(lines[0])
    assert header["format"] == FORMAT_NAME and header["version"] == 1
    expected = list(export_lines())
    # Same records as the command writes (the header's time aside).
    assert lines[1:] == [line.rstrip("\n") for line in expected[1:]]
    # And the file imports: into this memory, it changes nothing.
    report = memory_import_lines(lines)
    assert report.created == {} and report.unchanged == {"message": 2, "fact": 1}


def test_since_filters_and_a_bad_date_is_a_french_400(staff_api, memory):
    Fact.objects.filter(key="cadenas_velo").update(updated_at="2020-01-01T00:00:00Z")
    body = _body(staff_api.get("/api/memory/export?since=2025-01-01"))
    assert SECRET not in body and "Où est mon vélo" in body
    response = staff_api.get("/api/memory/export?since=hier")
    assert response.status_code == 400
    assert "Date invalide pour since : « hier »" in response.content.decode()


def test_the_agent_token_and_strangers_get_no_export(agent_api, anonymous_api, memory):
    refused = agent_api.get("/api/memory/export")
    assert refused.status_code == 403
    assert "propriétaire" in refused.json()["message"]
    assert anonymous_api.get("/api/memory/export").status_code == 401


def test_the_memory_page_has_the_export_button(staff_client):
    html = staff_client.get("/memory/").content.decode()
    assert '<a class="button" href="/api/memory/export" download>Exporter la mémoire</a>' in html
