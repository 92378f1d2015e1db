"""`manage.py benchmark indexing` prints its figures and leaves the owner's memory untouched."""

import re
from io import StringIO

import pytest
from django.core.management import call_command

from memory.models import Message

pytestmark = pytest.mark.django_db(transaction=True)


def test_benchmark_indexing_prints_throughput_and_percentiles_on_a_throwaway_memory(local_embedder):
    Message.objects.create(
        channel="whatsapp", role="user", content="le vrai message du propriétaire"
    )
    out = StringIO()
    call_command(
        "benchmark", "indexing", "--n", "12", "--batch-size", "5", "--per-row", "3", stdout=out
    )
    text = out.getvalue()
    assert "12 exchanges" in text
    assert re.search(r"batched\s+[\d.]+ docs/s", text)
    assert re.search(r"batch\s+p50\s+[\d.]+ ms\s+p95\s+[\d.]+ ms", text)
    assert re.search(r"row\s+p50 .* \(n=3\)", text)
    # The owner's database is back, untouched.
    assert list(Message.objects.values_list("content", flat=True)) == [
        "le vrai message du propriétaire"
    ]


@pytest.mark.slow
def test_benchmark_serve_indexing_feeds_a_real_serve_over_http_until_all_is_indexed(
    local_embedder,
):
    """The real `serve` (its own worker, embedded defaults) on a throw-away data dir:
    every posted message gets indexed, and the rate is printed beside the floor."""
    Message.objects.create(channel="whatsapp", role="user", content="le vrai message")
    out = StringIO()
    call_command("benchmark", "serve-indexing", "--n", "40", stdout=out)
    text = out.getvalue()
    assert re.search(r"floor\s+[\d.]+ rows/s \(embed \+ upsert, batches of 32, 40 texts\)", text)
    assert re.search(r"serve\s+[\d.]+ rows/s \(40 messages posted over HTTP", text)
    assert re.search(r"ratio\s+[\d.]+ of the floor", text)
    assert list(Message.objects.values_list("content", flat=True)) == ["le vrai message"]


def test_benchmark_history_times_the_side_table_operations_at_two_sizes():
    Message.objects.create(channel="whatsapp", role="user", content="le vrai message")
    out = StringIO()
    call_command(
        "benchmark",
        "history",
        "--usage",
        "200",
        "--logs",
        "100",
        "--messages",
        "300",
        "--facts",
        "50",
        "--repeat",
        "2",
        stdout=out,
    )
    text = out.getvalue()
    assert "1x   (usage 20, logs 10, messages 30, facts 5)" in text
    assert "10x  (usage 200, logs 100, messages 300, facts 50)" in text
    for name in ("costs", "injected", "compaction", "text"):
        assert re.search(
            rf"{name}\s+p95\s+[\d.]+ ms at [\d,]+ \w+ → \s*[\d.]+ ms at [\d,]+: ratio", text
        )
    assert list(Message.objects.values_list("content", flat=True)) == ["le vrai message"]
