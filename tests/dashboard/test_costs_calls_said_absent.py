"""QA: /costs says « Aucun appel LLM sur la période » over calls it lists.

With calls priced 0 — a model the price table does not know (ANTHROPIC_MODEL set to a
gateway's own model name: agent.usage records its cost as 0, a warning in the log) —
the « Par jour » part answers « Aucun appel LLM sur la période. » and hides the daily
table, while « Par usage » just below lists « Conversation 1 1200 80 0,0000 $ »: the
chart's emptiness is decided on the cost (dashboard.selectors._chart ``highest == 0``),
not on the calls. Expected: the days with calls listed (their calls and tokens), no
sentence saying there were none.
"""

from __future__ import annotations

import html
import re

import pytest

from agent.usage import usage_record

pytestmark = pytest.mark.django_db


def _text(response) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


def test_calls_priced_zero_are_not_said_absent(staff_client):
    usage_record(model="passerelle-locale", purpose="chat", input_tokens=1200, output_tokens=80)

    text = _text(staff_client.get("/costs/"))

    assert "Conversation 1 1200 80" in text  # « Par usage » lists the call
    assert "Aucun appel LLM sur la période" not in text
