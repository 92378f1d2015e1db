"""memory_import takes rows dated in the future, which the API refuses.

POST /api/memory/messages refuses a ``timestamp`` in the future (« La date du message est
dans le futur. »), but a file line with ``created_at`` in 2090 is imported as is (the
message then sorts after everything said since, forever).
"""

from __future__ import annotations

import pytest

from tests.review_tmp._qa2_import_helpers import SUMMARY, assert_refused, fact, message

from tests.memory.api.conftest import agent_api, agent_token, agent_user, owner_api  # noqa: F401

pytestmark = pytest.mark.django_db

FUTURE = "2090-01-01T00:00:00+00:00"


def test_the_api_refuses_a_message_from_the_future(agent_api):
    answer = agent_api.post(
        "/api/v1/memory/messages",
        {"channel": "whatsapp", "content": "futur", "timestamp": FUTURE},
        format="json",
    )
    assert answer.status_code == 400
    assert "futur" in answer.json()["extra"]["fields"]["timestamp"][0]


@pytest.mark.parametrize(
    "record",
    [
        pytest.param(message(created_at=FUTURE), id="message-created-at"),
        pytest.param(fact(created_at=FUTURE, updated_at=FUTURE), id="fact-created-at"),
        pytest.param(SUMMARY | {"created_at": FUTURE}, id="summary-created-at"),
    ],
)
def test_an_import_line_dated_in_the_future_is_refused(tmp_path, record):
    assert_refused(tmp_path, record)
