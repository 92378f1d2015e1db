"""Fact extraction survives a stop of `serve`: SIGKILL or SIGTERM mid-work, restart, exactly once.

The real `manage.py serve` (embedded defaults, its in-process worker) talks to
the fake Anthropic server of this process. 40 chats are posted over HTTP;
extractions are slow, so most are still waiting when serve is stopped. After a
restart every exchange is extracted, once: one done job per reply and each
fact stored once, however many times the LLM was asked.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.fakes.anthropic import FakeAnthropic, FakeReply, text_message
from tests.memory.test_workers import ROOT, SETUP, _env, _free_port, _http, _python

pytestmark = pytest.mark.slow

CHATS = 40
EXTRACTION_DELAY_S = 0.4


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
        prompt = json.dumps(body.get("messages", []), ensure_ascii=False)
        number = int(re.search(r"numéro (\d+)", prompt).group(1))
        self.extractions[number] = self.extractions.get(number, 0) + 1
        facts = [
            {"key": f"fait_{number}", "value": f"Le fait numéro {number} est vrai", "type": "fact"}
        ]
        reply = text_message(json.dumps({"facts": facts}))
        reply.delay_s = EXTRACTION_DELAY_S
        return reply


def _start(env, port):
    return subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_up(base: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{base}/login/", timeout=2)
            return
        except OSError:
            time.sleep(0.3)
    pytest.fail("serve did not start")


def _state(env) -> dict:
    out = _python(
        SETUP
        + """
import json
from django.db.models import Count
from memory.models import Fact, Job, Message
jobs = dict(Job.objects.filter(kind="extract").values_list("state").annotate(n=Count("id")))
replies = Message.objects.filter(role="assistant").count()
keys = list(Fact.objects.values_list("key", flat=True))
print(json.dumps({"jobs": jobs, "replies": replies, "keys": keys}))
""",
        env,
    )
    return json.loads(out)


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
        MAKILAB_WORKER_THREADS="1",
    )
    base = f"http://127.0.0.1:{port}"
    server = _start(env, port)
    try:
        _wait_up(base)
        token = _python(
            SETUP
            + "from rest_framework.authtoken.models import Token; from django.contrib.auth.models import User;"
            " print(Token.objects.get_or_create(user=User.objects.get(username='owner'))[0].key)",
            env,
        ).strip()
        for i in range(CHATS):
            status, body = _http(
                f"{base}/api/agent/chat",
                token=token,
                data={"channel": "whatsapp", "message": f"Retiens le fait numéro {i}, merci."},
            )
            assert status == 200, body
        server.send_signal(stop)
        server.communicate(timeout=60)
        before = _state(env)
        assert before["replies"] == CHATS
        assert before["jobs"].get("done", 0) < CHATS, "the stop must land before the work is done"

        server = _start(env, port)
        _wait_up(base)
        deadline = time.monotonic() + 180
        state = before
        while time.monotonic() < deadline and state["jobs"].get("done", 0) < CHATS:
            time.sleep(1)
            state = _state(env)
    finally:
        server.send_signal(signal.SIGTERM)
        out, _ = server.communicate(timeout=60)
        fake.stop()
    assert state["jobs"] == {"done": CHATS}, out[-3000:]
    # T1 and Qdrant agree, version by version, after the stop (the folder is free now).
    doctor = subprocess.run(
        [sys.executable, "manage.py", "memory_doctor"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Tout est cohérent." in doctor.stdout, doctor.stdout + doctor.stderr[-2000:]
    assert sorted(state["keys"]) == sorted(f"fait_{i}" for i in range(CHATS))
    assert set(responder.extractions) == set(range(CHATS))
