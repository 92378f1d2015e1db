"""A retrieval source that failed with an error is said on /memory in French (QA 3b:
« Sources indisponibles : sémantique (erreur : StoreUnavailable: …) »): the memory's own
message, or a French note for any other error; never a Python class name."""

from __future__ import annotations

import html
import re

import pytest

from dashboard.templatetags.dashboard_labels import failure_said
from memory.exceptions import StoreUnavailable
from memory.models import MemoryRetrieval
from memory.services.retrieval.result import MSG_SOURCE_FAILED, failure_text
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db


class ConnectError(Exception):
    """As httpx names a refused connection to a Qdrant server."""


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", fragment))


def _unavailable(text: str) -> str:
    return text[text.index("Sources indisponibles") :][:400]


def _row(failed_sources: dict[str, str]) -> MemoryRetrieval:
    return MemoryRetrieval.objects.create(
        channel="whatsapp",
        message_preview="Comment va mon épaule ?",
        memories=[],
        notes=[],
        tokens_added=0,
        timings_ms={},
        total_ms=3.0,
        failed_sources=failed_sources,
    )


def test_the_log_says_a_failed_source_in_french_without_a_class_name(staff_client):
    _row(
        {
            "semantic": failure_text(StoreUnavailable("La base vectorielle ne répond pas.")),
            "live": failure_text(ConnectError("[Errno 111] Connection refused")),
        }
    )

    said = _unavailable(_text(staff_client.get("/memory/retrieval/", **HTMX).content.decode()))

    assert "sémantique (erreur : La base vectorielle ne répond pas.)" in said, said
    assert f"(erreur : {MSG_SOURCE_FAILED})" in said, said
    for technical in ("StoreUnavailable", "ConnectError", "Connection refused"):
        assert technical not in said, said


def test_a_row_logged_before_with_a_class_name_is_said_without_it(staff_client):
    """Rows written before the failure text was French hold « ClassName: message »."""
    _row(
        {
            "semantic": "StoreUnavailable: La base vectorielle ne répond pas.",
            "live": "ConnectError: [Errno 111] Connection refused",
        }
    )

    said = _unavailable(_text(staff_client.get("/memory/retrieval/", **HTMX).content.decode()))

    assert "sémantique (erreur : La base vectorielle ne répond pas.)" in said, said
    for technical in ("StoreUnavailable", "ConnectError", "Connection refused"):
        assert technical not in said, said


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("timeout after 800 ms", "pas de réponse en 800 ms"),
        ("timeout", "pas de réponse à temps"),
        ("La base vectorielle ne répond pas.", "erreur : La base vectorielle ne répond pas."),
        ("EmbeddingError: Voyage ne répond pas.", "erreur : Voyage ne répond pas."),
        ("ReadTimeout: timed out", f"erreur : {MSG_SOURCE_FAILED}"),
        ("KeyError: 'hits'", f"erreur : {MSG_SOURCE_FAILED}"),
        ("", "erreur"),
    ],
)
def test_failure_said_reads_every_stored_form_in_french(stored, shown):
    assert failure_said(stored) == shown


def test_the_preview_says_a_vector_store_outage_in_french_without_a_class_name(
    staff_client, settings, vector_store, local_embedder, monkeypatch
):
    """A Qdrant server restarting refuses at once, not after the time limit."""
    # Time limits a cold model's first query cannot reach: the refusal is what is said.
    settings.RETRIEVAL_TIMEOUTS_MS = {**settings.RETRIEVAL_TIMEOUTS_MS, "semantic": 60_000}

    def down(*args, **kwargs):
        raise StoreUnavailable("La base vectorielle ne répond pas.")

    monkeypatch.setattr(type(vector_store), "search", down)

    response = staff_client.get(
        "/memory/retrieval/preview/",
        {"message": "Je fais de l'escalade quel soir déjà ?", "channel": "dashboard"},
        **HTMX,
    )

    said = _unavailable(_text(response.content.decode()))
    assert "sémantique (erreur : La base vectorielle ne répond pas.)" in said, said
    assert "StoreUnavailable" not in said, said
