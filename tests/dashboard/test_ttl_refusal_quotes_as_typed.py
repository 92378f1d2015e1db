"""QA: the TTL refusal on /memory shows the typed value as a Python repr.

Adding (or editing) a fact with an invalid « Durée de vie » answers, next to the
field, « Durée de vie invalide : 'zz'. … » — the value in Python's repr quotes —
and for a value holding an apostrophe or a backslash, « "1\\\\d l'an" »: double
quotes and a doubled backslash the owner never typed (memory/services/ttl.py formats
it with ``{value!r}``). Every other message of the page quotes the owner's words
in « … ».
"""

import html

import pytest

from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_llm(settings):
    settings.ANTHROPIC_API_KEY = ""


def _visible(response) -> str:
    return html.unescape(response.content.decode())


def test_an_invalid_ttl_is_quoted_as_typed_not_as_a_python_repr(staff_client):
    response = staff_client.post(
        "/memory/facts/", {"key": "essai_ttl", "value": "valeur", "ttl": "1\\d l'an"}, **HTMX
    )

    assert response.status_code == 422
    text = _visible(response)
    assert "Durée de vie invalide" in text
    assert "\\\\d" not in text  # the doubled backslash of repr()
    assert "« 1\\d l'an »" in text


def test_a_plain_invalid_ttl_is_quoted_in_french_quotes(staff_client):
    response = staff_client.post(
        "/memory/facts/", {"key": "essai_ttl", "value": "valeur", "ttl": "zz"}, **HTMX
    )

    assert response.status_code == 422
    text = _visible(response)
    assert "'zz'" not in text
    assert "« zz »" in text
