"""`memory_doctor --fix` only says "réparé" and "Tout est cohérent." when the repair worked.

Guards the verdict after a repair: the comparison runs again once the repair is
done, so a repair whose embeddings failed (rows ending ``failed``, points still
missing) is reported as incomplete, in French, and the command exits with an
error instead of claiming coherence; a repair that works still says so.

The exit status is the verdict a script (cron, CI) reads: differences found without
--fix exited 0, as a consistent memory does, so nothing told a broken memory from a
healthy one but the French text. Now: 1 while differences remain, 0 once consistent.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.exceptions import EmbeddingInvalid
from memory.management.commands import memory_doctor
from memory.models import Fact, IndexState
from memory.services.facts import fact_store
from memory.stores.vectors import KNOWLEDGE
from tests.fakes.embedder import HashEmbedder, install

pytestmark = pytest.mark.django_db

FACTS = 3


@pytest.fixture
def points_lost(vector_store, monkeypatch) -> HashEmbedder:
    """Indexed facts whose points were then deleted behind the machine's back."""
    embedder = HashEmbedder()
    install(monkeypatch, embedder)
    for i in range(FACTS):
        fact_store(key=f"fait_{i}", value=f"Le fait numéro {i} parle du vélo bleu")
    call_command("reindex", stdout=StringIO(), stderr=StringIO())
    vector_store.delete(KNOWLEDGE, list(vector_store.iter_ids(KNOWLEDGE)))
    return embedder


def test_a_fix_that_cannot_embed_says_it_failed_and_exits_with_an_error(points_lost, vector_store):
    points_lost.error = EmbeddingInvalid("réponse illisible de l'embedder")
    out = StringIO()

    with pytest.raises(CommandError, match="n'a pas tout réparé"):
        call_command("memory_doctor", "--fix", stdout=out, stderr=StringIO())

    said = out.getvalue()
    # The repair did fail: no point came back, every row ended failed.
    assert vector_store.count(KNOWLEDGE) == 0
    assert Fact.all_objects.filter(index_state=IndexState.FAILED).count() == FACTS
    assert "Tout est cohérent." not in said, said
    assert "→ réparé" not in said, said
    assert "réparation incomplète" in said and "3 en échec d'indexation" in said, said
    assert "La réparation a échoué" in said, said
    assert "réponse illisible de l'embedder" in said, said


def test_a_fix_that_works_still_says_repaired_and_coherent(points_lost, vector_store):
    out = StringIO()

    call_command("memory_doctor", "--fix", stdout=out, stderr=StringIO())

    said = out.getvalue()
    assert vector_store.count(KNOWLEDGE) == FACTS
    assert "knowledge: 3 sans point, 0 points orphelins, 0 périmés → réparé" in said, said
    assert said.strip().endswith("Tout est cohérent."), said


def test_without_fix_differences_are_reported_and_the_command_fails(points_lost):
    out = StringIO()

    with pytest.raises(CommandError) as refused:
        call_command("memory_doctor", stdout=out, stderr=StringIO())

    assert refused.value.returncode == 1
    assert str(refused.value) == memory_doctor.DIFFERENCES_FOUND_ERROR
    said = out.getvalue()
    assert "Des différences restent : relancez avec --fix." in said, said
    assert "La réparation a échoué" not in said, said


def _run_from_the_shell(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """memory_doctor as `python manage.py memory_doctor ...` runs it (run_from_argv, system
    checks included): its exit status, stdout and stderr."""
    from django.core.management import load_command_class
    from django.db import connections

    # run_from_argv closes the connections when done, which would end the test's transaction.
    monkeypatch.setattr(connections, "close_all", lambda: None)
    try:
        load_command_class("memory", "memory_doctor").run_from_argv(
            ["manage.py", "memory_doctor", *args]
        )
        status = 0
    except SystemExit as exited:
        status = exited.code
    out, err = capsys.readouterr()
    return status, out, err


def test_differences_found_without_fix_exit_with_status_1(points_lost, monkeypatch, capsys):
    status, out, err = _run_from_the_shell(monkeypatch, capsys)

    assert status == 1, out + err
    assert "knowledge: 3 sans point" in out and "relancez avec --fix" in out, out
    assert memory_doctor.DIFFERENCES_FOUND_ERROR in err, err


def test_a_fix_that_repairs_everything_exits_with_status_0_and_so_does_the_next_check(
    points_lost, monkeypatch, capsys
):
    status, out, err = _run_from_the_shell(monkeypatch, capsys, "--fix")
    assert status == 0, out + err
    assert out.strip().endswith("Tout est cohérent."), out

    status, out, err = _run_from_the_shell(monkeypatch, capsys)
    assert status == 0, out + err
    assert out.strip().endswith("Tout est cohérent."), out


def test_a_fix_that_cannot_repair_exits_with_status_1(points_lost, monkeypatch, capsys):
    points_lost.error = EmbeddingInvalid("réponse illisible de l'embedder")

    status, out, err = _run_from_the_shell(monkeypatch, capsys, "--fix")

    assert status == 1, out + err
    assert memory_doctor.REPAIR_FAILED_ERROR in err, err


def test_the_help_says_what_the_exit_status_means(capsys):
    from django.core.management import load_command_class

    load_command_class("memory", "memory_doctor").print_help("manage.py", "memory_doctor")
    said = " ".join(capsys.readouterr().out.split())
    assert "Code de sortie : 0 quand tout est cohérent" in said, said
    assert "1 quand des différences restent" in said, said
