"""QA: a Qdrant folder that becomes unwritable must delay indexing, not kill `serve`.

README: « a store that is down only delays (the row stays pending) ». Here the embedded
Qdrant folder's collections are made unwritable while `serve` runs (as root, chmod does
not stop root: the immutable attribute does, `chattr -R +i`). The next message's indexing
writes to the collection: `serve` dies with « Fatal Python error: Bus error » (exit 135,
SIGBUS inside the Qdrant Edge upsert), taking the web API down with it, instead of
leaving the row pending and answering on. (Nothing is lost: a restart once the folder is
writable again indexes the row.)

Needs root with CAP_LINUX_IMMUTABLE (skipped otherwise).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.request

import pytest

from tests.memory.test_workers import (
    _env,
    _free_port,
    _gateway_token,
    _http,
    _message_state,
    _start_serve,
    _stop,
    _wait_message_indexed,
    _wait_serving,
)

pytestmark = pytest.mark.slow


def _chattr(flag: str, paths) -> bool:
    return all(
        subprocess.run(["chattr", "-R", flag, str(p)], capture_output=True).returncode == 0
        for p in paths
    )


def test_serve_survives_a_qdrant_folder_that_becomes_unwritable(tmp_path):
    if os.geteuid() != 0 or not shutil.which("chattr"):
        pytest.skip("needs root and chattr")
    probe = tmp_path / "probe"
    probe.write_text("x")
    if not _chattr("+i", [probe]):
        pytest.skip("the immutable attribute is not available here")
    _chattr("-i", [probe])

    port = _free_port()
    env = _env(tmp_path)
    db = tmp_path / "makilab.sqlite3"
    base = f"http://127.0.0.1:{port}"
    server = _start_serve(env, port)
    collections = []
    try:
        _wait_serving(base, server)
        token = _gateway_token(env)
        status, body = _http(
            f"{base}/api/v1/memory/messages",
            token=token,
            data={"channel": "whatsapp", "content": "Le volcan de l'île est entré en éruption."},
        )
        assert status == 201, body
        first = body["message_ids"][0]
        assert _wait_message_indexed(db, first, 60) == "indexed"

        collections = [p for p in (tmp_path / "qdrant").iterdir() if p.is_dir()]
        assert collections and _chattr("+i", collections)
        status, body = _http(
            f"{base}/api/v1/memory/messages",
            token=token,
            data={"channel": "whatsapp", "content": "Les girafes du zoo ont eu un petit."},
        )
        assert status == 201, body
        second = body["message_ids"][0]
        time.sleep(10)  # its indexing meets the unwritable folder
        alive = server.poll() is None
        answered = True
        try:
            urllib.request.urlopen(f"{base}/login/", timeout=5)
        except OSError:
            answered = False
        state = _message_state(db, second)
    finally:
        _chattr("-i", collections)
        log = _stop(server)
    assert alive and answered, (
        f"serve died (exit {server.returncode}) when Qdrant could not write; the message is "
        f"{state!r}\n"
        + "\n".join(line for line in log.splitlines() if "Fatal" in line or "vectors_edge" in line)
    )
    assert state == "pending"


def test_a_lock_file_that_cannot_be_opened_is_a_store_down_not_a_traceback(tmp_path):
    """QA: serve refused to start with an English PermissionError traceback when the
    folder's lock file was immutable; now the store is down, said in French, and serve runs
    (its searches say why, its rows wait)."""
    from memory.exceptions import StoreUnavailable
    from memory.stores.edge_engine import EDGE_LOCK_FILE, folder_lock

    if os.geteuid() != 0 or not shutil.which("chattr"):
        pytest.skip("needs root and chattr")
    lock = tmp_path / EDGE_LOCK_FILE
    lock.write_text("1\n")
    if not _chattr("+i", [lock]):
        pytest.skip("the immutable attribute cannot be set here")
    try:
        with pytest.raises(StoreUnavailable, match=r"\.makilab\.lock : opération non permise"):
            folder_lock(tmp_path)
    finally:
        _chattr("-i", [lock])
