"""memory_export over an earlier export: the file is replaced whole or not at all.

An export stopped half-way (a full disk, Ctrl-C) must neither destroy the earlier
export nor leave a cut file, or a temporary file, behind.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memory.services import portability
from memory.services.facts import fact_store
from memory.services.messages import message_save

pytestmark = pytest.mark.django_db


def _memory_with_some_lines() -> None:
    for i in range(5):
        q = message_save(channel="whatsapp", role="user", content=f"Question {i} sur le vélo")
        message_save(channel="whatsapp", role="assistant", content=f"Réponse {i}", reply_to_id=q.id)
    fact_store(key="velo", value="Le vélo est gris")


def _records_then(monkeypatch, error: BaseException) -> None:
    """export_records yields five records, then raises ``error``."""
    real = portability.export_records

    def records_then_error(**kwargs):
        for n, record in enumerate(real(**kwargs)):
            if n == 5:
                raise error
            yield record

    monkeypatch.setattr(portability, "export_records", records_then_error)


def test_an_export_stopped_by_a_full_disk_keeps_the_previous_export(tmp_path, monkeypatch):
    """The earlier file stays byte for byte; the operator reads one French line naming it."""
    _memory_with_some_lines()
    target = tmp_path / "memoire.jsonl"
    call_command("memory_export", str(target), stdout=StringIO())
    before = target.read_bytes()
    assert before.count(b"\n") > 10

    _records_then(monkeypatch, OSError(28, "No space left on device"))
    with pytest.raises(CommandError) as refused:
        call_command("memory_export", str(target), stdout=StringIO())

    assert str(refused.value) == f"Impossible d'écrire l'export dans {target} : disque plein"
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memoire.jsonl"]


def test_an_export_interrupted_by_ctrl_c_keeps_the_previous_export(tmp_path, monkeypatch):
    """Ctrl-C half-way: the earlier export stays and no temporary file is left."""
    _memory_with_some_lines()
    target = tmp_path / "memoire.jsonl"
    call_command("memory_export", str(target), stdout=StringIO())
    before = target.read_bytes()

    _records_then(monkeypatch, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        call_command("memory_export", str(target), stdout=StringIO())

    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memoire.jsonl"]


def test_a_first_export_stopped_half_way_leaves_no_file(tmp_path, monkeypatch):
    """No earlier export: a failed one leaves nothing that looks like an export."""
    _memory_with_some_lines()
    _records_then(monkeypatch, OSError(28, "No space left on device"))
    with pytest.raises(CommandError):
        call_command("memory_export", str(tmp_path / "memoire.jsonl"), stdout=StringIO())

    assert list(tmp_path.iterdir()) == []


def test_a_new_export_replaces_the_earlier_one_and_keeps_its_permissions(tmp_path):
    """A successful export over an earlier one replaces its content, not its mode."""
    target = tmp_path / "memoire.jsonl"
    target.write_text("ancien export\n")
    target.chmod(0o640)
    _memory_with_some_lines()

    call_command("memory_export", str(target), stdout=StringIO())

    assert target.read_text(encoding="utf-8").startswith('{"format":"makilab-memory"')
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memoire.jsonl"]


def test_an_export_onto_a_full_disk_is_a_french_command_error():
    """/dev/full (not a regular file: written in place, never replaced) is a full disk."""
    with pytest.raises(CommandError) as refused:
        call_command("memory_export", "/dev/full", stdout=StringIO())

    assert str(refused.value).startswith("Impossible d'écrire l'export dans /dev/full : ")
