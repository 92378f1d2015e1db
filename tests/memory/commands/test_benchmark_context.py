"""`manage.py benchmark context`: POST /api/memory/context over HTTP on a throw-away memory."""

import re
import time
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.models import MemoryRetrieval, Message

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_prints_the_data_size_and_the_http_percentiles_leaving_the_memory_untouched(
    local_embedder, settings, monkeypatch
):
    # A rate limit below the number of calls: the benchmark measures the endpoint, not it.
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"user": "3/minute", "anon": "3/minute", "chat": "3/minute"},
    }
    Message.objects.create(channel="whatsapp", role="user", content="le vrai message")
    out = StringIO()
    # The pause is taken before each measured request, not only printed.
    paused = []
    real_sleep = time.sleep

    def sleep(seconds):
        paused.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", sleep)

    call_command(
        "benchmark", "context", "--memories", "40", "--queries", "6", "--gap-ms", "20", stdout=out
    )

    text = out.getvalue()
    assert "seeded 40 memories" in text
    assert re.search(r"data: \d+ messages, \d+ facts, \d+ summaries; Qdrant points .*SQLite", text)
    assert "6 POST /api/memory/context over HTTP (waitress, 4 threads), 20 ms apart" in text
    # Before each request and before each floor embedding: the two sides alike.
    assert paused.count(0.02) == 12
    assert re.search(r"\d+ injected something, \d+ with a failed source", text)
    assert re.search(r"http\s+p50\s+[\d.]+ ms\s+p95\s+[\d.]+ ms.*\(n=6\)", text)
    assert re.search(r"retrieval\s+p50\s+[\d.]+ ms\s+p95\s+[\d.]+ ms.*\(n=6\)", text)
    # The query embedding inside it: what a pause before a message costs shows there.
    assert re.search(r"embed\s+p50\s+[\d.]+ ms\s+p95\s+[\d.]+ ms.*\(n=6\)", text)
    # Its floor, measured in the same run after the same pause, and the ratios to it.
    floor = re.search(
        r"embedding\s+p50\s+([\d.]+) ms\s+p95\s+([\d.]+) ms.*\(n=6\)"
        r"  \(bare query embedding 20 ms after the last, floor\)",
        text,
    )
    assert floor
    http = re.search(r"http\s+p50\s+([\d.]+) ms\s+p95\s+([\d.]+) ms", text)
    ratio = re.search(r"ratio     http / embedding: p50 ([\d.]+)x  p95 ([\d.]+)x", text)
    assert ratio
    for q in (1, 2):  # the ratio is the one the printed percentiles give
        assert float(ratio[q]) == pytest.approx(float(http[q]) / float(floor[q]), abs=0.02)
    assert re.search(r"ratio     retrieval / embedding: p50 [\d.]+x  p95 [\d.]+x", text)
    assert re.search(r"rest\s+p50\s+[\d.]+ ms.*\(n=6\)  \(http minus", text)
    # The owner's database is back, untouched: no seeded row, no logged retrieval.
    assert list(Message.objects.values_list("content", flat=True)) == ["le vrai message"]
    assert not MemoryRetrieval.objects.exists()


def test_a_size_below_one_is_refused_in_french():
    with pytest.raises(CommandError, match="doivent être au moins 1"):
        call_command("benchmark", "context", "--queries", "0", stdout=StringIO())


def test_a_negative_pause_is_refused_in_french():
    with pytest.raises(CommandError, match="--gap-ms ne peut pas être négatif"):
        call_command("benchmark", "context", "--gap-ms", "-1", stdout=StringIO())


def test_the_server_polls_as_waitress_run_does_not_more_often(local_embedder, monkeypatch):
    # A poll every 50 ms woke the server's thread during the query embeddings and
    # slowed them (their p95 after a pause 44.8 ms against 29.9): the benchmark's server
    # must wake as `serve`'s does, once per asyncore_loop_timeout when nothing happens.
    import waitress.server

    timeouts = []
    real_loop = waitress.server.wasyncore.loop

    def loop(*args, timeout, **kwargs):
        timeouts.append(timeout)
        return real_loop(*args, timeout=timeout, **kwargs)

    monkeypatch.setattr(waitress.server.wasyncore, "loop", loop)
    call_command("benchmark", "context", "--memories", "20", "--queries", "2", stdout=StringIO())

    assert timeouts
    assert set(timeouts) == {waitress.server.Adjustments().asyncore_loop_timeout}
