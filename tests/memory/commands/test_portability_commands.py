"""memory_export and memory_import as an operator runs them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memory.models import Fact, Message
from memory.services.facts import fact_store
from memory.services.messages import message_save
from tests.memory.test_workers import MIGRATE, ROOT, _env, _python

pytestmark = pytest.mark.django_db


def _run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_export_then_import_prints_counts_and_a_rate(tmp_path):
    question = message_save(channel="whatsapp", role="user", content="Le potager a soif")
    message_save(channel="whatsapp", role="assistant", content="J'arrose", reply_to_id=question.id)
    fact_store(key="potager", value="Le potager est au fond du jardin")
    path = tmp_path / "memoire.jsonl"

    out = _run("memory_export", str(path))
    assert out.strip() == f"Export écrit dans {path} : 2 messages, 0 résumé, 1 fait, réglages."

    Fact.all_objects.all().delete()
    out = _run("memory_import", str(path))
    assert "Import terminé, créés : 0 message, 0 résumé, 1 fait, 1 révision ;" in out
    assert "2 déjà présents, 0 conflit ; 5 lignes en" in out
    assert "lignes/s" in out
    assert Fact.objects.get(key="potager").value == "Le potager est au fond du jardin"


def test_one_of_a_kind_is_counted_in_the_singular(tmp_path):
    """French: « 0 résumé, 1 fait », never « 1 faits »."""
    message_save(channel="whatsapp", role="user", content="Le potager a soif")
    fact_store(key="potager", value="Le potager est au fond du jardin")
    path = tmp_path / "memoire.jsonl"

    exported = _run("memory_export", str(path))
    Fact.all_objects.all().delete()
    Message.all_objects.all().delete()
    imported = _run("memory_import", str(path))

    assert exported.strip() == f"Export écrit dans {path} : 1 message, 0 résumé, 1 fait, réglages."
    assert "créés : 1 message, 0 résumé, 1 fait, 1 révision ; 0 déjà présent, 0 conflit ;" in (
        imported
    )
    assert "1 faits" not in exported + imported and "1 messages" not in exported + imported


def test_import_reports_a_conflict_and_keeps_the_memory_value(tmp_path):
    fact_store(key="potager", value="Le potager est au fond du jardin")
    path = tmp_path / "memoire.jsonl"
    _run("memory_export", str(path))
    Fact.objects.filter(key="potager").update(value="Le potager est sur le balcon")
    out = _run("memory_import", str(path))
    assert "conflit : fait « potager » : une autre valeur existe ici, elle est gardée." in out
    assert Fact.objects.get(key="potager").value == "Le potager est sur le balcon"


def test_a_bad_line_is_a_command_error_and_nothing_is_imported(tmp_path):
    path = tmp_path / "memoire.jsonl"
    _run("memory_export", str(path))
    lines = path.read_text(encoding="utf-8").splitlines()
    message = {"type": "message", "id": 1, "channel": "whatsapp", "role": "user", "author": ""}
    path.write_text("\n".join([*lines, json.dumps(message)]) + "\n", encoding="utf-8")
    with pytest.raises(
        CommandError, match=r"Rien n'a été importé\. ligne 4 : champ « source » manquant"
    ):
        _run("memory_import", str(path))
    assert not Message.objects.exists()


def test_since_must_be_a_date(tmp_path):
    with pytest.raises(CommandError, match="Date invalide pour --since : « hier »"):
        _run("memory_export", "--since", "hier", str(tmp_path / "x.jsonl"))
    _run("memory_export", "--since", "2026-01-31", str(tmp_path / "x.jsonl"))
    header = json.loads((tmp_path / "x.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert header["since"].startswith("2026-01-31T00:00:00")


@pytest.mark.slow
def test_manage_py_exits_non_zero_without_a_traceback_on_a_bad_file(tmp_path):
    env = _env(tmp_path / "data")
    _python(MIGRATE, env)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "makilab-memory", "version": 1}\n{"type": "fact"}\n', "utf-8")
    result = subprocess.run(
        [sys.executable, "manage.py", "memory_import", str(bad)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "Rien n'a été importé. ligne 2 : champ « key » manquant." in result.stderr


@pytest.mark.slow
def test_an_export_to_dash_goes_to_the_standard_output(tmp_path):
    """QA: « memory_export - » wrote a file named « - »; as the Unix tools read it, the
    lines go to the standard output (for a pipe), the summary to the error output."""
    env = _env(tmp_path / "data")
    _python(MIGRATE, env)
    result = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "memory_export", "-"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "-").exists()
    assert json.loads(result.stdout.splitlines()[0])["format"] == "makilab-memory"
    assert "Export écrit sur la sortie standard" in result.stderr


@pytest.mark.django_db(transaction=True)
def test_benchmark_import_prints_the_rates_on_throwaway_memories():
    Fact.objects.create(key="vrai_fait", value="le vrai fait du propriétaire")
    out = StringIO()
    call_command("benchmark", "import", "--n", "20", stdout=out)
    text = out.getvalue()
    assert "export: {'settings': 1, 'context_notes': 1, 'message': 40, 'fact': 10}" in text
    assert re.search(r"import into an empty memory: 52 lines \(60 rows with revisions\)", text)
    assert re.search(r"[\d]+ lines/s, [\d]+ rows/s", text)
    assert re.search(r"same file again \(all matched, nothing written\): 52 lines", text)
    # The owner's database is back, untouched.
    assert list(Fact.objects.values_list("key", flat=True)) == ["vrai_fait"]


def test_dry_run_reports_what_an_import_would_do_and_changes_nothing(tmp_path):
    question = message_save(channel="whatsapp", role="user", content="Le potager a soif")
    fact_store(key="potager", value="Le potager est au fond du jardin")
    path = tmp_path / "memoire.jsonl"
    _run("memory_export", str(path))
    Fact.all_objects.all().delete()
    Message.all_objects.filter(pk=question.pk).delete()

    out = _run("memory_import", "--dry-run", str(path))

    assert out.strip() == (
        "Simulation, rien n'a été modifié. Le fichier est valide ; l'import créerait "
        "1 message, 0 résumé, 1 fait, 1 révision ; 0 déjà présent, 0 conflit."
    )
    assert not Fact.all_objects.exists() and not Message.all_objects.exists()
