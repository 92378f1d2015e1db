"""A form body or a query string that is not UTF-8 is a French 400, before any view runs.

Django decodes such bytes with replacement characters: without this check, a
fact would be stored under the key "��" (makilab/request_encoding.py).
"""

from __future__ import annotations

import html

import pytest
from rest_framework.authtoken.models import Token

from makilab.request_encoding import FORM_BAD_ENCODING_MESSAGE, QUERY_BAD_ENCODING_MESSAGE
from memory.models import Fact
from memory.services.facts import fact_store
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db

FORM = "application/x-www-form-urlencoded"
BAD_FACT = b"key=%ff%fe&value=%ff&importance=0.5&memory_type=fact"
FORM_MESSAGE = FORM_BAD_ENCODING_MESSAGE.format(encoding="utf-8")
QUERY_MESSAGE = QUERY_BAD_ENCODING_MESSAGE.format(encoding="utf-8")


def _text(response) -> str:
    return html.unescape(response.content.decode())


def test_a_fact_posted_with_a_non_utf8_key_is_refused_and_not_stored(staff_client):
    response = staff_client.post("/memory/facts/", BAD_FACT, content_type=FORM, **HTMX)
    assert response.status_code == 400
    assert FORM_MESSAGE in _text(response)
    assert response["Content-Type"].startswith("text/html")
    assert not Fact.objects.exists()


def test_the_htmx_answer_is_a_short_fragment_not_a_page(staff_client):
    response = staff_client.post("/memory/facts/", BAD_FACT, content_type=FORM, **HTMX)
    fragment = response.content.decode()
    assert "<html" not in fragment
    assert len(fragment) < 300


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/memory/facts/cle/edit/", b"value=%ff&importance=0.5&memory_type=fact"),
        ("/memory/self/", b"category=context&content=%c3"),
        ("/memory/notes/add/", b"path=%ff.md"),
        ("/chat/send/", b"message=bonjour%e9"),
    ],
)
def test_every_form_of_the_pages_refuses_a_non_utf8_body(staff_client, path, body):
    fact_store(key="cle", value="valeur")
    response = staff_client.post(path, body, content_type=FORM, **HTMX)
    assert response.status_code == 400
    assert FORM_MESSAGE in _text(response)
    assert Fact.objects.get(key="cle").value == "valeur"


def test_a_page_answers_the_french_400_page(staff_client):
    response = staff_client.post("/memory/facts/", BAD_FACT, content_type=FORM)
    assert response.status_code == 400
    page = response.content.decode()
    assert '<html lang="fr">' in page and "Requête invalide" in page
    assert FORM_MESSAGE in html.unescape(page)


def test_a_query_string_that_is_not_utf8_is_refused(staff_client):
    response = staff_client.get("/memory/search/?q=%ff%fe")
    assert response.status_code == 400
    assert QUERY_MESSAGE in _text(response)


def test_utf8_accents_in_a_form_and_a_query_string_are_accepted(staff_client):
    body = "key=caf%C3%A9&value=cr%C3%A8me+br%C3%BBl%C3%A9e&importance=0.5&memory_type=fact"
    response = staff_client.post("/memory/facts/?vue=d%C3%A9tail", body, content_type=FORM, **HTMX)
    assert response.status_code == 200
    assert Fact.objects.get(key="café").value == "crème brûlée"


def test_a_multipart_form_still_works(staff_client):
    response = staff_client.post(
        "/memory/facts/",
        {"key": "k", "value": "é", "importance": "0.5", "memory_type": "fact"},
        **HTMX,
    )
    assert response.status_code == 200
    assert Fact.objects.get(key="k").value == "é"


def test_the_api_refuses_a_non_utf8_form_body_in_its_json_shape(client, django_user_model):
    agent = django_user_model.objects.create_user(username="agent", password=None)
    token = Token.objects.create(user=agent).key
    response = client.post(
        "/api/v1/memory/facts",
        BAD_FACT,
        content_type=FORM,
        HTTP_AUTHORIZATION=f"Token {token}",
    )
    assert response.status_code == 400
    assert response.json() == {"message": FORM_MESSAGE, "extra": {}}
    assert not Fact.objects.exists()


@pytest.mark.parametrize("path", ["/chat/send/", "/memory/facts/"])
def test_a_form_body_over_the_limit_is_said_too_large_in_a_short_fragment(
    staff_client, settings, path
):
    """QA: a chat message over 1 MB got Django's generic 400 page, which the htmx error
    popup could not read (« Le serveur a répondu une erreur (400). Réessayez »): trying
    again could only fail the same way."""
    from makilab.request_encoding import FORM_TOO_LARGE_MESSAGE

    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    body = "message=" + "a" * 20_000 + "&key=k&value=v"

    response = staff_client.post(path, body, content_type=FORM, **HTMX)

    assert response.status_code == 400
    assert len(response.content) < 500  # dashboard.js shows a short fragment's text
    assert FORM_TOO_LARGE_MESSAGE.format(limit="10\u202f000") in _text(response)
    assert not Fact.objects.exists()


def test_too_many_form_fields_is_said_in_a_short_fragment(staff_client):
    """QA: Django's generic 400 page (and an ERROR traceback) for more fields than
    DATA_UPLOAD_MAX_NUMBER_FIELDS."""
    from makilab.request_encoding import FORM_TOO_MANY_MESSAGE

    body = "key=k&value=v&" + "&".join(f"a{i}=1" for i in range(1100))

    response = staff_client.post("/memory/facts/", body, content_type=FORM, **HTMX)

    assert response.status_code == 400
    assert len(response.content) < 500
    assert FORM_TOO_MANY_MESSAGE.format(limit="1\u202f000") in _text(response)
    assert not Fact.objects.exists()


def test_too_many_query_parameters_is_the_french_400_page(staff_client):
    from makilab.request_encoding import QUERY_TOO_MANY_MESSAGE

    query = "&".join(f"a{i}=1" for i in range(1100))

    response = staff_client.get("/memory/search/?" + query)

    assert response.status_code == 400
    page = _text(response)
    assert '<html lang="fr">' in page
    assert QUERY_TOO_MANY_MESSAGE.format(limit="1\u202f000") in page
