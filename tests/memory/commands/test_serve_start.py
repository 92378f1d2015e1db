"""`manage.py serve` at start: one serve per data folder, a busy port is one French line."""

from __future__ import annotations

import signal
import socket
import subprocess

import pytest

from memory.management.commands.serve import (
    BIND_ERROR_MESSAGE,
    PORT_IN_USE_MESSAGE,
    bind_error_message,
)
from memory.services.serve_link import RUNTIME_FILE
from tests.memory.test_workers import (
    MIGRATE,
    _env,
    _free_port,
    _python,
    _start_serve,
    _wait_serving,
)

pytestmark = pytest.mark.slow


def _finish(process: subprocess.Popen, timeout: float = 120) -> str:
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=60)
        pytest.fail(f"serve did not stop by itself:\n{out[-3000:]}")
    return out


def test_a_second_serve_on_the_same_data_folder_refuses_to_start(tmp_path):
    env = _env(tmp_path)
    _python(MIGRATE, env)
    port = _free_port()
    notes = tmp_path / "notes"
    assert not notes.exists()
    first = _start_serve(env, port, "--no-migrate")
    try:
        _wait_serving(f"http://127.0.0.1:{port}", first)
        assert notes.is_dir()  # created on first start, for the owner's notes
        second = _start_serve(env, _free_port(), "--no-migrate")
        out = _finish(second)
        assert second.returncode != 0, out[-3000:]
        assert "Un autre « serve » utilise déjà ce dossier de données" in out, out[-3000:]
        assert f"pid {first.pid}, http://127.0.0.1:{port}/" in out
        assert "Traceback" not in out
        assert first.poll() is None  # the first one is untouched
    finally:
        first.send_signal(signal.SIGTERM)
        first_out = _finish(first, timeout=60)
    assert first.returncode == 0, first_out[-3000:]
    assert f"Notes Obsidian lues depuis le dossier {notes}." in first_out
    # Stopped cleanly: the lock is free again and the secret left the disk.
    assert (tmp_path / RUNTIME_FILE).read_text() == ""
    again = _start_serve(env, port, "--no-migrate")
    try:
        _wait_serving(f"http://127.0.0.1:{port}", again)
    finally:
        again.send_signal(signal.SIGTERM)
        _finish(again, timeout=60)


def test_a_busy_port_is_one_french_line_not_a_traceback(tmp_path):
    env = _env(tmp_path)
    _python(MIGRATE, env)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = _start_serve(env, port, "--no-migrate")
        out = _finish(server)
    assert server.returncode != 0
    assert "Traceback" not in out, out[-3000:]
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines[-1] == "CommandError: " + PORT_IN_USE_MESSAGE.format(host="127.0.0.1", port=port)
    # The data folder is free for the next try.
    assert (tmp_path / RUNTIME_FILE).read_text() == ""


def test_an_address_not_on_this_machine_is_said_in_french():
    """The system's "Cannot assign requested address" is English."""
    with socket.socket() as sock, pytest.raises(OSError) as refused:
        sock.bind(("192.0.2.1", 0))  # TEST-NET-1: never this machine's

    assert bind_error_message("192.0.2.1", 8000, refused.value) == BIND_ERROR_MESSAGE.format(
        host="192.0.2.1", port=8000, detail="adresse absente de cette machine"
    )
