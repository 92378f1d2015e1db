"""QA: a Redis broker that stops for a moment must only delay `serve`'s work, never stop it.

`serve --worker yes` with CELERY_BROKER_URL=redis://… runs the Celery worker in its own
process. When the Redis broker goes away and comes back, the worker must reconnect:
a message accepted (201) after Redis is back must be indexed. Observed: the embedded
worker logs « Unrecoverable error: AttributeError('NoneType' object has no attribute
'hostname') » when the connection drops, and never consumes again, while `serve` keeps
answering 201: every later message stays pending until someone restarts `serve`.

The worker dies when the connection drops while it holds an unacknowledged task (the
tasks are acked late): here an extraction whose LLM answer is slow, running as Redis stops
(a busy index batch retried with a countdown does the same: « Restoring 1 unacknowledged
message(s) » then the crash).

The test runs its own redis-server on a free port (never the shared one), so stopping
it disturbs nobody.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest

from tests.fakes.anthropic import FakeAnthropic, text_message
from tests.memory.test_workers import (
    _env,
    _free_port,
    _gateway_token,
    _http,
    _redis_up,
    _start_serve,
    _stop,
    _wait_message_indexed,
    _wait_serving,
)

pytestmark = pytest.mark.slow


def _redis_start(port: int, tmp_path) -> subprocess.Popen:
    process = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if _redis_up(port):
            return process
        time.sleep(0.1)
    pytest.fail("redis-server did not start")


def test_serve_on_redis_keeps_indexing_after_the_broker_comes_back(tmp_path):
    if not shutil.which("redis-server") or not shutil.which("redis-cli"):
        pytest.skip("redis-server is not installed")
    fake = FakeAnthropic().start()

    def respond(body):
        reply = text_message(
            json.dumps(
                {
                    "facts": [
                        {
                            "key": "volcan",
                            "value": "Le volcan de l'île est en éruption",
                            "type": "fact",
                        }
                    ]
                }
            )
        )
        reply.delay_s = 8  # the extraction is still running when the broker stops
        return reply

    fake.handler = respond
    redis_port, port = _free_port(), _free_port()
    redis = _redis_start(redis_port, tmp_path)
    env = _env(
        tmp_path,
        CELERY_BROKER_URL=f"redis://127.0.0.1:{redis_port}/0",
        MAKILAB_LOG_LEVEL="INFO",
        ANTHROPIC_API_KEY=fake.api_key,
        ANTHROPIC_BASE_URL=fake.url,
        ANTHROPIC_MODEL="claude-sonnet-4-6",
    )
    token = None
    db = tmp_path / "makilab.sqlite3"
    base = f"http://127.0.0.1:{port}"
    server = _start_serve(env, port, "--worker", "yes")
    try:
        _wait_serving(base, server)
        token = _gateway_token(env)
        status, body = _http(
            f"{base}/api/v1/memory/messages",
            token=token,
            data={
                "messages": [
                    {
                        "channel": "whatsapp",
                        "role": "user",
                        "content": "Le volcan de l'île est entré en éruption.",
                    },
                    {"channel": "whatsapp", "role": "assistant", "content": "C'est noté."},
                ]
            },
        )
        assert status == 201, body
        first = body["message_ids"][0]
        assert _wait_message_indexed(db, first, 60) == "indexed"
        deadline = time.monotonic() + 60  # a bound, not a measure: a loaded CI took over 20 s
        while not fake.requests and time.monotonic() < deadline:
            time.sleep(0.1)
        assert fake.requests, "the extraction never started"

        # The broker stops for a few seconds, then comes back on the same port.
        subprocess.run(
            ["redis-cli", "-p", str(redis_port), "shutdown", "nosave"], capture_output=True
        )
        redis.wait(timeout=10)
        time.sleep(5)
        redis = _redis_start(redis_port, tmp_path)
        time.sleep(5)

        status, body = _http(
            f"{base}/api/v1/memory/messages",
            token=token,
            data={"channel": "whatsapp", "content": "Les girafes du zoo ont eu un petit."},
        )
        assert status == 201, body
        after = body["message_ids"][0]
        state = _wait_message_indexed(db, after, 90)
    finally:
        log = _stop(server)
        redis.terminate()
        redis.wait(timeout=10)
        fake.stop()
    assert state == "indexed", (
        f"a message accepted after the broker came back is still {state!r}: the embedded "
        f"worker stopped consuming\n"
        + "\n".join(
            line for line in log.splitlines() if "Unrecoverable" in line or "broker" in line
        )[-2000:]
    )
