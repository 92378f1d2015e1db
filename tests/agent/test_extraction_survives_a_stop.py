"""Fact extraction survives a stop of `serve`: SIGKILL or SIGTERM mid-work, restart, exactly once.

The real `manage.py serve` (embedded defaults, its in-process worker) talks to
the fake Anthropic server of this process. 40 chats are posted over HTTP;
extractions are slow, so most are still waiting when serve is stopped. After a
restart every exchange is extracted, once: each exchange's fact is stored with
one revision, the LLM is asked again only for the extraction the stop cut
short, and T1 and Qdrant agree (memory_doctor) once the restarted serve is idle.

The state is read from the SQLite file itself, so the test also runs on a
version without durable jobs (where it fails: the stopped queue is lost).
"""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.anthropic import FakeAnthropic, FakeReply, text_message
from tests.memory.test_workers import (
    ROOT,
    _env,
    _free_port,
    _http,
    _owner_token,
    _start_serve,
    _wait_serving,
)

pytestmark = pytest.mark.slow

CHATS = 40
EXTRACTION_DELAY_S = 0.4
# After the restart: give up once nothing has changed for this long.
IDLE_LIMIT_S = 45
RESTART_LIMIT_S = 240
# The stop lands once this many exchanges are extracted: in the middle of the work.
STOP_AFTER = 3
WORKER_THREADS = 2


class Responder:
    """Chats get a short answer; extractions a slow answer with one fact named after the chat."""

    def __init__(self) -> None:
        self.extractions: dict[int, int] = {}

    def __call__(self, body: dict) -> FakeReply:
        system = body.get("system") or ""
        if isinstance(system, list):
            system = " ".join(block.get("text", "") for block in system)
        if "tools" in body:
            return text_message("D'accord, c'est noté.")
        if system.startswith("Tu extrais"):
            prompt = json.dumps(body.get("messages", []), ensure_ascii=False)
            number = int(re.search(r"numéro (\d+)", prompt).group(1))
            self.extractions[number] = self.extractions.get(number, 0) + 1
            fact = {"key": f"fait_{number}", "value": f"Le fait numéro {number} est vrai"}
            reply = text_message(json.dumps({"facts": [{**fact, "type": "fact"}]}))
            reply.delay_s = EXTRACTION_DELAY_S
            return reply
        if system.startswith("Tu maintiens"):  # dedup: the facts are all different
            return text_message(json.dumps({"action": "ADD", "id": None}))
        return text_message("Le propriétaire a demandé de retenir des faits numérotés.")


def _state(db: Path) -> dict:
    """What was extracted, read from the SQLite file (no Django: cheap, any version)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        revisions = dict(
            conn.execute(
                "SELECT f.key, COUNT(r.id) FROM core_memory f"
                " LEFT JOIN memory_factrevision r ON r.fact_id = f.id GROUP BY f.key"
            )
        )
        replies = conn.execute("SELECT COUNT(*) FROM messages WHERE role = 'assistant'").fetchone()
        pending = sum(
            conn.execute(f"SELECT COUNT(*) FROM {table} WHERE index_state = 'pending'").fetchone()[
                0
            ]
            for table in ("messages", "core_memory", "memory_summary")
        )
        jobs = (
            dict(
                conn.execute(
                    "SELECT state, COUNT(*) FROM memory_jobs WHERE kind = 'extract' GROUP BY state"
                )
            )
            if "memory_jobs" in tables
            else None
        )
    return {"revisions": revisions, "replies": replies[0], "pending": pending, "jobs": jobs}


def _wait_for(condition, limit_s: float = 60) -> None:
    deadline = time.monotonic() + limit_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.2)


def _settled(state: dict) -> bool:
    jobs_done = state["jobs"] is None or state["jobs"] == {"done": CHATS}
    return len(state["revisions"]) == CHATS and jobs_done and not state["pending"]


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_every_exchange_is_extracted_exactly_once_after_a_stop_and_a_restart(tmp_path, stop):
    fake = FakeAnthropic().start()
    responder = Responder()
    fake.handler = responder
    port = _free_port()
    env = _env(
        tmp_path,
        DJANGO_SUPERUSER_USERNAME="owner",
        DJANGO_SUPERUSER_PASSWORD="un-mot-de-passe-solide",
        ANTHROPIC_API_KEY=fake.api_key,
        ANTHROPIC_BASE_URL=fake.url,
        ANTHROPIC_MODEL="claude-sonnet-4-6",
        AGENT_COALESCE_SECONDS="0",
        MAKILAB_WORKER_THREADS=str(WORKER_THREADS),
    )
    db = tmp_path / "makilab.sqlite3"
    base = f"http://127.0.0.1:{port}"
    server = _start_serve(env, port)
    try:
        _wait_serving(base, server)
        token = _owner_token(env)
        for i in range(CHATS):
            status, body = _http(
                f"{base}/api/agent/chat",
                token=token,
                data={"channel": "whatsapp", "message": f"Retiens le fait numéro {i}, merci."},
            )
            assert status == 200, body
        _wait_for(lambda: len(_state(db)["revisions"]) >= STOP_AFTER)  # mid-work
        server.send_signal(stop)
        server.communicate(timeout=60)
        before = _state(db)
        assert before["replies"] == CHATS
        assert len(before["revisions"]) < CHATS, "the stop must land before the work is done"
        asked_before = sum(responder.extractions.values())

        server = _start_serve(env, port)
        _wait_serving(base, server)
        started = changed = time.monotonic()
        state = _state(db)
        while not _settled(state):
            now = time.monotonic()
            if now - changed > IDLE_LIMIT_S or now - started > RESTART_LIMIT_S:
                break
            time.sleep(1)
            current = _state(db)
            if current != state:
                state, changed = current, time.monotonic()
    finally:
        server.send_signal(signal.SIGTERM)
        out, _ = server.communicate(timeout=60)
        fake.stop()

    # Every exchange extracted: its fact is there, stored once (one revision).
    assert state["revisions"] == {f"fait_{i}": 1 for i in range(CHATS)}, (
        f"{len(state['revisions'])}/{CHATS} extracted after the restart ({before=})\n{out[-3000:]}"
    )
    assert state["jobs"] in (None, {"done": CHATS}), state["jobs"]
    # The LLM was asked again only for the extractions the stop cut short (one per thread).
    assert set(responder.extractions) == set(range(CHATS))
    asked = sum(responder.extractions.values())
    assert asked <= CHATS + WORKER_THREADS, (asked_before, responder.extractions)
    # T1 and Qdrant agree, version by version, once the restarted serve is idle and stopped.
    assert state["pending"] == 0, state
    doctor = subprocess.run(
        [sys.executable, "manage.py", "memory_doctor"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Tout est cohérent." in doctor.stdout, doctor.stdout + doctor.stderr[-2000:]
