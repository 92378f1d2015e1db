"""Background indexing with real processes: a Celery worker on Redis, the embedded `serve`.

These tests start real processes on a real SQLite file and a real Qdrant Edge
folder. Redis runs on 127.0.0.1:6379 on this machine (and in CI); when none is
reachable the Redis tests are skipped, unless MAKILAB_REQUIRE_REDIS=1.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379
REDIS_DB = 13

pytestmark = pytest.mark.slow


def _redis_up(port: int = REDIS_PORT) -> bool:
    try:
        with socket.create_connection((REDIS_HOST, port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _require_redis() -> None:
    if _redis_up():
        return
    if os.environ.get("MAKILAB_REQUIRE_REDIS") == "1":
        pytest.fail("MAKILAB_REQUIRE_REDIS=1 but no Redis answers on 127.0.0.1:6379")
    pytest.skip("no Redis on 127.0.0.1:6379 (set MAKILAB_REQUIRE_REDIS=1 to make this a failure)")


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            ("DJANGO_", "MAKILAB_", "CELERY_", "QDRANT_", "VOYAGE_", "ANTHROPIC_", "OBSIDIAN_")
        )
    }
    env |= {
        "DJANGO_SETTINGS_MODULE": "makilab.settings",
        "MAKILAB_DATA_DIR": str(data_dir),
        "MAKILAB_LOG_LEVEL": "WARNING",
        # The services the tests start run unthrottled (tests/test_throttling.py tests the rates).
        "MAKILAB_API_RATE": "None",
        "MAKILAB_API_ANON_RATE": "None",
        "MAKILAB_API_CHAT_RATE": "None",
    }
    return env | extra


def _python(code: str, env: dict[str, str], timeout: float = 300) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


SETUP = "import django; django.setup()\n"
MIGRATE = (
    SETUP + "from django.core.management import call_command; call_command('migrate', verbosity=0)"
)
SAVE_EXCHANGES = (
    SETUP
    + """
import sys
from memory.services.messages import message_save
n = int(sys.argv[1]) if len(sys.argv) > 1 else 0
"""
)


def _save_exchanges(env: dict[str, str], n: int) -> None:
    _python(
        SETUP
        + f"""
from memory.services.messages import message_save
for i in range({n}):
    q = message_save(channel="whatsapp" if i % 2 else "mission_control", role="user", content=f"Question {{i}} : que faire au jardin en mars ?")
    message_save(channel=q.channel, role="assistant", content=f"Réponse {{i}} : semer les tomates.", reply_to_id=q.id)
""",
        env,
    )


def _index_states(env: dict[str, str]) -> dict[str, int]:
    out = _python(
        SETUP
        + """
import json
from django.db.models import Count
from memory.models import Message
print(json.dumps(dict(Message.objects.values_list("index_state").annotate(n=Count("id")))))
""",
        env,
    )
    return json.loads(out)


def _points(env: dict[str, str]) -> tuple[int, int]:
    """(points, distinct ids) in conversations, read after the worker released the folder."""
    out = _python(
        SETUP
        + """
from memory.stores.vectors import CONVERSATIONS, get_vector_store
ids = list(get_vector_store().iter_ids(CONVERSATIONS))
print(len(ids), len(set(ids)))
""",
        env,
    )
    points, distinct = out.split()
    return int(points), int(distinct)


def _start_worker(env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "makilab",
            "worker",
            "--pool",
            "threads",
            "--concurrency",
            "2",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--loglevel",
            "WARNING",
            "--hostname",
            f"test-{uuid.uuid4().hex[:8]}@%h",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_indexed(env: dict[str, str], expected: int, *, timeout: float) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    states: dict[str, int] = {}
    while time.monotonic() < deadline:
        states = _index_states(env)
        if states.get("indexed", 0) >= expected:
            return states
        time.sleep(1)
    return states


def _stop(process: subprocess.Popen, sig: int = signal.SIGTERM) -> str:
    if process.poll() is None:
        process.send_signal(sig)
    try:
        out, _ = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        out, _ = process.communicate()
    return out or ""


@pytest.fixture
def redis_env(tmp_path):
    _require_redis()
    queue = f"makilab-test-{uuid.uuid4().hex[:8]}"
    env = _env(
        tmp_path,
        CELERY_BROKER_URL=f"redis://{REDIS_HOST}:{REDIS_PORT}/{REDIS_DB}",
        MAKILAB_CELERY_QUEUE=queue,
        MAKILAB_CELERY_VISIBILITY_TIMEOUT="5",
    )
    _python(MIGRATE, env)
    return env


def test_a_worker_on_redis_indexes_200_exchanges_each_exactly_once(redis_env):
    worker = _start_worker(redis_env)
    try:
        _save_exchanges(redis_env, 200)
        states = _wait_indexed(redis_env, 400, timeout=240)
    finally:
        log = _stop(worker)
    assert states == {"indexed": 400}, log[-3000:]
    assert _points(redis_env) == (200, 200)


def test_a_worker_killed_mid_batch_loses_nothing_and_duplicates_nothing(redis_env):
    _save_exchanges(redis_env, 250)  # 500 messages queued in Redis, no worker yet
    first = _start_worker(redis_env)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and _index_states(redis_env).get("indexed", 0) < 60:
            time.sleep(0.5)
    finally:
        _stop(first, signal.SIGKILL)
    partial = _index_states(redis_env)
    assert 0 < partial.get("indexed", 0) < 500, partial

    second = _start_worker(redis_env)
    try:
        states = _wait_indexed(redis_env, 500, timeout=300)
    finally:
        log = _stop(second)
    assert states == {"indexed": 500}, log[-3000:]
    assert _points(redis_env) == (250, 250)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_serve(env: dict[str, str], port: int, *args: str) -> subprocess.Popen:
    """`manage.py serve` on ``port`` in a subprocess, its output (stdout + stderr) piped."""
    return subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port), *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_serving(base: str, server: subprocess.Popen | None = None, timeout: float = 90) -> None:
    """Wait until serve at ``base`` answers its login page; fail if ``server`` exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server is not None and server.poll() is not None:
            pytest.fail(f"serve exited:\n{server.communicate()[0][-3000:]}")
        try:
            urllib.request.urlopen(f"{base}/login/", timeout=2)
            return
        except OSError:
            time.sleep(0.3)
    pytest.fail("serve did not start")


def _owner_token(env: dict[str, str], username: str = "owner") -> str:
    """The API token of the superuser serve created from DJANGO_SUPERUSER_USERNAME."""
    return _python(
        SETUP
        + "from rest_framework.authtoken.models import Token; from django.contrib.auth.models import User;"
        f" print(Token.objects.get_or_create(user=User.objects.get(username={username!r}))[0].key)",
        env,
    ).strip()


def _gateway_token(env: dict[str, str]) -> str:
    """A fresh agent token for the gateway, made by `manage.py agent_token` as an operator would."""
    return (
        _python(
            SETUP
            + "from django.core.management import call_command; call_command('agent_token', 'gateway')",
            env,
        )
        .strip()
        .splitlines()[-1]
    )


def _message_state(db: Path, message_id: int) -> str:
    """A message's index_state, read from the SQLite file itself (no Django, any process)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        return conn.execute(
            "SELECT index_state FROM messages WHERE id = ?", (message_id,)
        ).fetchone()[0]


def _wait_message_indexed(db: Path, message_id: int, timeout: float) -> str:
    """The message's index_state once it is indexed, or when ``timeout`` runs out."""
    deadline = time.monotonic() + timeout
    state = _message_state(db, message_id)
    while state != "indexed" and time.monotonic() < deadline:
        time.sleep(0.3)
        state = _message_state(db, message_id)
    return state


def _http(url: str, *, token: str | None = None, data: dict | None = None) -> tuple[int, dict]:
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Token {token}"
    body = None
    if data is not None:
        body = json.dumps(data).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def test_the_embedded_serve_runs_web_worker_and_store_in_one_process(tmp_path):
    """`manage.py serve` as README runs it: a fact posted to the API gets indexed by the
    in-process worker on the embedded Qdrant folder, with no lock error, and SIGTERM stops it."""
    port = _free_port()
    env = _env(
        tmp_path,
        DJANGO_SUPERUSER_USERNAME="owner",
        DJANGO_SUPERUSER_PASSWORD="un-mot-de-passe-solide",
    )
    server = _start_serve(env, port)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_serving(base, server)
        token = _owner_token(env)
        status, body = _http(
            f"{base}/api/memory/facts",
            token=token,
            data={
                "key": "garden",
                "value": "Le potager est derrière la maison",
                "memory_type": "fact",
            },
        )
        assert status == 201, body
        deadline = time.monotonic() + 60
        indexed = 0
        while time.monotonic() < deadline and not indexed:
            status, stats = _http(f"{base}/api/memory/stats", token=token)
            indexed = stats["facts"]["index"].get("indexed", 0)
            time.sleep(0.5)
        assert indexed == 1, stats
        assert stats["vectors"]["collections"]["knowledge"] == 1
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            out, _ = server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            out, _ = server.communicate()
            pytest.fail(f"serve ignored SIGTERM:\n{out[-3000:]}")
    assert server.returncode == 0, out[-3000:]
    assert "Arrêté." in out
    assert "lock" not in out.lower(), out[-3000:]
