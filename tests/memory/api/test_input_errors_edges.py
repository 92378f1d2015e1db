"""Bad input at the edges: a body that is not JSON says what is wrong and where, in French;
a date is within the memory's years in UTC, the time zone the memory stores; too many
query parameters or form fields is said so. Never a 500."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from makilab.request_encoding import FORM_TOO_MANY_MESSAGE, QUERY_TOO_MANY_MESSAGE
from memory.error_reasons import REASON_JSON_ERROR, json_error_what
from memory.models import Fact, Message
from memory.models.rules import french_number
from memory.services.search import DATE_EDGES, DATE_RANGE_UTC_MESSAGE

pytestmark = pytest.mark.django_db

FACTS = "/api/memory/facts"
MESSAGES = "/api/memory/messages"
SEARCH = "/api/memory/search"
EXPORT = "/api/memory/export"


@pytest.fixture
def api(staff_user):
    """The owner's token, and a 500 answered as the client sees it (not raised)."""
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=staff_user).key}")
    return client


def _post_raw(api, body: str | bytes, url: str = FACTS):
    return api.generic("POST", url, body, content_type="application/json")


# --- Malformed JSON bodies -----------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "reason", "line", "column"),
    [
        ('{"channel": "x", ', "texte incomplet", 1, 18),
        ('{"key": "a", "value": "b",}', "virgule en trop avant « } »", 1, 27),
        ('{"key": "a", "subjects": ["x",]}', "virgule en trop avant « ] »", 1, 31),
        ('{"key": "a" "value": "b"}', "« , » attendu", 1, 13),
        ('{"key": "a",\n "value": }', "valeur attendue", 2, 11),
        ('{"key" "a"}', "« : » attendu", 1, 8),
        ("{key: 1}", "nom de champ entre guillemets attendu", 1, 2),
        ('{"key": "a', "chaîne non terminée", 1, 9),
        ('{"key": "a\tb"}', "caractère de contrôle dans une chaîne", 1, 11),
        ('{"key": "a\\qb"}', "séquence d'échappement invalide", 1, 11),
        ('{"key": "a"} {}', "texte en trop après la valeur", 1, 14),
        ('\ufeff{"key": "a"}', "marque d'ordre des octets (BOM) inattendue", 1, 1),
    ],
    ids=[
        "truncated",
        "trailing-comma-object",
        "trailing-comma-list",
        "missing-comma",
        "missing-value",
        "missing-colon",
        "unquoted-name",
        "unterminated-string",
        "control-character",
        "bad-escape",
        "extra-data",
        "byte-order-mark",
    ],
)
def test_a_malformed_json_body_says_what_is_wrong_and_where(api, body, reason, line, column):
    response = _post_raw(api, body)

    assert response.status_code == 400, response.content
    message = f"Corps JSON invalide : {reason} (ligne {line}, colonne {column})."
    assert response.json() == {"message": message, "extra": {}}
    assert not Fact.objects.exists()


@pytest.mark.parametrize(
    ("body", "line", "column"),
    [(b'{"key": "\xff"}', 1, 10), (b'{"key": "\xc3\xa9t\xc3\xa9",\n "value": "\xe9"}', 2, 12)],
    ids=["first-line", "after-accents"],
)
def test_a_body_not_in_utf8_says_where_the_bad_byte_is(api, body, line, column):
    response = _post_raw(api, body)

    assert response.status_code == 400, response.content
    message = f"Corps JSON invalide : le texte n'est pas en utf-8 (ligne {line}, colonne {column})."
    assert response.json() == {"message": message, "extra": {}}


ENGLISH_WORDS = ("Expecting", "delimiter", "Unterminated", "Extra data", "Invalid", "char ")


@pytest.mark.parametrize(
    "body",
    ["{", "[1,,2]", '{"a": tru}', '{"a": "\\u12"}', "{}}", '{"a": 1 2}', "nul", '"\x00"', "[1 2]"],
)
def test_no_malformed_body_echoes_the_json_modules_english(api, body):
    response = _post_raw(api, body)

    assert response.status_code == 400, response.content
    message = response.json()["message"]
    assert message.startswith("Corps JSON invalide : ")
    assert " (ligne 1, colonne " in message
    assert not any(word in message for word in ENGLISH_WORDS), message


def test_an_unknown_json_error_gets_the_generic_french_reason():
    error = json.JSONDecodeError("Some future complaint", '{"a": 1}', 3)

    assert json_error_what(error) == REASON_JSON_ERROR


# --- Dates at the edges of the memory's years -------------------------------------------

# In range in their own offset (or, for a plain date, in the local time zone), out of it
# in UTC: 1000-01-01 at midnight in Paris is 0999-12-31 23:50:39 in UTC (the zone's LMT).
OUT_IN_UTC = [
    "1000-01-01T00:30:00+05:00",
    "1000-01-01T04:59:59+05:00",
    "1000-01-01",
    "1000-01-01T00:00:00",
]
# Out of range in any offset, or past the calendar once moved to UTC.
OUT_ANYWAY = [
    "9999-12-31T23:30:00-05:00",
    "0001-01-01T00:30:00+05:00",
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59.999999-14:00",
    "0001-01-01",
    "9999-12-31",
]


@pytest.mark.parametrize("timestamp", OUT_IN_UTC + OUT_ANYWAY)
def test_a_message_dated_out_of_the_years_in_utc_is_a_french_400(api, timestamp):
    response = api.post(
        MESSAGES,
        {"channel": "whatsapp", "role": "user", "content": "x", "timestamp": timestamp},
        format="json",
    )

    assert response.status_code == 400, response.content
    assert response.json()["extra"]["fields"] == {"timestamp": [DATE_RANGE_UTC_MESSAGE]}
    assert not Message.objects.exists()


def test_a_message_dated_at_the_first_moment_of_the_years_in_utc_is_taken(api):
    response = api.post(
        MESSAGES,
        {
            "channel": "whatsapp",
            "role": "user",
            "content": "x",
            "timestamp": "1000-01-01T05:00:00+05:00",
        },
        format="json",
    )

    assert response.status_code == 201, response.content
    assert Message.objects.get().created_at == DATE_EDGES[0]


@pytest.mark.parametrize("edge", [*OUT_IN_UTC, *OUT_ANYWAY, "9998-12-31T23:30:00-05:00"])
@pytest.mark.parametrize("param", ["since", "until"])
def test_a_search_between_dates_out_of_the_years_in_utc_is_a_french_400(api, param, edge):
    response = api.get(SEARCH, {"q": "vélo", "mode": "text", param: edge})

    assert response.status_code == 400, response.content
    (said,) = response.json()["extra"]["fields"][param]
    assert said.startswith("Date hors de l'intervalle accepté")


@pytest.mark.parametrize("edge", [*OUT_IN_UTC, *OUT_ANYWAY, "9998-12-31T23:30:00-05:00"])
def test_no_endpoint_taking_a_date_answers_500_at_the_calendars_edges(api, edge):
    answers = [
        api.post(
            MESSAGES,
            {"channel": "whatsapp", "role": "user", "content": "x", "timestamp": edge},
            format="json",
        ),
        api.get(SEARCH, {"q": "vélo", "mode": "text", "since": edge}),
        api.get(SEARCH, {"q": "vélo", "mode": "text", "until": edge}),
        api.get(EXPORT, {"since": edge}),
    ]

    assert [r.status_code < 500 for r in answers] == [True] * len(answers)


# --- More fields than DATA_UPLOAD_MAX_NUMBER_FIELDS ------------------------------------

MANY_FIELDS = "&".join(f"a{i}=1" for i in range(1100))


def test_too_many_query_parameters_is_the_apis_french_400(staff_client):
    """QA: Django's generic HTML 400 page and an ERROR traceback in the log."""
    response = staff_client.get(f"{FACTS}?{MANY_FIELDS}")

    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    limit = french_number(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS)
    assert response.json() == {"message": QUERY_TOO_MANY_MESSAGE.format(limit=limit), "extra": {}}


def test_too_many_form_fields_is_the_apis_french_400(staff_client):
    response = staff_client.post(
        MESSAGES, data=MANY_FIELDS, content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    limit = french_number(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS)
    assert response.json() == {"message": FORM_TOO_MANY_MESSAGE.format(limit=limit), "extra": {}}
    assert not Message.objects.exists()
