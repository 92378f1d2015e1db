"""The admin shows the digests' trigger and the retrieval log's rows in French."""

from __future__ import annotations

import html

import pytest

from memory.models import Digest, DigestTrigger, MemoryRetrieval

pytestmark = pytest.mark.django_db


def test_the_digest_list_shows_its_trigger_in_french(admin_client):
    Digest.objects.create(trigger=DigestTrigger.MANUAL)
    Digest.objects.create(trigger=DigestTrigger.SCHEDULE)
    page = html.unescape(admin_client.get("/admin/memory/digest/").content.decode())
    assert "Forcée" in page and "Programmée" in page
    assert ">manual<" not in page and ">schedule<" not in page


def test_a_retrieval_logs_row_reads_as_french(admin_client):
    row = MemoryRetrieval.objects.create(channel="whatsapp", message_preview="bonjour")
    page = html.unescape(
        admin_client.get(f"/admin/memory/memoryretrieval/{row.pk}/change/").content.decode()
    )
    assert "Affichage de relevé d'injection" in page
    assert "de injection" not in page
