"""Management commands given wrong arguments answer a French CommandError, never a traceback."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db(transaction=True)


def _french_command_error(*args):
    try:
        call_command(*args)
    except CommandError as exc:
        return str(exc)
    except SystemExit as exc:
        raise AssertionError(f"{args}: SystemExit {exc}") from exc
    except Exception as exc:  # a traceback for the operator
        raise AssertionError(f"{args}: traceback {type(exc).__name__}: {exc}") from exc
    raise AssertionError(f"{args}: no error at all")


def test_export_into_a_directory_is_a_command_error(tmp_path):
    _french_command_error("memory_export", str(tmp_path))


def test_export_since_year_one_is_a_command_error(tmp_path):
    _french_command_error("memory_export", "--since", "0001-01-01", str(tmp_path / "x.jsonl"))


def test_backup_onto_an_existing_file_is_a_command_error(tmp_path):
    target = tmp_path / "file.txt"
    target.write_text("x")
    _french_command_error("memory_backup", str(target))


def test_backup_under_a_file_is_a_command_error(tmp_path):
    target = tmp_path / "file.txt"
    target.write_text("x")
    _french_command_error("memory_backup", str(target / "sub"))


def test_eval_with_a_non_utf8_dataset_is_a_command_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe\x00garbage")
    _french_command_error("memory_eval", "--dataset", str(bad))


def test_eval_with_a_dataset_of_the_wrong_shape_is_a_command_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('"just a string"')
    _french_command_error("memory_eval", "--dataset", str(bad))


def test_seed_self_error_message_has_no_format_escapes(tmp_path):
    bad = tmp_path / "seed.json"
    bad.write_text('"just a string"')
    message = _french_command_error("memory_seed_self", str(bad))
    assert "{{" not in message, f"raw format escape in the French message: {message!r}"


@pytest.mark.parametrize(
    "args, said",
    [
        (
            ("reindex", "--batch-size", "abc"),
            "option --batch-size : « abc » n'est pas un nombre entier.",
        ),
        (
            ("reindex", "--collection", "zz"),
            "option --collection : « zz » n'est pas un choix possible",
        ),
        (("benchmark", "retrieval", "--memories", "abc"), "option --memories : « abc » n'est pas"),
        (("benchmark", "nope"), "argument which : « nope » n'est pas un choix possible"),
        (("memory_import",), "arguments obligatoires manquants : file."),
        (("memory_stats", "--nope"), "arguments inconnus : --nope."),
        # QA: these two reached the operator in English.
        (
            ("memory_doctor", "--fix=yes"),
            "option --fix : elle ne prend pas de valeur (« yes » donné).",
        ),
        (("memory_stats", "--json=1"), "option --json : elle ne prend pas de valeur"),
        (
            ("memory_import", "--dry-run=1", "x.jsonl"),
            "option --dry-run : elle ne prend pas de valeur",
        ),
        (
            ("memory_stats", "--no"),
            "option --no ambiguë : elle peut désigner --no-color, --no-vectors.",
        ),
    ],
)
def test_argparse_refusals_are_said_in_french(args, said):
    message = _french_command_error(*args)

    assert message.startswith(said), message
    assert "Error" not in message and "invalid" not in message
    assert "ignored explicit argument" not in message and "ambiguous" not in message


def test_from_the_command_line_too(tmp_path):
    import subprocess
    import sys

    from tests.memory.test_workers import ROOT, _env

    done = subprocess.run(
        [sys.executable, "manage.py", "reindex", "--batch-size", "abc"],
        cwd=ROOT,
        env=_env(tmp_path / "data"),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 2
    assert (
        "reindex : erreur : option --batch-size : « abc » n'est pas un nombre entier."
        in done.stderr
    )
    assert "Traceback" not in done.stderr


ENGLISH_HELP = (
    "usage:",
    "positional arguments",
    "show this help message and exit",
    "Verbosity level",
    "Display a full stack trace",
    "Skip system checks",
    "Show program's version",
)


def _project_commands() -> list[tuple[str, str]]:
    from django.core.management import get_commands

    return sorted((name, app) for name, app in get_commands().items() if app in ("memory", "agent"))


@pytest.mark.parametrize(("name", "app"), _project_commands())
def test_every_commands_help_is_in_french(name, app):
    """An operator's first text is a command's --help: its sections and the options every
    command has were argparse's and Django's English (review)."""
    from django.core.management import load_command_class

    parsers = [load_command_class(app, name).create_parser("manage.py", name)]
    for parser in list(parsers):
        for action in parser._actions:
            if hasattr(action, "_name_parser_map"):
                parsers += list(action._name_parser_map.values())
    for parser in parsers:
        text = parser.format_help()
        assert not [words for words in ENGLISH_HELP if words in text], text
