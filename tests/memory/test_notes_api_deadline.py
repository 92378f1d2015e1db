"""The Obsidian Local REST API within OBSIDIAN_TIMEOUT_S in all: a server sending its
answer a byte at a time is cut at the notes' timeout, a note is read only as far as
it is used, and an answer other than 2xx is an error, never a note."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from pathlib import Path

import pytest
import trustme
from django.test import override_settings

from memory.exceptions import StoreUnavailable
from memory.models import MemorySettings
from memory.services.notes import notes_cache_clear
from memory.stores import notes_rest_api
from memory.stores.notes import MSG_HTTP_ERROR, MSG_TIMEOUT
from memory.stores.notes_rest_api import LocalRestApiProvider
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db

TIMEOUT = 0.3
# Well under the 10 s the trickling body lasts, well over TIMEOUT: a generous bound.
CUT_WITHIN = 5.0


class RawServer:
    """HTTPS on 127.0.0.1 answering every request with `head`, then `body` one byte every
    `gap` seconds, then holding the connection open until stopped."""

    def __init__(self, ca: trustme.CA, *, head: bytes, body: bytes, gap: float = 0.0) -> None:
        self.head, self.body, self.gap = head, body, gap
        self.stop = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ca.issue_cert("127.0.0.1").configure_cert(self.context)
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        try:
            with self.context.wrap_socket(conn, server_side=True) as tls:
                tls.recv(65536)
                tls.sendall(self.head)
                if self.gap:
                    for byte in self.body:
                        if self.stop.wait(self.gap):
                            return
                        tls.sendall(bytes([byte]))
                else:
                    tls.sendall(self.body)
                self.stop.wait(30)
        except OSError:
            pass

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


def ok_head(length: int) -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Type: text/markdown\r\nContent-Length: {length}\r\n\r\n".encode()


@pytest.fixture(scope="module")
def ca():
    return trustme.CA()


@pytest.fixture
def ca_file(ca, tmp_path) -> Path:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


@pytest.fixture
def serve(ca):
    servers: list[RawServer] = []

    def start(**kwargs) -> RawServer:
        servers.append(RawServer(ca, **kwargs))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def trickling(serve) -> RawServer:
    """A 200 whose 100-byte body takes 10 s to arrive."""
    return serve(head=ok_head(100), body=b"x" * 100, gap=0.1)


def provider_of(server: RawServer, ca_file: Path) -> LocalRestApiProvider:
    return LocalRestApiProvider(server.url, "cle-secrete", ca_cert=str(ca_file), timeout=TIMEOUT)


def test_a_trickling_answer_is_cut_at_the_notes_timeout(trickling, ca_file):
    provider = provider_of(trickling, ca_file)
    started = time.monotonic()

    with pytest.raises(StoreUnavailable) as excinfo:
        provider.read("Profil.md")

    assert time.monotonic() - started < CUT_WITHIN
    assert str(excinfo.value) == MSG_TIMEOUT.format(seconds=TIMEOUT)
    provider.close()


def test_the_notes_section_is_not_held_by_a_trickling_api(staff_client, trickling, ca_file):
    notes_cache_clear()
    MemorySettings.objects.update_or_create(
        pk=MemorySettings.SINGLETON_ID,
        defaults={"obsidian_context_notes": ["Profil.md"], "obsidian_context_tag": "makilab"},
    )
    started = time.monotonic()

    with override_settings(
        OBSIDIAN_API_URL=trickling.url,
        OBSIDIAN_API_KEY="cle-secrete",
        OBSIDIAN_CA_CERT=str(ca_file),
        OBSIDIAN_TIMEOUT_S=TIMEOUT,
    ):
        response = staff_client.get("/memory/notes/", **HTMX)
    notes_cache_clear()

    assert time.monotonic() - started < CUT_WITHIN
    assert response.status_code == 200
    assert "Obsidian ne répond pas" in response.content.decode()


def test_a_note_is_read_only_as_far_as_it_is_used(serve, ca_file, monkeypatch):
    """The server announces far more than it sends, then waits: the note is cut at
    MAX_NOTE_BYTES at once instead of waiting for the rest."""
    monkeypatch.setattr(notes_rest_api, "MAX_NOTE_BYTES", 1000)
    server = serve(head=ok_head(10**8), body=b"y" * 1500)
    provider = provider_of(server, ca_file)

    note = provider.read("Grosse.md")

    assert note.content == "y" * 1000
    provider.close()


@pytest.mark.parametrize("status", [301, 302, 304])
def test_an_answer_other_than_2xx_is_an_error_not_a_note(serve, ca_file, status):
    head = f"HTTP/1.1 {status} Moved\r\nLocation: /ailleurs\r\nContent-Length: 5\r\n\r\n"
    server = serve(head=head.encode(), body=b"autre")
    provider = provider_of(server, ca_file)

    with pytest.raises(StoreUnavailable) as excinfo:
        provider.read("Profil.md")

    assert str(excinfo.value) == MSG_HTTP_ERROR.format(status=status)
    provider.close()
