"""memory_import refuses a bad value with a French line error, never a traceback, and writes nothing."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.utils import timezone

from memory.models import Fact, MemorySettings, Message, Summary
from memory.services.search import DATE_RANGE_MESSAGE

pytestmark = pytest.mark.django_db

HEADER = {
    "format": "makilab-memory",
    "version": 1,
    "exported_at": "2026-01-01T00:00:00+00:00",
    "since": None,
}
# A valid line before the bad one: the import must roll it back.
GOOD = {
    "type": "message",
    "id": 1,
    "channel": "whatsapp",
    "role": "user",
    "author": "",
    "source": "user",
    "content": "Une ligne valide avant la mauvaise",
    "created_at": "2026-01-01T10:00:00+00:00",
    "compacted": False,
    "reply_to": None,
}
REVISION = {
    "actor": "user",
    "reason": "created",
    "old_value": "",
    "new_value": "Le vélo est gris",
    "changes": {},
    "note": "",
    "created_at": "2026-01-01T10:00:00+00:00",
}


def _fact(**over) -> dict:
    return {
        "type": "fact",
        "key": "velo",
        "value": "Le vélo est gris",
        "memory_type": "fact",
        "importance": 0.5,
        "subjects": [],
        "source": "manual",
        "channel": "",
        "expires_at": None,
        "created_at": "2026-01-01T10:00:00+00:00",
        "updated_at": "2026-01-01T10:00:00+00:00",
        "last_accessed_at": None,
        "access_count": 0,
        "owner_fields": [],
        "source_message": None,
        "revisions": [REVISION],
    } | over


def _message(**over) -> dict:
    return GOOD | {"id": 2, "content": "Bonjour le jardin"} | over


def _refused(tmp_path, line: str) -> str:
    """Import GOOD then ``line`` (raw JSON text): the French error, after checking nothing stayed."""
    path = tmp_path / "memoire.jsonl"
    path.write_text(
        "\n".join([json.dumps(HEADER), json.dumps(GOOD), line]) + "\n", encoding="utf-8"
    )
    with pytest.raises(CommandError) as caught:
        call_command("memory_import", str(path), stdout=StringIO(), stderr=StringIO())
    message = str(caught.value)
    assert message.startswith("Rien n'a été importé. ligne 3 : "), message
    assert not Message.all_objects.exists()
    assert not Fact.all_objects.exists()
    return message


@pytest.mark.parametrize(
    "record",
    [
        pytest.param(_fact(created_at="2026-13-45T10:00:00+00:00"), id="month-13"),
        pytest.param(_message(created_at="2026-02-30T10:00:00+00:00"), id="february-30"),
        pytest.param(
            _fact(revisions=[REVISION | {"created_at": "2026-01-01T25:00:00+00:00"}]),
            id="hour-25-in-a-revision",
        ),
        pytest.param(_message(created_at="2026-01-01T10:00:00+25:00"), id="offset-25-hours"),
    ],
)
def test_an_impossible_date_is_a_line_error(tmp_path, record):
    assert "date ISO 8601 attendue" in _refused(tmp_path, json.dumps(record))


@pytest.mark.parametrize(
    "record",
    [
        pytest.param(_message(created_at="0001-01-01T00:00:00+05:00"), id="year-1-with-offset"),
        pytest.param(_fact(expires_at="9999-12-31T23:00:00-05:00"), id="year-9999-with-offset"),
        pytest.param(_fact(expires_at="9999-12-31T23:30:00+00:00"), id="year-9999"),
        pytest.param(_fact(created_at="0999-12-31T10:00:00+00:00"), id="year-999"),
    ],
)
def test_a_date_outside_the_memorys_years_is_a_line_error(tmp_path, record):
    """The years the API and the search accept (DATE_YEARS), no other rule."""
    assert DATE_RANGE_MESSAGE in _refused(tmp_path, json.dumps(record))


def test_dates_at_the_edges_of_the_memorys_years_are_imported(tmp_path, owner_api, staff_client):
    """What the import takes, the owner's API and /memory page can show."""
    path = tmp_path / "memoire.jsonl"
    lines = [
        HEADER,
        GOOD | {"created_at": "1000-01-01T00:00:00+05:00"},
        _fact(expires_at="9998-12-31T23:30:00-05:00"),
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    call_command("memory_import", str(path), stdout=StringIO(), stderr=StringIO())
    assert Fact.objects.get(key="velo").expires_at.year == 9999  # in UTC
    assert owner_api.get("/api/memory/facts").status_code == 200
    assert staff_client.get("/memory/").status_code == 200


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(
            json.dumps(_fact()).replace('"importance": 0.5', '"importance": NaN'), id="nan"
        ),
        pytest.param(
            json.dumps(_fact()).replace('"importance": 0.5', '"importance": -Infinity'),
            id="infinity",
        ),
        pytest.param(
            json.dumps(_fact()).replace('"importance": 0.5', '"importance": 1e400'), id="1e400"
        ),
        pytest.param(
            json.dumps(_fact(revisions=[REVISION | {"changes": {"importance": [0.5, 1]}}])).replace(
                "[0.5, 1]", "[NaN, 1]"
            ),
            id="nan-in-revision-changes",
        ),
    ],
)
def test_a_number_json_does_not_have_is_a_line_error(tmp_path, line):
    assert "NaN" in line or "Infinity" in line or "1e400" in line
    _refused(tmp_path, line)


def test_a_nan_setting_is_a_line_error_and_the_settings_stay(tmp_path):
    _refused(tmp_path, '{"type": "settings", "min_score": NaN}')
    assert MemorySettings.load().min_score == MemorySettings().min_score


def test_an_importance_too_big_for_a_float_is_a_line_error(tmp_path):
    message = _refused(tmp_path, json.dumps(_fact(importance=10**400)))
    assert "champ « importance » : un nombre attendu." in message


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(json.dumps(_message(content="Bonjour \ud800")), id="message"),
        pytest.param(json.dumps(_fact(subjects=["jardin", "\udfff"])), id="fact-subjects"),
    ],
)
def test_a_lone_surrogate_is_a_line_error(tmp_path, line):
    assert "\\ud" in line  # json.dumps escapes it: the file itself is valid UTF-8
    _refused(tmp_path, line)


def test_an_emoji_written_as_a_surrogate_pair_is_imported(tmp_path):
    path = tmp_path / "memoire.jsonl"
    lines = [HEADER, GOOD | {"content": "Le vélo 🚲"}]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    assert "\\ud83d" in path.read_text(encoding="utf-8")
    call_command("memory_import", str(path), stdout=StringIO(), stderr=StringIO())
    assert Message.objects.get().content == "Le vélo 🚲"


def test_a_line_nested_too_deep_for_the_parser_is_a_line_error(tmp_path):
    _refused(tmp_path, "[" * 200_000 + "]" * 200_000)


def test_a_field_written_twice_is_a_line_error(tmp_path):
    line = json.dumps(_fact())[:-1] + ', "value": "Le vélo est rouge"}'
    assert "champ « value » écrit deux fois" in _refused(tmp_path, line)


@pytest.mark.parametrize(
    ("record", "error"),
    [
        pytest.param(
            {"max_results": True}, "« max_results » : un entier attendu", id="bool-for-int"
        ),
        pytest.param(
            {"max_results": 7.9}, "« max_results » : un entier attendu", id="float-for-int"
        ),
        pytest.param(
            {"auto_retrieve_enabled": "false"},
            "« auto_retrieve_enabled » : true ou false attendu",
            id="text-for-bool",
        ),
        pytest.param(
            {"min_score": "0.5"}, "« min_score » : un nombre attendu", id="text-for-float"
        ),
        pytest.param({"min_score": None}, "« min_score » : un nombre attendu", id="null"),
    ],
)
def test_a_setting_of_the_wrong_json_type_is_a_line_error(tmp_path, record, error):
    before = MemorySettings.load()
    assert error in _refused(tmp_path, json.dumps({"type": "settings", **record}))
    after = MemorySettings.load()
    assert (after.max_results, after.auto_retrieve_enabled, after.min_score) == (
        before.max_results,
        before.auto_retrieve_enabled,
        before.min_score,
    )


def test_settings_of_the_right_json_types_are_imported(tmp_path):
    """An int for a float knob is a number; the line may name only some knobs."""
    path = tmp_path / "memoire.jsonl"
    settings = {"type": "settings", "max_results": 7, "search_min_score": 1}
    path.write_text(json.dumps(HEADER) + "\n" + json.dumps(settings) + "\n", encoding="utf-8")
    call_command("memory_import", str(path), stdout=StringIO(), stderr=StringIO())
    row = MemorySettings.load()
    assert (row.max_results, row.search_min_score) == (7, 1.0)


# QA: what every other writer refuses, or no history of this memory can hold, was imported.
FUTURE = "2090-01-01T00:00:00+00:00"
SUMMARY = {
    "type": "summary",
    "channel": "whatsapp",
    "content": "Le propriétaire a parlé de son vélo.",
    "message_count": 2,
    "period_start": "2026-01-01T10:00:00+00:00",
    "period_end": "2026-01-01T10:05:00+00:00",
    "created_at": "2026-01-01T11:00:00+00:00",
}


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        # A date in the future, as the API refuses a message's (past its clock's tolerance).
        (_message(created_at=FUTURE), "champ « created_at » : la date est dans le futur"),
        (
            _message(observed=True, digested_at=FUTURE),
            "champ « digested_at » : la date est dans le futur",
        ),
        (_fact(created_at=FUTURE, updated_at=FUTURE), "« created_at » : la date est dans le futur"),
        (_fact(last_accessed_at=FUTURE), "« last_accessed_at » : la date est dans le futur"),
        (SUMMARY | {"created_at": FUTURE}, "« created_at » : la date est dans le futur"),
        (
            SUMMARY | {"period_end": FUTURE},
            "champ « period_end » : la date est dans le futur",
        ),
        (
            _fact(revisions=[REVISION | {"created_at": FUTURE}]),
            "révision 1, champ « created_at » : la date est dans le futur",
        ),
        # Dates in an order no history holds.
        (
            _fact(revisions=[REVISION | {"created_at": "2001-01-01T00:00:00+00:00"}]),
            "révision 1, champ « created_at » : la date précède celle du fait",
        ),
        (
            _message(observed=True, digested_at="2025-12-31T10:00:00+00:00"),
            "champ « digested_at » : la date précède celle de « created_at »",
        ),
        # Blank, or longer than the API takes.
        (_fact(value="   "), "champ « value » : La valeur d'un fait ne peut pas être vide"),
        (SUMMARY | {"content": " \n "}, "champ « content » : le résumé est vide"),
        (
            _message(content="mot " * 250_001),
            "champ « content » : un message est limité à 1\u202f000\u202f000 caractères "
            "(celui-ci en a 1\u202f000\u202f004)",
        ),
        (_fact(owner_fields=["value", "bogus"]), "« owner_fields » : « bogus » n'est pas un champ"),
        (
            _message(channel="sms", role="assistant", source="agent", reply_to=1),
            "champ « reply_to » : le message 1 est d'un autre canal",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 30 else None,
)
def test_a_line_no_other_writer_would_store_is_refused(tmp_path, record, expected):
    message = _refused(tmp_path, json.dumps(record))
    assert expected in message, message
    assert not Summary.all_objects.exists()


def test_a_clock_a_little_ahead_is_not_the_future(tmp_path):
    """An export from a machine whose clock runs a minute ahead still imports (the API's
    tolerance, messages.FUTURE_TOLERANCE)."""
    soon = (timezone.now() + timedelta(minutes=1)).isoformat()
    path = tmp_path / "memoire.jsonl"
    revision = REVISION | {"created_at": soon}
    fact = _fact(created_at=soon, updated_at=soon, revisions=[revision])
    lines = [HEADER, GOOD, _message(created_at=soon), fact]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    call_command("memory_import", str(path), stdout=StringIO(), stderr=StringIO())
    assert Message.objects.count() == 2 and Fact.objects.count() == 1


def test_a_blank_fact_value_is_refused_everywhere_the_model_is_checked():
    """The one rule of a fact's value (rules.validate_fact_value): the admin and the
    import check it through the model."""
    with pytest.raises(ValidationError, match="ne peut pas être vide"):
        Fact(key="velo", value=" \t ").full_clean()


def test_an_export_of_a_message_dated_a_little_ahead_and_digested_at_once_imports(
    tmp_path, agent_api
):
    """A room's message the API took from a clock four minutes ahead (within its tolerance),
    digested a minute later: its export is this memory's own history, imported back."""
    from memory.services.channels import channel_settings_set

    channel_settings_set(channel="salon", observed=True)
    ahead = (timezone.now() + timedelta(minutes=4)).isoformat()
    answer = agent_api.post(
        "/api/v1/memory/messages",
        {"channel": "salon", "author": "Paul", "content": "Noël chez mamie", "timestamp": ahead},
        format="json",
    )
    assert answer.status_code in (200, 201), answer.content
    Message.objects.filter(channel="salon").update(digested_at=timezone.now())
    path = tmp_path / "export.jsonl"
    call_command("memory_export", str(path), stdout=StringIO())
    Message.all_objects.all().delete()
    call_command("memory_import", str(path), stdout=StringIO(), stderr=StringIO())
    assert Message.all_objects.get().content == "Noël chez mamie"


def _refused_file(tmp_path, records: list[dict]) -> str:
    """Import ``records`` (the header first): the French error, after checking nothing stayed."""
    path = tmp_path / "memoire.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    before = MemorySettings.load().max_results
    with pytest.raises(CommandError) as caught:
        call_command("memory_import", str(path), stdout=StringIO(), stderr=StringIO())
    assert not Message.all_objects.exists()
    assert MemorySettings.load().max_results == before
    return str(caught.value)


IN_A_YEAR = (timezone.now() + timedelta(days=365)).isoformat()


@pytest.mark.parametrize(
    ("header", "said"),
    [
        (HEADER | {"since": "hier"}, "ligne 1 : champ « since » : date ISO 8601 attendue."),
        (HEADER | {"exported_at": 5}, "ligne 1 : champ « exported_at » : date ISO 8601 attendue."),
        (
            HEADER | {"exported_at": None, "since": IN_A_YEAR},
            "ligne 1 : champ « since » : la date est dans le futur.",
        ),
        (
            HEADER | {"since": "2026-06-01T00:00:00+00:00"},
            "ligne 1 : champ « exported_at » : la date précède celle de « since ».",
        ),
    ],
    ids=["since-words", "exported-at-number", "since-future", "since-after-export"],
)
def test_a_header_whose_dates_no_export_writes_is_refused(tmp_path, header, said):
    """QA: the header's « since » and « exported_at » were never read: any value passed."""
    message = _refused_file(tmp_path, [header, GOOD])
    assert message == "Rien n'a été importé. " + said, message


@pytest.mark.parametrize(
    ("first", "second", "said"),
    [
        (
            {"type": "settings", "max_results": 3},
            {"type": "settings", "max_results": 9},
            "ligne 4 : une seule ligne « settings » par fichier (la première : ligne 3).",
        ),
        (
            {"type": "channel", "channel": "lobby", "observed": True},
            {"type": "channel", "channel": "lobby", "observed": False},
            "ligne 4 : le canal « lobby » apparaît deux fois dans le fichier (la première : "
            "ligne 3).",
        ),
    ],
    ids=["settings", "channel"],
)
def test_a_setting_given_twice_is_refused_not_applied_twice(tmp_path, first, second, said):
    """QA: two settings lines were both applied, the last one winning, and the report
    listed the knob twice: a file no export writes, refused as two facts of one key are."""
    message = _refused_file(tmp_path, [HEADER, GOOD, first, second])
    assert message == "Rien n'a été importé. " + said, message
