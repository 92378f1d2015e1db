"""The system's, the json module's and SQLite's refusals, said in French."""

from __future__ import annotations

import errno
import json
import sqlite3
import sys

import pytest

from memory.error_reasons import (
    REASON_JSON_ERROR,
    json_error_reason,
    json_int,
    os_error_reason,
    sqlite_error_reason,
)


def _decode_error(text: str) -> json.JSONDecodeError:
    with pytest.raises(json.JSONDecodeError) as refused:
        json.loads(text)
    return refused.value


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "colonne 1 : valeur attendue"),
        ('{"a": }', "colonne 7 : valeur attendue"),
        ("{a: 1}", "colonne 2 : nom de champ entre guillemets attendu"),
        ('{"a" 1}', "colonne 6 : « : » attendu"),
        ('{"a": 1 "b": 2}', "colonne 9 : « , » attendu"),
        ("[1 2]", "colonne 4 : « , » attendu"),
        ('{"a": "oui', "colonne 7 : chaîne non terminée"),
        ('"a\tb"', "colonne 3 : caractère de contrôle dans une chaîne"),
        ('"\\x"', "colonne 2 : séquence d'échappement invalide"),
        ('"\\u12"', "colonne 3 : séquence \\uXXXX invalide"),
        ("{} {}", "colonne 4 : texte en trop après la valeur"),
        ("\ufeff{}", "colonne 1 : marque d'ordre des octets (BOM) inattendue"),
    ],
)
def test_each_json_refusal_says_where_and_why_in_french(text, reason):
    assert json_error_reason(_decode_error(text)) == reason


def test_a_json_refusal_can_name_the_line_of_a_text_of_several():
    error = _decode_error('{\n  "a": 1,\n  "b" 2\n}')

    assert json_error_reason(error, line=True) == "ligne 3, colonne 7 : « : » attendu"


def test_a_json_message_not_known_yet_gets_french_words_not_the_english_ones():
    error = json.JSONDecodeError("Some future complaint", "{}", 1)

    assert json_error_reason(error) == f"colonne 2 : {REASON_JSON_ERROR}"


def test_a_number_too_long_for_int_is_refused_in_french():
    limit = sys.get_int_max_str_digits()

    assert json.loads("-" + "9" * limit, parse_int=json_int) == -int("9" * limit)
    with pytest.raises(ValueError, match=rf"^nombre trop long : {limit} chiffres au plus$"):
        json.loads("9" * (limit + 1), parse_int=json_int)


@pytest.mark.parametrize(
    "exc, reason",
    [
        (PermissionError(errno.EACCES, "Permission denied"), "accès refusé"),
        (FileExistsError(errno.EEXIST, "File exists"), "un fichier existe déjà à cet endroit"),
        (
            NotADirectoryError(errno.ENOTDIR, "Not a directory"),
            "un élément du chemin n'est pas un dossier",
        ),
        (OSError(errno.ENOSPC, "No space left on device"), "disque plein"),
        (TimeoutError("timed out"), "délai dépassé"),
        (ConnectionResetError(), "connexion coupée"),
        (OSError(errno.EDOM, "Math argument"), f"erreur système n° {errno.EDOM}"),
        (OSError("no number at all"), "erreur système n° ?"),
    ],
)
def test_an_os_error_is_said_in_french(exc, reason):
    assert os_error_reason(exc) == reason


def test_sqlite_refusals_are_said_in_french(tmp_path):
    with pytest.raises(sqlite3.Error) as cannot_open:
        sqlite3.connect(tmp_path / "absent" / "base.sqlite3")
    not_a_database = tmp_path / "texte.sqlite3"
    not_a_database.write_bytes(b"pas une base SQLite du tout" * 100)
    with pytest.raises(sqlite3.Error) as not_sqlite:
        sqlite3.connect(not_a_database).execute("SELECT * FROM sqlite_master").fetchall()

    assert sqlite_error_reason(cannot_open.value) == "impossible d'ouvrir ou de créer le fichier"
    assert sqlite_error_reason(not_sqlite.value) == "ce n'est pas une base SQLite"


def test_a_sqlite_refusal_without_french_words_names_its_code_not_its_english_text():
    unknown = sqlite3.OperationalError("too many SQL variables")
    unknown.sqlite_errorcode, unknown.sqlite_errorname = sqlite3.SQLITE_RANGE, "SQLITE_RANGE"

    assert sqlite_error_reason(unknown) == "erreur SQLite SQLITE_RANGE"
    assert sqlite_error_reason(sqlite3.OperationalError("raised by hand")) == (
        "erreur SQLite OperationalError"
    )
