"""reindex, memory_doctor and purge_expired work while the real `manage.py serve` runs.

serve owns the embedded Qdrant folder; the commands, started in other processes,
ask it to do the work (memory.services.serve_link) and print what it reports.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.memory.test_workers import (
    MIGRATE,
    ROOT,
    SETUP,
    _env,
    _free_port,
    _python,
    _start_serve,
    _wait_serving,
)

pytestmark = pytest.mark.slow

SEED = (
    SETUP
    + """
from memory.services.facts import fact_store
from memory.services.messages import message_save
for i in range(5):
    q = message_save(channel="whatsapp", role="user", content=f"Question {i} sur le potager")
    message_save(channel="whatsapp", role="assistant", content=f"Réponse {i}", reply_to_id=q.id)
for i in range(3):
    fact_store(key=f"fait_{i}", value=f"Le fait numéro {i} concerne le vélo")
"""
)
EXPIRE = """
from datetime import timedelta
from django.utils import timezone
from memory.models import Fact
Fact.objects.filter(key="fait_2").update(expires_at=timezone.now() - timedelta(minutes=1))
"""


def _wait_indexed(data_dir, timeout: float = 60.0) -> None:
    """Until serve's own worker has indexed the seeded rows: a row it still holds (a lease)
    is left to it by reindex, which would then report fewer points written."""
    import sqlite3

    deadline = time.monotonic() + timeout
    while True:
        with sqlite3.connect(data_dir / "makilab.sqlite3", timeout=20) as db:
            busy = sum(
                db.execute(
                    f"SELECT COUNT(*) FROM {table} WHERE index_state = 'pending'"
                    " OR index_lease_token != ''"
                ).fetchone()[0]
                for table in ("messages", "core_memory")
            )
        if busy == 0:
            return
        assert time.monotonic() < deadline, f"{busy} rows still being indexed by serve"
        time.sleep(0.2)


def _manage(env, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@contextlib.contextmanager
def serve_beside(env, data_dir, *args: str, host: str = "127.0.0.1") -> Iterator[subprocess.Popen]:
    """A real serve on a migrated ``data_dir``, up and done indexing; stopped on exit."""
    port = _free_port()
    server = _start_serve(env, port, "--no-migrate", *args)
    try:
        _wait_serving(f"http://{host}:{port}", server)
        _wait_indexed(data_dir)
        yield server
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
        server.communicate(timeout=60)


@pytest.fixture
def serving(tmp_path):
    env = _env(tmp_path)
    _python(MIGRATE, env)
    _python(SEED, env)
    with serve_beside(env, tmp_path) as server:
        yield env, server


def test_doctor_reindex_and_purge_run_in_the_serving_process(serving):
    env, server = serving
    doctor = _manage(env, "memory_doctor")
    assert doctor.returncode == 0, doctor.stderr[-3000:]
    assert "conversations: " in doctor.stdout and "knowledge: " in doctor.stdout
    assert "déjà ouvert" not in doctor.stdout + doctor.stderr

    reindex = _manage(env, "reindex", "--batch-size", "2")
    assert reindex.returncode == 0, reindex.stderr[-3000:]
    assert "Réindexation terminée : 8 points écrits" in reindex.stdout
    for step in ("échanges", "faits", "5/5", "3/3", "lignes/s"):  # tqdm's bars, rate
        assert step in reindex.stderr, reindex.stderr

    # serve purges expired facts itself at start, then every 10 minutes: expire one now.
    _python(SETUP + EXPIRE, env)
    purge = _manage(env, "purge_expired")
    assert purge.returncode == 0, purge.stderr[-3000:]
    assert "1 fait(s) expiré(s) purgé(s)." in purge.stdout

    # The expired fact's point leaves Qdrant through serve's own worker: no --fix needed.
    deadline = time.monotonic() + 60
    healthy = _manage(env, "memory_doctor")
    while "Tout est cohérent." not in healthy.stdout and time.monotonic() < deadline:
        time.sleep(1)
        healthy = _manage(env, "memory_doctor")
    assert "Tout est cohérent." in healthy.stdout, healthy.stdout + healthy.stderr
    fixed = _manage(env, "memory_doctor", "--fix", "--collection", "knowledge")
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    assert fixed.stdout.startswith("knowledge: 0 sans point, 0 points orphelins"), fixed.stdout
    stats = _manage(env, "memory_stats")
    assert "qdrant : disponible | conversations 5, knowledge 2" in stats.stdout, stats.stdout
    assert server.poll() is None  # serve kept running throughout
    counts = _python(
        SETUP
        + "from memory.models import Fact; print(Fact.objects.filter(forgotten=True).count())",
        env,
    )
    assert counts.strip() == "1"


def test_without_a_running_serve_the_commands_work_on_their_own(tmp_path):
    env = _env(tmp_path)
    _python(MIGRATE, env)
    _python(SEED, env)
    reindex = _manage(env, "reindex")
    assert reindex.returncode == 0, reindex.stderr[-3000:]
    assert "Réindexation terminée : 8 points écrits" in reindex.stdout
    doctor = _manage(env, "memory_doctor")
    assert "Tout est cohérent." in doctor.stdout, doctor.stdout + doctor.stderr


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_the_commands_reach_a_serve_listening_on_the_ipv6_wildcard(tmp_path):
    """serve.json holds http://[::]:PORT/ (not http://:::PORT/), reached on [::1]."""
    env = _env(tmp_path)
    _python(MIGRATE, env)
    with serve_beside(env, tmp_path, "--host", "::", host="[::1]") as server:
        doctor = _manage(env, "memory_doctor")
        assert doctor.returncode == 0, doctor.stdout + doctor.stderr[-3000:]
        assert "Tout est cohérent." in doctor.stdout
        stats = _manage(env, "memory_stats")
        assert "qdrant : disponible" in stats.stdout, stats.stdout + stats.stderr[-3000:]
        server.send_signal(signal.SIGTERM)
        out = server.communicate(timeout=60)[0]
    assert "Makilab Memory sur http://[::]:" in out, out[-3000:]
