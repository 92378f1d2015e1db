"""`memory_doctor` checks the three keyword indexes against their rows, and --fix rebuilds one
that disagrees.

An FTS5 index is only as right as its triggers: a row written by hand with SQLite's shell,
or an index file damaged, leaves words the memory no longer holds (found by the keyword
source and the text search, dropped only on hydration) or rows no word finds. The doctor
was comparing SQLite with Qdrant only.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from memory.models import Message, Summary
from memory.services.facts import fact_store
from memory.stores.fts import fts_search, fts_search_facts
from memory.stores.fts_upkeep import KEYWORD_INDEXES, fts_broken, fts_integrity_check
from tests.fakes.embedder import HashEmbedder, install

pytestmark = pytest.mark.django_db


@pytest.fixture
def memory(vector_store, monkeypatch):
    install(monkeypatch, HashEmbedder())
    Message.objects.create(channel="whatsapp", role="user", content="Le vélo est au garage")
    fact_store(key="velo_couleur", value="Le vélo est bleu")
    Summary.objects.create(channel="whatsapp", content="En mars : le vélo réparé", message_count=3)
    call_command("reindex", stdout=StringIO(), stderr=StringIO())  # Qdrant agrees too


def _ghost(table: str) -> None:
    """Words in ``table``'s index for a row that does not exist, written behind its triggers."""
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {table}(rowid, content) VALUES (987654, 'fantome')")


def _doctor(*args: str) -> str:
    out = StringIO()
    call_command("memory_doctor", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def _doctor_finding_differences() -> str:
    """memory_doctor without --fix on differences: its report, and exit status 1."""
    out = StringIO()
    with pytest.raises(CommandError):
        call_command("memory_doctor", stdout=out, stderr=StringIO())
    return out.getvalue()


def test_a_healthy_memory_has_coherent_keyword_indexes(memory):
    assert fts_broken() == []
    said = _doctor()
    assert "index des mots-clés : cohérents" in said, said
    assert "Tout est cohérent." in said, said


@pytest.mark.parametrize("table", KEYWORD_INDEXES)
def test_an_index_that_disagrees_with_its_rows_is_reported_and_rebuilt(memory, table):
    _ghost(table)
    assert fts_broken() == [table]
    with pytest.raises(Exception):  # noqa: B017 - SQLite's own corruption error
        fts_integrity_check()

    said = _doctor_finding_differences()
    assert f"index des mots-clés {table} : ne correspond plus à ses lignes" in said, said
    assert "Tout est cohérent." not in said, said

    said = _doctor("--fix")
    assert f"index des mots-clés {table} : ne correspond plus à ses lignes → reconstruit" in said
    assert "Tout est cohérent." in said, said
    assert fts_broken() == []
    # The rebuilt index still finds what the memory holds, and the ghost no more.
    assert fts_search("fantome") == [] and fts_search_facts("fantome") == []
    assert [m.content for m in fts_search("garage")] == ["Le vélo est au garage"]
