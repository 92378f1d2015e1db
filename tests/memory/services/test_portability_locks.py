"""An export being read (a slow download) never holds the write lock: the service keeps writing."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from memory.models import Message
from memory.services.messages import message_save
from memory.services.portability import export_lines

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_paused_export_does_not_block_a_writer():
    for i in range(5):
        message_save(channel="whatsapp", role="user", content=f"Message {i}")
    lines = export_lines()
    assert next(lines).startswith('{"format":"makilab-memory"')
    assert '"type":"settings"' in next(lines)
    assert '"type":"context_notes"' in next(lines)
    assert '"type":"message"' in next(lines)  # the export is mid-table, paused

    done = threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        try:
            message_save(channel="whatsapp", role="user", content="Écrit pendant l'export")
            done.set()
        except BaseException as exc:  # reported to the test thread
            errors.append(exc)
        finally:
            connection.close()

    writer = threading.Thread(target=write)
    writer.start()
    writer.join(timeout=5)
    assert done.is_set() and not errors, errors or "the writer waited for the export's lock"
    rest = list(lines)
    assert sum('"type":"message"' in line for line in rest) >= 4
    assert Message.objects.count() == 6
