"""What a retrieval source's failure leaves in the result, the log row and the API
(``failed_sources``): French words the owner can read, never a Python class name; the
error itself, class included, goes to the service log."""

from __future__ import annotations

import logging

from memory.exceptions import EmbeddingError, StoreUnavailable
from memory.services.retrieval.result import MSG_SOURCE_FAILED, failure_text


class ConnectError(Exception):
    """As httpx names a refused connection to a Qdrant server."""


def test_a_memory_service_error_is_said_by_its_own_message():
    said = failure_text(StoreUnavailable("La base vectorielle ne répond pas."))

    assert said == "La base vectorielle ne répond pas."


def test_a_subclass_of_a_memory_service_error_is_said_by_its_own_message_too():
    said = failure_text(EmbeddingError("Le service de plongement ne répond pas."))

    assert said == "Le service de plongement ne répond pas."


def test_any_other_error_is_said_by_a_french_note_without_its_class_or_text():
    said = failure_text(ConnectError("[Errno 111] Connection refused"))

    assert said == MSG_SOURCE_FAILED
    assert "ConnectError" not in said and "refused" not in said


def test_a_memory_service_error_without_a_message_is_said_by_the_french_note():
    assert failure_text(StoreUnavailable()) == MSG_SOURCE_FAILED


def test_the_error_with_its_class_goes_to_the_service_log(caplog):
    with caplog.at_level(logging.WARNING, logger="memory.services.retrieval.result"):
        failure_text(ConnectError("[Errno 111] Connection refused"))

    assert "ConnectError: [Errno 111] Connection refused" in caplog.text


def test_a_long_message_is_cut_to_what_the_log_row_keeps():
    assert len(failure_text(StoreUnavailable("é" * 1000))) == 300
