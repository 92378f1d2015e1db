"""serve's hold on its data folder and what it tells the commands beside it (in process)."""

from __future__ import annotations

import errno
import json
import os
import socket
import stat

import pytest

from memory.services import serve_link
from memory.services.serve_link import (
    ServeAlreadyRunning,
    ServeLock,
    runtime_path,
    secret_matches,
    serve_owning_the_store,
    serve_running,
)


@pytest.fixture
def data_dir(tmp_path, settings):
    settings.DATA_DIR = tmp_path
    settings.QDRANT_URL = ""
    settings.QDRANT_PATH = tmp_path / "qdrant"
    return tmp_path


@pytest.fixture
def held(data_dir):
    lock = ServeLock()
    lock.acquire()
    yield lock
    lock.release()


def test_nothing_runs_without_the_file_or_with_a_free_lock(data_dir):
    assert not serve_running()
    runtime_path().write_text('{"url": "http://127.0.0.1:1/"}')  # left by a crash
    assert not serve_running()
    assert serve_owning_the_store() is None


def test_published_info_is_private_and_leaves_with_serve(held):
    held.publish("http://127.0.0.1:8123/")
    path = runtime_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    info = json.loads(path.read_text())
    assert info["pid"] == os.getpid() and info["url"] == "http://127.0.0.1:8123/"
    assert secret_matches(info["secret"]) and not secret_matches(info["secret"] + "x")
    assert serve_running()
    assert serve_owning_the_store() == info

    held.release()
    assert path.read_text() == ""
    assert not serve_running()
    assert not secret_matches(info["secret"])


def test_a_second_lock_on_the_same_folder_is_refused_with_the_first_ones_address(held):
    held.publish("http://127.0.0.1:8123/")
    with pytest.raises(ServeAlreadyRunning, match=rf"pid {os.getpid()}, http://127.0.0.1:8123/"):
        ServeLock().acquire()


def test_with_a_qdrant_server_every_command_works_on_its_own(held, settings):
    held.publish("http://127.0.0.1:8123/")
    settings.QDRANT_URL = "http://127.0.0.1:6333"
    assert serve_owning_the_store() is None


def test_a_serve_on_another_qdrant_folder_does_not_own_ours(held, settings, tmp_path):
    held.publish("http://127.0.0.1:8123/")
    settings.QDRANT_PATH = tmp_path / "autre"
    assert serve_owning_the_store() is None


def test_a_serve_still_starting_is_waited_for_then_reported(held, monkeypatch):
    monkeypatch.setattr(serve_link, "STARTING_WAIT_S", 0.2)
    with pytest.raises(serve_link.ServeLinkError, match="Le service démarre encore"):
        serve_owning_the_store()


def test_a_restore_is_refused_while_serve_runs_even_forced(held, tmp_path):
    """A restore rewrites the database under the service: serve must be stopped first."""
    from io import StringIO

    from django.core.management import CommandError, call_command

    held.publish("http://127.0.0.1:8123/")
    with pytest.raises(CommandError, match="arrêtez-le avant de restaurer"):
        call_command("memory_restore", str(tmp_path), "--force", stdout=StringIO())


def test_ctrl_c_while_following_a_run_says_it_goes_on_in_serve(monkeypatch):
    calls = []

    def call(info, method, path, body=None):
        calls.append((method, path))
        if method == "GET":
            raise KeyboardInterrupt
        return {"id": "r1", "state": "running", "steps": []}

    monkeypatch.setattr(serve_link, "_call", call)
    monkeypatch.setattr(serve_link, "POLL_INTERVAL_S", 0)
    with pytest.raises(serve_link.ServeLinkError, match="l'opération continue dans le service"):
        serve_link.maintenance_remote({"url": "http://x/"}, "reindex", {})
    assert calls == [
        ("POST", "/api/memory/maintenance/reindex"),
        ("GET", "/api/memory/maintenance/runs/r1"),
    ]


@pytest.mark.parametrize(
    ("host", "published", "reached"),
    [
        ("127.0.0.1", "http://127.0.0.1:8123/", "http://127.0.0.1:8123"),
        ("0.0.0.0", "http://0.0.0.0:8123/", "http://127.0.0.1:8123"),
        ("::", "http://[::]:8123/", "http://[::1]:8123"),
        ("::1", "http://[::1]:8123/", "http://[::1]:8123"),
    ],
)
def test_serve_publishes_a_url_the_commands_reach_on_loopback(host, published, reached):
    """An IPv6 literal is bracketed (``--host ::`` once gave http://:::8123/)."""
    from memory.management.commands.serve import serve_url

    assert serve_url(host, 8123) == published
    assert serve_link._local_base(published) == reached


@pytest.fixture
def refusing_server():
    """A local HTTP server answering every request 400 (or the status it is given) with the
    body it is given."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    answer = {"body": b"", "type": "text/html", "status": 400}

    class Refuse(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(answer["status"])
            self.send_header("Content-Type", answer["type"])
            self.send_header("Content-Length", str(len(answer["body"])))
            self.end_headers()
            self.wfile.write(answer["body"])

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield answer, {"url": f"http://127.0.0.1:{server.server_port}/", "secret": "s"}
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("body", "content_type", "detail"),
    [
        (b"<h1>Bad Request (400)</h1>", "text/html", None),
        (b"", "text/html", None),
        (b'["liste"]', "application/json", None),
        (
            json.dumps({"message": "Données invalides.", "extra": {}}).encode(),
            "application/json",
            "Données invalides.",
        ),
        (
            json.dumps(
                {
                    "message": "Données invalides.",
                    "extra": {
                        "fields": {
                            "batch_size": [
                                "Assurez-vous que cette valeur est inférieure ou égale à 512."
                            ]
                        }
                    },
                }
            ).encode(),
            "application/json",
            "Données invalides. batch_size : Assurez-vous que cette valeur est inférieure ou "
            "égale à 512.",
        ),
    ],
    ids=["html", "empty", "json-not-an-object", "api-message", "api-field-errors"],
)
def test_a_refusal_is_said_in_french_whatever_its_body(refusing_server, body, content_type, detail):
    """serve's JSON says why; any other body gets the French default (None), never
    http.client's English reason ("Bad Request")."""
    answer, info = refusing_server
    answer.update(body=body, type=content_type)
    detail = detail or serve_link.SERVE_REFUSED_UNEXPLAINED
    with pytest.raises(serve_link.ServeLinkError) as refused:
        serve_link._call(info, "GET", "/api/memory/maintenance/runs/r1")
    assert str(refused.value) == serve_link.SERVE_REFUSED_MESSAGE.format(status=400, detail=detail)


def test_an_answer_that_is_not_json_is_said_in_french(refusing_server):
    """A 200 that is not serve's JSON (another program on the port): the json module's
    English ("Expecting value: line 1 column 1 (char 0)") is not shown."""
    answer, info = refusing_server
    answer.update(body=b"<h1>Bonjour</h1>", status=200)
    with pytest.raises(serve_link.ServeLinkError) as unheard:
        serve_link._call(info, "GET", "/api/memory/maintenance/runs/r1")
    url = info["url"].rstrip("/") + "/api/memory/maintenance/runs/r1"
    detail = serve_link.SERVE_NOT_JSON.format(reason="colonne 1 : valeur attendue")
    assert str(unheard.value) == serve_link.SERVE_UNREACHABLE_MESSAGE.format(url=url, detail=detail)


def test_a_serve_gone_is_said_in_french():
    """Nothing listens any more: urllib's "<urlopen error [Errno 111] Connection refused>"
    is not shown."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    info = {"url": f"http://127.0.0.1:{port}/", "secret": "s"}
    with pytest.raises(serve_link.ServeLinkError) as unheard:
        serve_link._call(info, "GET", "/x")
    url = f"http://127.0.0.1:{port}/x"
    message = serve_link.SERVE_UNREACHABLE_MESSAGE.format(url=url, detail="connexion refusée")
    assert str(unheard.value) == message


def test_a_serve_file_the_account_cannot_read_is_said_in_french(data_dir, monkeypatch):
    def refused(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(serve_link.os, "open", refused)
    with pytest.raises(serve_link.ServeLinkError) as unreadable:
        serve_running()
    assert str(unreadable.value) == serve_link.SERVE_FILE_UNREADABLE_MESSAGE.format(
        path=runtime_path(), detail="accès refusé"
    )
