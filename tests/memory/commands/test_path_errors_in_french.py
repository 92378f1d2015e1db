"""A file where a folder is expected, a folder where a file is, a path the system refuses:
the commands say so in French (the system's own text is English), without a traceback."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.memory.test_workers import ROOT, _env

pytestmark = pytest.mark.django_db

ENGLISH = ("Errno", "File exists", "Not a directory", "Is a directory", "denied", "unable")


def _refusal(*args) -> str:
    with pytest.raises(CommandError) as refused:
        call_command(*args, stdout=StringIO(), stderr=StringIO())
    message = str(refused.value)
    assert not any(word in message for word in ENGLISH), message
    return message


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "memoire.jsonl"
    path.write_text("pas un dossier\n", encoding="utf-8")
    return path


def test_a_backup_onto_an_existing_file_says_a_folder_is_expected(a_file):
    message = _refusal("memory_backup", str(a_file))

    assert message == (
        f"{a_file} est un fichier, pas un dossier : la sauvegarde s'écrit dans un dossier "
        "nouveau ou vide."
    )
    assert a_file.read_text(encoding="utf-8") == "pas un dossier\n"


def test_a_backup_under_a_file_says_the_path_goes_through_a_file(a_file):
    message = _refusal("memory_backup", str(a_file / "sauvegarde"))

    assert message == (
        f"Impossible de créer le dossier de sauvegarde {a_file / 'sauvegarde'} : "
        "un élément du chemin n'est pas un dossier."
    )


@pytest.mark.slow
def test_manage_py_refuses_a_backup_onto_a_file_with_status_1_and_no_traceback(tmp_path, a_file):
    done = subprocess.run(
        [sys.executable, "manage.py", "memory_backup", str(a_file)],
        cwd=ROOT,
        env=_env(tmp_path / "data"),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert f"{a_file} est un fichier, pas un dossier" in done.stderr


@pytest.mark.parametrize("command", ["memory_import", "memory_seed_self"])
def test_reading_a_folder_says_it_is_a_folder(tmp_path, command):
    assert _refusal(command, str(tmp_path)) == f"C'est un dossier, pas un fichier : {tmp_path}"


def test_an_evaluation_set_that_is_a_folder_says_it_is_a_folder(tmp_path):
    message = _refusal("memory_eval", "--dataset", str(tmp_path))

    assert message == f"C'est un dossier, pas un fichier : {tmp_path}"


def test_an_export_under_a_file_says_it_is_not_a_folder(a_file):
    message = _refusal("memory_export", str(a_file / "export.jsonl"))

    assert message == f"Ce n'est pas un dossier : {a_file}"


# Paths the system refuses. Root reads and writes through any permission, so as root the
# commands run with those two capabilities dropped (setpriv), like the owner's account.

_REFUSALS = """
    import json, sys
    from io import StringIO
    import django
    django.setup()
    from django.core.management import CommandError, call_command
    said = {}
    for case, args in json.loads(sys.argv[1]).items():
        try:
            call_command(*args, stdout=StringIO(), stderr=StringIO())
            said[case] = "no refusal"
        except CommandError as exc:
            said[case] = str(exc)
        except BaseException as exc:
            said[case] = f"traceback: {type(exc).__name__}: {exc}"
    print(json.dumps(said))
"""
_NO_OVERRIDE = "-dac_override,-dac_read_search"


def _without_root_override() -> list[str]:
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("root without setpriv: every permission is granted")
    return ["setpriv", f"--inh-caps={_NO_OVERRIDE}", f"--bounding-set={_NO_OVERRIDE}"]


@pytest.fixture(scope="module")
def refused(tmp_path_factory):
    """What each command says, run on paths the system refuses: case -> (message, path)."""
    prefix = _without_root_override()
    here = tmp_path_factory.mktemp("refus")
    locked_file = here / "illisible.jsonl"
    locked_file.write_text('{"format": "makilab-memory", "version": 1}\n', encoding="utf-8")
    closed, read_only, backup = here / "ferme", here / "lecture-seule", here / "sauvegarde"
    for folder in (closed, read_only, backup):
        folder.mkdir()
    database = backup / "makilab.sqlite3"
    sqlite3.connect(database).execute("CREATE TABLE t (x)").connection.close()
    manifest = {"format": "makilab-memory-backup", "counts": {}, "database": database.name}
    (backup / "backup.json").write_text(json.dumps(manifest), encoding="utf-8")
    paths = {
        "import a file it cannot read": ("memory_import", locked_file),
        "import from a folder it cannot enter": ("memory_import", closed / "x.jsonl"),
        "seed from a file it cannot read": ("memory_seed_self", locked_file),
        "seed from a folder it cannot enter": ("memory_seed_self", closed / "x.jsonl"),
        "evaluate a file it cannot read": ("memory_eval", "--dataset", locked_file),
        "export into a folder it cannot enter": ("memory_export", closed / "x.jsonl"),
        "export into a folder it cannot write": ("memory_export", read_only / "x.jsonl"),
        "back up into a folder it cannot enter": ("memory_backup", closed),
        "back up into a folder it cannot write": ("memory_backup", read_only),
        "back up under a folder it cannot write": ("memory_backup", read_only / "sub"),
        "restore a copy it cannot read": ("memory_restore", backup),
    }
    cases = {case: [str(arg) for arg in args] for case, args in paths.items()}
    for path, mode in ((locked_file, 0o000), (closed, 0o000), (read_only, 0o555), (database, 0)):
        path.chmod(mode)
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-c", textwrap.dedent(_REFUSALS), json.dumps(cases)],
            cwd=ROOT,
            env=_env(here / "data"),
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        for path in (locked_file, closed, read_only, database):
            path.chmod(0o700)
    assert done.returncode == 0, done.stderr[-2000:]
    said = json.loads(done.stdout.splitlines()[-1])
    return {case: (said[case], args[-1]) for case, args in paths.items()}


EXPECTED = {
    "import a file it cannot read": "Impossible de lire {path} : accès refusé.",
    "import from a folder it cannot enter": "Impossible d'accéder à {path} : accès refusé.",
    "seed from a file it cannot read": "Impossible de lire {path} : accès refusé.",
    "seed from a folder it cannot enter": "Impossible d'accéder à {path} : accès refusé.",
    "evaluate a file it cannot read": "Jeu d'évaluation illisible ({path}) : accès refusé",
    "export into a folder it cannot enter": "Impossible d'accéder à {path} : accès refusé.",
    "export into a folder it cannot write": "Impossible d'écrire l'export dans {path} : accès refusé",
    "back up into a folder it cannot enter": (
        "Impossible d'accéder au dossier de sauvegarde {path} : accès refusé."
    ),
    "back up into a folder it cannot write": (
        "Impossible d'écrire la sauvegarde dans {path} : accès refusé"
    ),
    "back up under a folder it cannot write": (
        "Impossible de créer le dossier de sauvegarde {path} : accès refusé."
    ),
    "restore a copy it cannot read": (
        "La sauvegarde {path}/makilab.sqlite3 est illisible : accès refusé."
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", EXPECTED)
def test_a_path_the_system_refuses_is_said_in_french(refused, case):
    message, path = refused[case]

    assert message == EXPECTED[case].format(path=path)


@pytest.mark.django_db
def test_a_backup_into_the_live_data_folder_says_so():
    """The data folder in use was refused as « contient déjà une sauvegarde » (black-box QA):
    it holds the memory's own database, and the message says that."""
    from pathlib import Path

    from django.db import connection

    live = Path(connection.settings_dict["NAME"]).parent
    message = _refusal("memory_backup", str(live))

    assert message == (
        f"Le dossier {live} est celui de la mémoire en service : choisissez un autre dossier "
        "pour la sauvegarde."
    )


@pytest.mark.parametrize(
    "command", [("memory_import",), ("memory_seed_self",), ("memory_eval", "--dataset")]
)
def test_a_device_or_a_pipe_is_not_a_file_not_a_missing_one(tmp_path, command):
    """QA: `memory_import /dev/null` answered « Fichier introuvable » for a path that exists."""
    pipe = tmp_path / "tube"
    os.mkfifo(pipe)
    for path in ("/dev/null", str(pipe)):
        message = _refusal(*command, path)
        assert (
            message
            == f"Ce n'est pas un fichier ordinaire (un périphérique, un tube, une socket) : {path}"
        )
