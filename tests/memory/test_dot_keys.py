"""A fact key of « . » or « .. » (QA): browsers and HTTP clients remove such a path segment
(RFC 3986 dot-segments), so /memory/facts/../forget/ reached another URL and the owner could
neither forget, edit, erase nor read the history of the fact from /memory or by key on the
API. The one key rule refuses them, in French, on every writer; a row stored before the
rule is shown with a link to its admin page (addressed by id) instead of links that break."""

from __future__ import annotations

import html as html_lib
import json

import pytest
from django.core.exceptions import ValidationError

from memory.models import Fact, validate_fact_key
from memory.services.facts import fact_store
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db

DOTS_SAID = "n'être que « . » ou « .. »"


@pytest.mark.parametrize("key", [".", ".."])
def test_the_key_rule_refuses_a_dot_segment(key):
    with pytest.raises(ValidationError) as refused:
        validate_fact_key(key)
    assert DOTS_SAID in refused.value.messages[0]


@pytest.mark.parametrize("key", ["...", ".net", "v1.2", "a..b", ". .", "…"])
def test_a_key_with_dots_and_more_is_still_a_key(key):
    validate_fact_key(key)


@pytest.mark.parametrize("key", [".", ".."])
def test_the_agent_api_refuses_it_with_a_french_400(agent_api, key):
    response = agent_api.post("/api/v1/memory/facts", {"key": key, "value": "v"}, format="json")
    assert response.status_code == 400, response.content
    assert DOTS_SAID in response.json()["extra"]["fields"]["key"][0]
    assert not Fact.all_objects.exists()


@pytest.mark.parametrize("key", [".", ".."])
def test_the_memory_page_form_refuses_it_with_a_422(staff_client, key):
    response = staff_client.post(
        "/memory/facts/", {"key": key, "value": "v", "memory_type": "fact"}, **HTMX
    )
    assert response.status_code == 422
    assert DOTS_SAID in html_lib.unescape(response.content.decode())
    assert not Fact.all_objects.exists()


def test_a_row_stored_before_the_rule_links_to_its_admin_page_not_to_broken_urls(
    staff_client, admin_user
):
    fact, _ = fact_store(key="velo", value="un vélo bleu")
    Fact.all_objects.filter(pk=fact.pk).update(key="..")  # as stored before the rule
    html = staff_client.get("/memory/facts/", **HTMX).content.decode()
    assert f'id="fact-{fact.pk}"' in html
    assert "/memory/facts/../" not in html
    assert "Clé invalide" in html
    admin_url = f"/admin/memory/fact/{fact.pk}/change/"
    assert f'href="{admin_url}"' in html
    # The admin page, by id, is where the owner gives it a key that works.
    staff_client.force_login(admin_user)
    assert staff_client.get(admin_url).status_code == 200


def test_an_import_line_under_it_is_named_and_nothing_is_imported(tmp_path):
    from memory.services.portability_import import ImportLineError, memory_import_lines
    from tests.memory.services.test_portability import _valid_lines

    lines = _valid_lines(tmp_path)
    index = next(i for i, line in enumerate(lines) if '"key":"blessure_epaule"' in line)
    lines[index] = json.dumps(json.loads(lines[index]) | {"key": ".."})
    Fact.all_objects.all().delete()
    with pytest.raises(ImportLineError, match=rf"^ligne {index + 1} : champ « key » : La clé"):
        memory_import_lines(lines)
    assert not Fact.all_objects.exists()
