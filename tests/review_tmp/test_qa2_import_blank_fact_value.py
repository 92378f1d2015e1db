"""memory_import takes a fact whose value is only spaces, which every other writer refuses
(API: « Ce champ ne peut être vide. »), and a summary whose content is only spaces (a message
whose content is only spaces is refused by the same import)."""

from __future__ import annotations

import pytest

from tests.review_tmp._qa2_import_helpers import SUMMARY, assert_refused, fact, message

from tests.memory.api.conftest import agent_api, agent_token, agent_user, owner_api  # noqa: F401

pytestmark = pytest.mark.django_db


def test_the_api_refuses_a_blank_value(owner_api):
    answer = owner_api.post("/api/v1/memory/facts", {"key": "velo", "value": "   "}, format="json")
    assert answer.status_code == 400


def test_the_import_refuses_a_blank_message(tmp_path):
    assert_refused(tmp_path, message(content="   "))


def test_the_import_refuses_a_blank_fact_value(tmp_path):
    assert_refused(tmp_path, fact(value="   "))


def test_the_import_refuses_a_blank_summary(tmp_path):
    assert_refused(tmp_path, SUMMARY | {"content": "   "})
