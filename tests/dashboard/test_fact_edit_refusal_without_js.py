"""Without JavaScript (a plain form post), a refused fact edit answers the whole page with
the form in place, as every other action of /memory does (sections.fragment), not the bare
<article> fragment htmx swaps in (QA 3b)."""

from __future__ import annotations

import re

import pytest

from memory.models import Actor
from memory.services.facts import fact_store, fact_update
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db

EDIT_URL = "/memory/facts/velo/edit/"


def _is_a_page(body: str) -> bool:
    return "<html" in body and "</html>" in body


def _edit_form_in(body: str) -> bool:
    return f'action="{EDIT_URL}"' in body and 'class="fact editing"' in body


def test_an_invalid_edit_without_javascript_answers_the_page_with_the_form(staff_client):
    fact_store(key="velo", value="Le vélo est au garage", actor=Actor.USER)

    response = staff_client.post(
        EDIT_URL, {"value": "", "memory_type": "fact", "importance": "0.5"}
    )

    body = response.content.decode()
    assert response.status_code == 422
    assert _is_a_page(body), body[:120]
    assert _edit_form_in(body)


def test_an_edit_over_a_change_made_since_without_javascript_answers_the_page(staff_client):
    fact, _ = fact_store(key="velo", value="Le vélo est au garage", actor=Actor.USER)
    form = staff_client.get(EDIT_URL, **HTMX).content.decode()
    opened = re.search(r'name="opened" value="([^"]+)"', form).group(1)
    fact_update(fact=fact, actor=Actor.USER, value="Le vélo est chez Paul")  # another tab

    response = staff_client.post(
        EDIT_URL,
        {
            "value": "Le vélo est à la cave",
            "initial-value": "Le vélo est au garage",
            "memory_type": "fact",
            "initial-memory_type": "fact",
            "importance": "0.6",
            "initial-importance": "0.6",
            "subjects": "",
            "initial-subjects": "",
            "opened": opened,
        },
    )

    body = response.content.decode()
    assert response.status_code == 422 and "a changé depuis" in body
    assert _is_a_page(body), body[:120]
    assert _edit_form_in(body) and "Le vélo est à la cave" in body


def test_a_refused_edit_through_htmx_still_answers_the_card_alone(staff_client):
    fact_store(key="velo", value="Le vélo est au garage", actor=Actor.USER)

    response = staff_client.post(
        EDIT_URL, {"value": "", "memory_type": "fact", "importance": "0.5"}, **HTMX
    )

    body = response.content.decode()
    assert response.status_code == 422
    assert not _is_a_page(body) and body.lstrip().startswith("<article")
