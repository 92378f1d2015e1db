"""More operator commands given bad input: a French CommandError, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.memory.test_workers import ROOT, _env


def _french_command_error(*args) -> str:
    try:
        call_command(*args, stdout=StringIO(), stderr=StringIO())
    except CommandError as exc:
        return str(exc)
    except SystemExit as exc:
        raise AssertionError(f"{args}: SystemExit {exc}") from exc
    except BaseException as exc:  # a traceback for the operator (RecursionError included)
        raise AssertionError(f"{args}: traceback {type(exc).__name__}: {str(exc)[:200]}") from exc
    raise AssertionError(f"{args}: no error at all")


# memory_seed_self


@pytest.mark.django_db(transaction=True)
def test_seed_self_json_list_nested_too_deep_is_a_command_error(tmp_path):
    """A JSON list nested deeper than the parser's recursion: refused like any bad JSON."""
    seed = tmp_path / "seed.json"
    seed.write_text("[" * 100_000 + "]" * 100_000)

    message = _french_command_error("memory_seed_self", str(seed))

    assert message == "Rien n'a été chargé. fichier : JSON invalide (imbrication trop profonde)"


@pytest.mark.django_db(transaction=True)
def test_seed_self_jsonl_line_nested_too_deep_is_a_command_error(tmp_path):
    """A JSONL line nested too deep: the error names the line."""
    seed = tmp_path / "seed.jsonl"
    good = {"kind": "self", "category": "valeur", "content": "Je suis curieux"}
    seed.write_text(json.dumps(good) + "\n" + '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}\n")

    message = _french_command_error("memory_seed_self", str(seed))

    assert message == "Rien n'a été chargé. ligne 2 : JSON invalide (imbrication trop profonde)"


@pytest.mark.django_db(transaction=True)
def test_seed_self_with_a_lone_surrogate_is_a_command_error(tmp_path):
    seed = tmp_path / "seed.jsonl"
    seed.write_text(
        '{"kind": "self", "category": "valeur", "content": "Je suis \\ud800 curieux"}\n'
    )
    assert "ligne 1" in _french_command_error("memory_seed_self", str(seed))


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "command, name, content",
    [
        ("memory_seed_self", "seed.json", b""),
        ("memory_seed_self", "seed.json", b"\xff\xfe garbage"),
        ("memory_import", "vide.jsonl", b""),
        ("memory_import", "bad.jsonl", b"\xff\xfe garbage\n"),
    ],
    ids=["seed-empty", "seed-non-utf8", "import-empty", "import-non-utf8"],
)
def test_an_empty_or_non_utf8_file_is_a_command_error(tmp_path, command, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    _french_command_error(command, str(path))


# memory_import, memory_export, memory_backup


@pytest.mark.django_db(transaction=True)
def test_import_a_directory_is_a_command_error(tmp_path):
    _french_command_error("memory_import", str(tmp_path))


@pytest.mark.django_db(transaction=True)
def test_export_onto_a_full_disk_is_a_command_error():
    message = _french_command_error("memory_export", "/dev/full")
    assert message.startswith("Impossible d'écrire l'export dans /dev/full : ")


@pytest.mark.django_db(transaction=True)
def test_export_since_garbage_is_a_command_error(tmp_path):
    _french_command_error("memory_export", "--since", "demain", str(tmp_path / "x.jsonl"))


@pytest.mark.django_db(transaction=True)
def test_backup_into_proc_is_a_command_error():
    _french_command_error("memory_backup", "/proc/makilab-backup")


# memory_restore


@pytest.mark.django_db(transaction=True)
def test_restore_from_a_file_is_a_command_error(tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("x")
    _french_command_error("memory_restore", str(f))


@pytest.mark.django_db(transaction=True)
def test_restore_with_a_non_utf8_manifest_is_a_command_error(tmp_path):
    (tmp_path / "backup.json").write_bytes(b"\xff\xfe")
    _french_command_error("memory_restore", str(tmp_path))


@pytest.mark.django_db(transaction=True)
def test_restore_with_a_manifest_naming_a_directory_is_a_command_error(tmp_path):
    (tmp_path / "sub").mkdir()
    manifest = {"format": "makilab-memory-backup", "counts": {}, "database": "sub"}
    (tmp_path / "backup.json").write_text(json.dumps(manifest))
    _french_command_error("memory_restore", str(tmp_path))


@pytest.mark.django_db(transaction=True)
def test_restore_with_a_non_sqlite_database_is_a_command_error(tmp_path):
    (tmp_path / "makilab.sqlite3").write_bytes(b"not a database at all" * 100)
    manifest = {"format": "makilab-memory-backup", "counts": {}}
    (tmp_path / "backup.json").write_text(json.dumps(manifest))
    _french_command_error("memory_restore", str(tmp_path))


@pytest.mark.django_db(transaction=True)
def test_restore_with_counts_that_are_not_numbers_is_a_command_error(tmp_path):
    (tmp_path / "makilab.sqlite3").write_bytes(b"")
    manifest = {"format": "makilab-memory-backup", "counts": []}
    (tmp_path / "backup.json").write_text(json.dumps(manifest))
    _french_command_error("memory_restore", str(tmp_path))


# serve (a subprocess: waitress and the lock are real)


def _manage(data, *args, timeout=120):
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=_env(data),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    assert _manage(folder, "migrate", "--verbosity", "0").returncode == 0
    return folder


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--port", "-5"), "Port invalide : -5 (un nombre de 1 à 65535 est attendu"),
        (("--port", "0"), "Port invalide : 0 (un nombre de 1 à 65535 est attendu"),
        (("--port", "70000"), "Port invalide : 70000 (un nombre de 1 à 65535 est attendu"),
        (("--threads", "0"), "Nombre de threads invalide : 0 (au moins 1"),
        (("--threads", "-1"), "Nombre de threads invalide : -1 (au moins 1"),
        (
            ("--host", "nonexistent.invalid", "--port", "8765"),
            "Impossible d'écouter sur nonexistent.invalid:8765 : hôte ou port invalide",
        ),
    ],
)
def test_serve_with_an_unusable_port_host_or_thread_count_says_so_in_french(data, args, said):
    """serve refuses before serving anything: one French line, a non-zero exit, no traceback."""
    done = _manage(data, "serve", "--no-migrate", "--worker", "no", *args, timeout=60)

    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr[-300:]
    assert f"CommandError: {said}" in done.stderr, done.stderr[-300:]
    assert "Makilab Memory sur" not in done.stdout
