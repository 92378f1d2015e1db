"""Another process (``memory_import``) holding SQLite's write lock past the busy timeout:
the API answers a French 503 "réessayez" with Retry-After, the pages a French 503 page,
never a 500 (makilab.database_busy)."""

from __future__ import annotations

import re
import sqlite3

import pytest
from django.db import OperationalError, connection

from makilab.database_busy import DATABASE_BUSY_MESSAGE, RETRY_AFTER_S, database_busy
from tests.memory.api.conftest import owner_api  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

SHORT_BUSY_TIMEOUT_MS = 300


@pytest.fixture
def command_holds_the_write_lock():
    """A second SQLite connection (another process, as far as SQLite knows) takes the
    write lock and keeps it; this process waits a short busy timeout, not 20 s."""
    saved = connection.settings_dict["OPTIONS"]
    connection.close()
    connection.settings_dict["OPTIONS"] = {
        **saved,
        "timeout": SHORT_BUSY_TIMEOUT_MS / 1000,
        "init_command": re.sub(
            r"busy_timeout=\d+", f"busy_timeout={SHORT_BUSY_TIMEOUT_MS}", saved["init_command"]
        ),
    }
    other = sqlite3.connect(connection.settings_dict["NAME"], timeout=5)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.rollback()
        other.close()
        connection.close()
        connection.settings_dict["OPTIONS"] = saved


@pytest.mark.parametrize(
    ("method", "url", "body"),
    [
        ("post", "/api/memory/messages", {"channel": "gateway", "content": "J'ai un nouveau vélo"}),
        ("post", "/api/memory/facts", {"key": "velo", "value": "un vélo rouge"}),
        ("patch", "/api/memory/settings", {"max_results": 5}),
    ],
)
def test_a_write_refused_by_a_locked_database_is_a_french_503_to_retry(
    owner_api,  # noqa: F811
    command_holds_the_write_lock,
    method,
    url,
    body,
):
    owner_api.raise_request_exception = False
    response = getattr(owner_api, method)(url, body, format="json")
    assert response.status_code == 503, response.content[:500]
    assert response.json() == {"message": DATABASE_BUSY_MESSAGE, "extra": {}}
    assert response["Retry-After"] == str(RETRY_AFTER_S)


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user(username="ancien", password=None)


@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
def test_a_memory_page_write_refused_by_a_locked_database_is_a_french_503_page(
    staff_client, command_holds_the_write_lock, htmx
):
    staff_client.raise_request_exception = False
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    response = staff_client.post(
        "/memory/facts/",
        {"key": "velo", "value": "un vélo rouge", "memory_type": "fact"},
        **headers,
    )
    assert response.status_code == 503, response.content[:500]
    assert DATABASE_BUSY_MESSAGE in response.content.decode()
    assert response["Retry-After"] == str(RETRY_AFTER_S)


def test_an_admin_write_refused_by_a_locked_database_is_a_french_503_page(
    staff_client, other_user, command_holds_the_write_lock
):
    staff_client.raise_request_exception = False
    response = staff_client.post(f"/admin/auth/user/{other_user.pk}/delete/", {"post": "yes"})
    assert response.status_code == 503, response.content[:500]
    assert "Base occupée" in response.content.decode()
    assert DATABASE_BUSY_MESSAGE in response.content.decode()


def test_only_sqlites_lock_means_try_again():
    """Any other database error stays a fault (a 500 in the log), never a 503 to retry."""
    assert database_busy(OperationalError("database is locked"))
    assert database_busy(OperationalError("database table is locked: core_memory"))
    assert not database_busy(OperationalError("no such table: core_memory"))
    assert not database_busy(ValueError("database is locked"))
