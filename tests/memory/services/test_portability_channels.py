"""An export carries which rooms are observed, and an import gives it back (QA).

The export held an observed room's messages (``observed: true``) but not the room's setting
(``PUT /channels/<channel> {"observed": true}``): imported into an empty memory, the room was
no longer observed, so the agent would answer there again and the digest listed no room.
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memory.models import ChannelSettings, Message
from memory.services.channels import channel_is_observed, channel_settings_set

pytestmark = pytest.mark.django_db


def _export(tmp_path) -> list[dict]:
    path = tmp_path / "memoire.jsonl"
    call_command("memory_export", str(path), stdout=StringIO())
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _import(tmp_path, records: list[dict]) -> str:
    path = tmp_path / "import.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    out = StringIO()
    call_command("memory_import", str(path), stdout=out, stderr=StringIO())
    return out.getvalue()


def test_an_observed_room_stays_observed_through_an_export_and_an_import(tmp_path, agent_api):
    channel_settings_set(channel="salon-famille", observed=True)
    channel_settings_set(channel="sms", observed=False)
    answer = agent_api.post(
        "/api/v1/memory/messages",
        {"channel": "salon-famille", "author": "Paul", "content": "Repas de Noël chez mamie"},
        format="json",
    )
    assert answer.status_code in (200, 201), answer.content
    records = _export(tmp_path)
    assert {"type": "channel", "channel": "salon-famille", "observed": True} in records
    assert {"type": "channel", "channel": "sms", "observed": False} in records

    Message.all_objects.all().delete()
    ChannelSettings.objects.all().delete()
    said = _import(tmp_path, records)

    assert Message.all_objects.get().observed is True
    assert channel_is_observed("salon-famille") and not channel_is_observed("sms")
    assert "canal « salon-famille » observé" in said, said


def test_the_files_setting_is_applied_like_the_other_settings(tmp_path):
    """As a settings line is: the file's choice, reported among the settings changed; a
    file from before channel lines changes nothing."""
    channel_settings_set(channel="salon-famille", observed=True)
    records = _export(tmp_path)
    channel_settings_set(channel="salon-famille", observed=False)

    assert "canal « salon-famille » observé" in _import(tmp_path, records)
    assert channel_is_observed("salon-famille")
    assert "canal" not in _import(tmp_path, records)  # already so: nothing to say

    older = [r for r in records if r.get("type") != "channel"]
    channel_settings_set(channel="salon-famille", observed=False)
    _import(tmp_path, older)
    assert not channel_is_observed("salon-famille")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ({"type": "channel", "channel": "bad channel/..", "observed": True}, "Le canal doit"),
        ({"type": "channel", "channel": "sms", "observed": "oui"}, "« observed » : true ou"),
        ({"type": "channel", "channel": "sms"}, "champ « observed » manquant"),
    ],
)
def test_a_bad_channel_line_is_a_line_error(tmp_path, line, expected):
    header = _export(tmp_path)[0]
    with pytest.raises(CommandError, match="ligne 2 : .*" + expected):
        _import(tmp_path, [header, line])
    assert not ChannelSettings.objects.exists()
