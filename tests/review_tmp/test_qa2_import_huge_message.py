"""memory_import takes a message of any size: the API caps a message at 50,000 characters
(and a fact's value is capped at 10,000 by the import itself), but a 20 MB message line was
imported (7.6 s, one row of 20,000,000 characters that the history then hands to the LLM)."""

from __future__ import annotations

import pytest

from memory.api.messages import CONTENT_MAX_CHARS
from tests.review_tmp._qa2_import_helpers import assert_refused, message

from tests.memory.api.conftest import agent_api, agent_token, agent_user, owner_api  # noqa: F401

pytestmark = pytest.mark.django_db


def test_the_api_refuses_a_message_over_its_limit(agent_api):
    answer = agent_api.post(
        "/api/v1/memory/messages",
        {"channel": "whatsapp", "content": "mot " * (CONTENT_MAX_CHARS // 4 + 1)},
        format="json",
    )
    assert answer.status_code == 400


def test_the_import_refuses_a_message_over_the_apis_limit(tmp_path):
    assert_refused(tmp_path, message(content="mot " * 100_000))  # 400,000 characters
