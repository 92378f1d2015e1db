"""An export of what a memory stored before today's rules imports back, repaired (review).

Until these rules the API stored a fact's channel of any shape (the older import, a
summary's too) and a value or subject of
characters nobody sees, the older import a fact updated before it existed, and the
compaction dated a summary by its messages' ids (a message recorded late ended its period
before it started). The memory still holds them; its export, its own history, must import
into a new install: each is fitted to the rules as it is read, and the report says when the
owner's text changed.
"""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from agent.compaction import channel_compact
from memory.models import Fact, Message, Summary
from memory.models.rules import BAD_CHANNEL
from memory.services.messages import message_save
from memory.services.portability_legacy import channel_repaired
from tests.fakes.anthropic import text_message
from tests.memory.commands.test_import_bad_values import HEADER, _fact

pytestmark = pytest.mark.django_db


def _round_trip(tmp_path) -> str:
    """Export, empty the memory, import the file: the import's report."""
    path = tmp_path / "export.jsonl"
    call_command("memory_export", str(path), stdout=StringIO())
    Fact.all_objects.all().delete()
    Summary.all_objects.all().delete()
    Message.all_objects.all().delete()
    out = StringIO()
    call_command("memory_import", str(path), stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.mark.parametrize(
    ("fields", "repaired", "said"),
    [
        (
            {"channel": "famille / perso"},
            {"channel": "famille-perso"},
            "le canal « famille / perso » devient « famille-perso »",
        ),
        ({"channel": "///"}, {"channel": ""}, "le canal « /// » est retiré"),
        ({"value": "\u200b"}, {"value": "U+200B"}, "elle les nomme : « U+200B »"),
        ({"subjects": ["velo", "\u2060", "Velo"]}, {"subjects": ["velo"]}, ""),
    ],
    ids=["channel", "channel-of-nothing", "value", "subjects"],
)
def test_a_fact_stored_before_the_rules_comes_back_fitted_to_them(tmp_path, fields, repaired, said):
    # Stored as the API stored it before the rules (no model check on this path).
    Fact.objects.create(key="velo", **({"value": "Le vélo est gris"} | fields))

    report = _round_trip(tmp_path)

    fact = Fact.objects.get(key="velo")
    assert {name: getattr(fact, name) for name in repaired} == repaired
    assert said in report, report


def test_a_fact_the_older_import_dated_updated_before_it_existed_comes_back_written_then(
    tmp_path,
):
    fact = Fact.objects.create(key="velo", value="Le vélo est gris")
    created = fact.updated_at - timedelta(days=1)
    Fact.all_objects.filter(pk=fact.pk).update(
        created_at=created, updated_at=fact.updated_at - timedelta(days=30)
    )
    _round_trip(tmp_path)
    fact = Fact.objects.get(key="velo")
    assert fact.created_at == created and fact.updated_at == created


def test_a_summary_of_messages_recorded_late_is_dated_by_them_and_imports_back(
    tmp_path, vector_store, local_embedder, fake_anthropic, settings
):
    """The compaction dated its summary from its first message by id to its last: with
    messages recorded late (the API's timestamp, an older import) its period ended before
    it started, and the export of the memory was refused whole."""
    settings.AGENT_COMPACTION_THRESHOLD = 10
    settings.AGENT_COMPACTION_KEEP_LAST = 4
    settings.AGENT_COALESCE_SECONDS = 0
    now = timezone.now()
    message_save(channel="whatsapp", role="user", content="Message du jour")
    for i in range(12):  # recorded after it, dated two days before it
        message_save(
            channel="whatsapp",
            role="user" if i % 2 == 0 else "assistant",
            content=f"Message ancien {i}",
            created_at=now - timedelta(days=2) + timedelta(minutes=i),
        )
    fake_anthropic.script(text_message("Le propriétaire a parlé de ses anciens messages."))
    summary = channel_compact(channel="whatsapp")
    assert summary.period_start <= summary.period_end
    assert summary.period_end >= now - timedelta(seconds=5)  # the newest of them

    _round_trip(tmp_path)
    assert Summary.all_objects.count() == 1


def test_an_older_exports_summary_period_given_backwards_is_read_as_the_period_between(
    tmp_path,
):
    now = timezone.now()
    Summary.objects.create(
        channel="whatsapp",
        content="Un résumé",
        message_count=3,
        period_start=now - timedelta(days=1),
        period_end=now - timedelta(days=9),
    )
    _round_trip(tmp_path)
    summary = Summary.objects.get()
    assert summary.period_end - summary.period_start == timedelta(days=8)


@pytest.mark.parametrize(
    ("channel", "expected"),
    [("famille / perso", "famille-perso"), ("a" * 80, "a" * 64), ("__..__", ""), ("sms", "sms")],
)
def test_a_channel_is_repaired_to_the_closest_one_of_the_rule(channel, expected):
    assert channel_repaired(channel) == expected


def test_a_bad_channel_in_a_file_is_repaired_and_said(tmp_path):
    fact = _fact(channel="bad channel/..", revisions=[])
    path = tmp_path / "f.jsonl"
    path.write_text(json.dumps(HEADER) + "\n" + json.dumps(fact) + "\n", encoding="utf-8")
    out = StringIO()
    call_command("memory_import", str(path), stdout=out, stderr=StringIO())
    assert Fact.objects.get(key="velo").channel == "bad-channel"
    assert "« bad channel/.. » devient « bad-channel »" in out.getvalue()


def test_reimporting_its_own_export_reports_no_change_for_a_legacy_fact(tmp_path):
    """Review: the repair was reported before the import knew whether it wrote the fact,
    and the repaired value, compared with the stored one, made a false conflict."""
    # Stored as the API stored it before the rules (no model check on this path).
    Fact.objects.create(key="velo", value="\u200b", channel="famille / perso")
    path = tmp_path / "export.jsonl"
    call_command("memory_export", str(path), stdout=StringIO())

    out = StringIO()
    call_command("memory_import", str(path), stdout=out, stderr=StringIO())
    report = out.getvalue()

    fact = Fact.objects.get(key="velo")
    assert (fact.value, fact.channel) == ("\u200b", "famille / perso")  # left as it was
    assert "1 déjà présent" in report
    assert "conflit" not in report.split("Import terminé")[0], report


def _summary_line(channel: str) -> dict:
    return {
        "type": "summary",
        "channel": channel,
        "content": "Résumé de la semaine",
        "message_count": 2,
        "period_start": "2026-11-01T10:00:00+00:00",
        "period_end": "2026-11-01T11:00:00+00:00",
        "created_at": "2026-11-01T12:00:00+00:00",
    }


def _import_lines(tmp_path, *lines: dict) -> str:
    path = tmp_path / "f.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (HEADER, *lines)), encoding="utf-8")
    out = StringIO()
    call_command("memory_import", str(path), stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.mark.parametrize(
    ("channel", "repaired"),
    [("a b/c", "a-b-c"), ("é" * 70, "é" * 64)],
    ids=["symbols", "too-long"],
)
def test_a_summarys_bad_channel_in_a_file_is_repaired_and_said(tmp_path, channel, repaired):
    """QA: « a b/c » was stored as is, without a word: a summary in a channel no message,
    search filter or context call can ever name."""
    report = _import_lines(tmp_path, _summary_line(channel))

    assert Summary.objects.get().channel == repaired
    said = f"résumé du 2026-11-01T12:00:00+00:00 : le canal « {channel} » devient « {repaired} »."
    assert said in report, report


@pytest.mark.parametrize("channel", ["", "///"])
def test_a_summary_whose_channel_leaves_nothing_is_refused(tmp_path, channel):
    """A summary is a channel's: none is left to store it under."""
    with pytest.raises(CommandError) as refused:
        _import_lines(tmp_path, _summary_line(channel))

    assert f"champ « channel » : {BAD_CHANNEL}" in str(refused.value)
    assert not Summary.all_objects.exists()


def test_reimporting_its_own_export_keeps_a_legacy_summary_without_a_copy(tmp_path):
    """Matched under the file's own channel, as a legacy fact is: no repaired twin."""
    Summary.objects.create(channel="a b/c", content="Un résumé", message_count=2)
    path = tmp_path / "export.jsonl"
    call_command("memory_export", str(path), stdout=StringIO())

    out = StringIO()
    call_command("memory_import", str(path), stdout=out, stderr=StringIO())

    assert list(Summary.all_objects.values_list("channel", flat=True)) == ["a b/c"]
    assert "devient" not in out.getvalue()


def test_a_revisions_unreadable_changes_are_dropped_and_said(tmp_path):
    """QA: the import took a revision's changes of any shape, and the fact's history on
    /memory showed « zzz : 1 → 2 » and « expiration : notadate → 5 »."""
    revision = {
        "actor": "user",
        "reason": "edited",
        "old_value": "Le vélo est gris",
        "new_value": "Le vélo est gris",
        "changes": {"importance": [0.5, 0.9], "zzz": [1, 2], "expires_at": "notadate"},
        "note": "",
        "created_at": "2026-01-01T10:00:00+00:00",
    }
    path = tmp_path / "f.jsonl"
    path.write_text(
        json.dumps(HEADER) + "\n" + json.dumps(_fact(revisions=[revision])) + "\n",
        encoding="utf-8",
    )
    out = StringIO()
    call_command("memory_import", str(path), stdout=out, stderr=StringIO())

    [line] = Fact.objects.get(key="velo").revisions.all()
    assert line.changes == {"importance": [0.5, 0.9]}
    assert "changements illisibles retirés (zzz, expires_at)" in out.getvalue()
