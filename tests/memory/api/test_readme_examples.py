"""The curl examples of README's "Memory API for outside agents" run as written."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from memory.models import Job, Message
from tests.memory.test_workers import ROOT

pytestmark = pytest.mark.django_db


def _curls() -> list[tuple[str, dict | None]]:
    """(path with its query, JSON body or None) of each curl, in order."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Memory API for outside agents", 1)[1].split("\n## ", 1)[0]
    [script] = re.findall(r"```sh\n(.*?)```", section, re.S)
    commands = re.split(r"\n(?=curl )", script.replace("\\\n", " "))
    found = []
    for command in (c for c in commands if c.startswith("curl ")):
        words = shlex.split(command.split("\n#", 1)[0])
        url = next(w for w in words if w.startswith("$API"))
        body = words[words.index("-d") + 1] if "-d" in words else None
        found.append((url.replace("$API", "/api/memory"), json.loads(body) if body else None))
    return found


def test_the_examples_record_get_context_and_list_recent_facts(
    agent_api, vector_store, local_embedder
):
    examples = _curls()
    assert [path.split("?")[0] for path, _ in examples] == [
        "/api/memory/context",
        "/api/memory/messages",
        "/api/memory/recent-facts",
    ]
    for path, body in examples:
        if body is None:
            response = agent_api.get(path)
        else:
            response = agent_api.post(path, body, format="json")
        assert response.status_code in (200, 201), (path, response.content)
    roles = list(Message.objects.order_by("id").values_list("role", flat=True))
    assert roles == ["user", "tool", "assistant"]
    assert Job.objects.filter(kind="extract").count() == 1
