"""A file that is not JSON is refused in French (the json module's own text is English),
and a UTF-8 byte-order mark, as some Windows editors write one, is not an error."""

from __future__ import annotations

import json
import re
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memory.models import Fact
from memory.services.facts import fact_store
from memory.services.messages import message_save

pytestmark = pytest.mark.django_db

BOM = b"\xef\xbb\xbf"
# Words of the json module's and the system's English messages.
ENGLISH = re.compile(r"Expecting|Unterminated|Invalid|Extra data|Exceeds|Errno|line \d|char \d")


def _refusal(*args) -> str:
    with pytest.raises(CommandError) as refused:
        call_command(*args, stdout=StringIO(), stderr=StringIO())
    message = str(refused.value)
    assert not ENGLISH.search(message), message
    return message


def _run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    # The rate and the time differ from one run to the next.
    return re.sub(r"(lignes? en) .* lignes/s\)", r"\1 …", out.getvalue())


@pytest.fixture
def export(tmp_path):
    """An export of a memory holding one exchange and one fact."""
    question = message_save(channel="whatsapp", role="user", content="Le potager a soif")
    message_save(channel="whatsapp", role="assistant", content="J'arrose", reply_to_id=question.id)
    fact_store(key="potager", value="Le potager est au fond du jardin")
    path = tmp_path / "memoire.jsonl"
    _run("memory_export", str(path))
    return path


@pytest.fixture
def no_llm(settings):
    settings.ANTHROPIC_API_KEY = ""


def _seed_line(content: str) -> str:
    return json.dumps({"kind": "self", "category": "context", "content": content})


# memory_import


def test_a_truncated_export_is_refused_naming_the_line_and_column_in_french(export):
    lines = export.read_text(encoding="utf-8").splitlines()
    number, line = next((n, x) for n, x in enumerate(lines, 1) if x.startswith('{"type":"fact"'))
    cut = line[: line.index("au fond")]  # the value's text never ends
    export.write_text("\n".join([*lines[: number - 1], cut]), encoding="utf-8")

    message = _refusal("memory_import", str(export))

    column = cut.index('"Le potager') + 1
    assert message == (
        f"Rien n'a été importé. ligne {number} : JSON invalide "
        f"(colonne {column} : chaîne non terminée)."
    )


def test_a_number_too_long_for_python_is_refused_in_french(export):
    digits = sys.get_int_max_str_digits() + 1
    with export.open("a", encoding="utf-8") as handle:
        handle.write('{"type": "message", "id": ' + "1" * digits + "}\n")
    number = len(export.read_text(encoding="utf-8").splitlines())

    message = _refusal("memory_import", str(export))

    assert message == (
        f"Rien n'a été importé. ligne {number} : JSON invalide "
        f"(nombre trop long : {digits - 1} chiffres au plus)."
    )


def test_an_export_saved_with_a_byte_order_mark_imports_as_without_it(export, tmp_path):
    with_bom = tmp_path / "memoire-bom.jsonl"
    with_bom.write_bytes(BOM + export.read_bytes())

    Fact.all_objects.all().delete()
    imported_with_bom = _run("memory_import", str(with_bom))
    assert Fact.objects.get(key="potager").value == "Le potager est au fond du jardin"
    assert _run("memory_import", str(with_bom)) == _run("memory_import", str(export))

    Fact.all_objects.all().delete()
    assert imported_with_bom == _run("memory_import", str(export))
    assert "Import terminé, créés : " in imported_with_bom
    assert "1 fait, 1 révision ;" in imported_with_bom


def test_a_byte_order_mark_anywhere_but_the_start_is_still_refused(export):
    """Only a leading mark means nothing: one at the start of another line is not JSON."""
    lines = export.read_bytes().splitlines()
    export.write_bytes(b"\n".join([lines[0], BOM + lines[1], *lines[2:]]) + b"\n")

    message = _refusal("memory_import", str(export))

    assert message.startswith("Rien n'a été importé. ligne 2 : JSON invalide (colonne 1 : ")


# memory_seed_self


def test_a_broken_seed_line_is_refused_naming_the_column_in_french(tmp_path, no_llm):
    broken = _seed_line("Je vis dans Organizer")[:-10]
    seed = tmp_path / "graine.jsonl"
    seed.write_text(_seed_line("Je parle français") + "\n" + broken + "\n", encoding="utf-8")

    message = _refusal("memory_seed_self", str(seed))

    column = broken.index('"Je vis') + 1
    assert message == (
        f"Rien n'a été chargé. ligne 2 : JSON invalide (colonne {column} : chaîne non terminée)"
    )
    assert not Fact.all_objects.exists()


def test_a_broken_seed_list_is_refused_naming_the_line_and_column_in_french(tmp_path, no_llm):
    bad = '  {"kind" "goal"}'
    seed = tmp_path / "graine.json"
    seed.write_text(f"[\n  {_seed_line('Je parle français')},\n{bad}\n]\n", encoding="utf-8")

    message = _refusal("memory_seed_self", str(seed))

    column = bad.index('"goal"') + 1
    assert (
        message
        == f"Rien n'a été chargé. ligne 3 : JSON invalide (colonne {column} : « : » attendu)"
    )


def test_a_seed_number_too_long_for_python_is_refused_in_french(tmp_path, no_llm):
    seed = tmp_path / "graine.jsonl"
    limit = sys.get_int_max_str_digits()
    seed.write_text('{"kind": ' + "7" * (limit + 1) + "}\n", encoding="utf-8")

    message = _refusal("memory_seed_self", str(seed))

    assert message == (
        f"Rien n'a été chargé. ligne 1 : JSON invalide (nombre trop long : {limit} chiffres au plus)"
    )


@pytest.mark.parametrize(
    "name, text",
    [
        ("graine.jsonl", _seed_line("Je parle français") + "\n"),
        ("graine.json", f"[{_seed_line('Je parle français')}]\n"),
    ],
    ids=["jsonl", "json-list"],
)
def test_a_seed_saved_with_a_byte_order_mark_loads(tmp_path, no_llm, name, text):
    seed = tmp_path / name
    seed.write_bytes(BOM + text.encode("utf-8"))

    assert "Graine chargée : 1 ajouté," in _run("memory_seed_self", str(seed))
    assert Fact.all_objects.get(kind="self").value == "Je parle français"


# memory_eval --dataset


def test_an_evaluation_set_that_is_not_json_is_refused_in_french(tmp_path):
    dataset = tmp_path / "jeu.json"
    dataset.write_text('{"memories": [],\n "questions": [}\n', encoding="utf-8")

    message = _refusal("memory_eval", "--dataset", str(dataset))

    assert message == (
        f"Jeu d'évaluation illisible ({dataset}) : JSON invalide "
        "(ligne 2, colonne 16 : valeur attendue)"
    )
