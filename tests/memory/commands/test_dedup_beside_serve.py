"""memory_seed_self and memory_digest store through dedup beside the real `manage.py serve`.

Their similarity check searches the `knowledge` collection, which lives in serve's
embedded Qdrant folder: a command cannot open it, so it has serve run the work
(memory.services.serve_link), as reindex and memory_doctor do. Run on its own, the
command's dedup met "folder already opened", saw no similar item and stored a
duplicate.
"""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import UTC, datetime

import pytest

from tests.fakes.anthropic import FakeAnthropic, FakeReply, text_message
from tests.memory.commands.test_maintenance_beside_serve import _manage, serve_beside
from tests.memory.test_workers import MIGRATE, SETUP, _env, _python

pytestmark = pytest.mark.slow

SPEAKS = "Je parle français avec Mickael"
SPEAKS_AGAIN = "Je parle le français avec Mickael"  # near-identical: merged, as without serve
ROOM = "lobby"
DOG = "Paul a un chien nommé Rex"


def _seed_file(path, content: str):
    path.write_text(json.dumps({"kind": "self", "category": "context", "content": content}) + "\n")
    return path


def _rows(data_dir, sql: str) -> list[tuple]:
    with sqlite3.connect(data_dir / "makilab.sqlite3", timeout=20) as db:
        return db.execute(sql).fetchall()


def test_a_seed_beside_serve_merges_a_near_identical_item_as_it_does_alone(tmp_path):
    env = _env(tmp_path)
    _python(MIGRATE, env)
    first = _manage(env, "memory_seed_self", str(_seed_file(tmp_path / "a.jsonl", SPEAKS)))
    assert first.returncode == 0, first.stderr[-3000:]
    with serve_beside(env, tmp_path):  # indexes the first item at start
        second = _manage(
            env, "memory_seed_self", str(_seed_file(tmp_path / "b.jsonl", SPEAKS_AGAIN))
        )
    assert second.returncode == 0, second.stderr[-3000:]
    assert "1 ajouté" not in second.stdout, second.stdout + second.stderr[-3000:]
    assert "ligne 1 : fusionné avec un élément existant" in second.stdout
    assert "0 ajouté, 0 déjà présent, 1 fusionné." in second.stdout
    rows = _rows(tmp_path, "SELECT value FROM core_memory WHERE kind = 'self' AND forgotten = 0")
    assert rows == [(SPEAKS_AGAIN,)]


class DigestLlm:
    """The digest finds the dog again; the dedup decision, asked only when the similarity
    check found the stored fact, says it is nothing new."""

    def __init__(self) -> None:
        self.dedup_asked = 0

    def __call__(self, body: dict) -> FakeReply:
        system = body.get("system") or ""
        if isinstance(system, list):
            system = " ".join(block.get("text", "") for block in system)
        prompt = json.dumps(body.get("messages", []), ensure_ascii=False)
        if system.startswith("Tu maintiens la mémoire"):
            self.dedup_asked += 1
            stored = re.search(r'\\"id\\": (\d+)', prompt).group(1)
            return text_message(json.dumps({"action": "NOOP", "id": int(stored)}))
        fact = {"key": "chien_de_paul", "value": f"{DOG}.", "type": "fact", "sources": [1]}
        return text_message(json.dumps({"facts": [fact]}))


@pytest.fixture
def digest_llm():
    fake = FakeAnthropic().start()
    fake.handler = DigestLlm()
    yield fake
    fake.stop()


def test_a_digest_beside_serve_finds_the_stored_fact_and_stores_no_duplicate(tmp_path, digest_llm):
    now = datetime.now(UTC)
    env = _env(
        tmp_path,
        ANTHROPIC_API_KEY=digest_llm.api_key,
        ANTHROPIC_BASE_URL=digest_llm.url,
        ANTHROPIC_MODEL="claude-sonnet-4-6",
        # The fixed hour half a day away: no scheduled digest while the test runs.
        MAKILAB_TIME_ZONE="UTC",
        MAKILAB_DIGEST_HOURS=str((now.hour + 12) % 24),
    )
    _python(MIGRATE, env)
    _python(
        SETUP
        + f"""
from django.utils import timezone
from memory.models import Digest, DigestState
from memory.services.channels import channel_settings_set
from memory.services.facts import fact_store
from memory.services.messages import message_save
Digest.objects.create(state=DigestState.DONE, started_at=timezone.now())  # no catch-up
fact_store(key="chien_paul", value={DOG!r})
channel_settings_set(channel={ROOM!r}, observed=True)
message_save(channel={ROOM!r}, role="user", content="Paul a adopté Rex, un chien", author="david")
""",
        env,
    )
    with serve_beside(env, tmp_path):
        digest = _manage(env, "memory_digest")
    assert digest.returncode == 0, digest.stdout + digest.stderr[-3000:]
    assert "Digest terminé : 1 message digéré, 0 fait enregistré," in digest.stdout
    assert digest_llm.handler.dedup_asked == 1
    rows = _rows(tmp_path, "SELECT key FROM core_memory WHERE kind = 'owner' AND forgotten = 0")
    assert rows == [("chien_paul",)]
