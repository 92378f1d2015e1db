"""The settings module: defaults, the generated secret key, SQLite tuned for concurrency."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from django.conf import settings
from django.db.backends.sqlite3.base import DatabaseWrapper

ROOT = Path(__file__).resolve().parent.parent


def _run_python(code: str, data_dir: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MAKILAB_"))}
    environ |= {"DJANGO_SETTINGS_MODULE": "makilab.settings", "MAKILAB_DATA_DIR": str(data_dir)}
    # A developer's own .env must not change what these settings tests see.
    no_env_file = data_dir / "empty.env"
    no_env_file.touch()
    environ |= {"MAKILAB_ENV_FILE": str(no_env_file)}
    environ |= env
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_defaults_are_french_paris_and_not_debug():
    assert settings.LANGUAGE_CODE == "fr"
    assert settings.TIME_ZONE == "Europe/Paris"
    assert settings.DEBUG is False


def test_secret_key_is_generated_once_into_the_data_dir(tmp_path):
    code = "from django.conf import settings; print(settings.SECRET_KEY)"
    first = _run_python(code, tmp_path)
    second = _run_python(code, tmp_path)
    assert first.returncode == 0, first.stderr
    key = (tmp_path / "secret_key").read_text().strip()
    assert len(key) >= 50
    assert first.stdout.strip() == second.stdout.strip() == key


def test_a_bad_boolean_in_the_environment_stops_start_up(tmp_path):
    result = _run_python(
        "from django.conf import settings; settings.DEBUG", tmp_path, DJANGO_DEBUG="yes"
    )
    assert result.returncode != 0
    assert "DJANGO_DEBUG doit valoir true ou false" in result.stderr


def test_settings_read_the_env_file_and_the_environment_wins(tmp_path):
    env_file = tmp_path / "makilab.env"
    env_file.write_text(
        "# as .env.example writes it\n"
        "DJANGO_DEBUG=true\n"
        "MAKILAB_TIME_ZONE=UTC\n"
        f"MAKILAB_SQLITE_PATH={tmp_path / 'from-file.sqlite3'}\n",
        encoding="utf-8",
    )
    code = (
        "from django.conf import settings; "
        "print(settings.DEBUG, settings.TIME_ZONE, settings.DATABASES['default']['NAME'].name)"
    )
    result = _run_python(
        code, tmp_path, MAKILAB_ENV_FILE=str(env_file), MAKILAB_TIME_ZONE="Europe/Berlin"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "Europe/Berlin", "from-file.sqlite3"]


def test_env_example_copied_to_env_starts_on_the_embedded_defaults(tmp_path):
    code = (
        "from django.conf import settings; "
        "print(settings.DEBUG, settings.LANGUAGE_CODE, settings.SECURE_SSL_REDIRECT, "
        "settings.CELERY_BROKER_URL, settings.QDRANT_URL == '', settings.ALLOWED_HOSTS)"
    )
    result = _run_python(code, tmp_path, MAKILAB_ENV_FILE=str(ROOT / ".env.example"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split(maxsplit=5) == [
        "False",
        "fr",
        "False",
        "memory://localhost/",
        "True",
        "['127.0.0.1', 'localhost', '[::1]']\n",
    ]


def test_a_missing_env_file_stops_start_up_with_its_name(tmp_path):
    result = _run_python(
        "from django.conf import settings; settings.DEBUG",
        tmp_path,
        MAKILAB_ENV_FILE=str(tmp_path / "absent.env"),
    )
    assert result.returncode != 0
    assert "MAKILAB_ENV_FILE" in result.stderr
    assert "absent.env" in result.stderr


def test_every_environment_variable_is_documented_in_readme_and_env_example():
    """Each variable the settings read is in README's configuration table and .env.example."""
    source = (ROOT / "makilab" / "settings.py").read_text(encoding="utf-8")
    names = set(re.findall(r'env_\w+\(\s*"([A-Z][A-Z0-9_]+)"', source))
    assert len(names) > 40
    table = "\n".join(
        line
        for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| `")
    )
    example = (ROOT / ".env.example").read_text(encoding="utf-8")
    assert sorted(name for name in names if f"`{name}`" not in table) == []
    assert sorted(name for name in names if not re.search(rf"^#? ?{name}=", example, re.M)) == []


def test_every_sqlite_connection_uses_wal_full_sync_and_a_busy_timeout(tmp_path):
    config = {**settings.DATABASES["default"], "NAME": str(tmp_path / "db.sqlite3")}
    wrapper = DatabaseWrapper(config, alias="pragma-check")
    # The same call Django makes for every new connection (it runs init_command).
    conn = wrapper.get_new_connection(wrapper.get_connection_params())
    try:
        pragmas = {
            name: conn.execute(f"PRAGMA {name}").fetchone()[0]
            for name in ("journal_mode", "synchronous", "busy_timeout", "foreign_keys")
        }
    finally:
        conn.close()
    assert pragmas["journal_mode"] == "wal"
    assert pragmas["synchronous"] == 2  # FULL
    assert pragmas["busy_timeout"] == settings.SQLITE_BUSY_TIMEOUT_MS
    assert pragmas["foreign_keys"] == 1
    assert wrapper.transaction_mode == "IMMEDIATE"


WRITER = """
import sys, time
import django
django.setup()
from memory.models import Message
name, seconds = sys.argv[1], float(sys.argv[2])
written = 0
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    Message.objects.create(channel=name, role="user", content=f"{name} message {written}")
    written += 1
print(written)
"""


@pytest.mark.slow
def test_two_processes_writing_at_once_never_hit_database_is_locked(tmp_path):
    migrate = _run_python(
        "import django; django.setup(); from django.core.management import call_command; call_command('migrate', verbosity=0)",
        tmp_path,
    )
    assert migrate.returncode == 0, migrate.stderr
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MAKILAB_"))}
    environ |= {"DJANGO_SETTINGS_MODULE": "makilab.settings", "MAKILAB_DATA_DIR": str(tmp_path)}
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, name, "3"],
            cwd=ROOT,
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("web", "worker")
    ]
    outputs = [w.communicate(timeout=120) for w in writers]
    for writer, (_out, err) in zip(writers, outputs, strict=True):
        assert writer.returncode == 0, err
        assert "database is locked" not in err
    written = {
        name: int(out.strip()) for name, (out, _) in zip(("web", "worker"), outputs, strict=True)
    }
    assert all(count > 0 for count in written.values())

    count = _run_python(
        "import django; django.setup(); from memory.models import Message; "
        "print(Message.objects.filter(channel='web').count(), Message.objects.filter(channel='worker').count())",
        tmp_path,
    )
    assert count.stdout.split() == [str(written["web"]), str(written["worker"])]


KEEPS_CONNECTION = """
import django
django.setup()
from django.db import close_old_connections, connection
connection.ensure_connection()
raw = connection.connection
close_old_connections()  # what Django runs as every request starts and ends
print(connection.connection is raw, connection.settings_dict["CONN_MAX_AGE"])
"""


def test_a_request_thread_keeps_its_sqlite_connection_unless_told_not_to(tmp_path):
    """Opening a connection runs the PRAGMAs and registers Django's functions: a served
    request reuses its thread's connection (checked first); 0 opens one per request."""
    kept = _run_python(KEEPS_CONNECTION, tmp_path)
    assert kept.returncode == 0, kept.stderr
    assert kept.stdout.split() == ["True", "600"]
    closed = _run_python(KEEPS_CONNECTION, tmp_path, MAKILAB_SQLITE_CONN_MAX_AGE_S="0")
    assert closed.returncode == 0, closed.stderr
    assert closed.stdout.split() == ["False", "0"]
    refused = _run_python(KEEPS_CONNECTION, tmp_path, MAKILAB_SQLITE_CONN_MAX_AGE_S="-1")
    assert refused.returncode != 0 and "MAKILAB_SQLITE_CONN_MAX_AGE_S" in refused.stderr


def test_debug_logging_never_writes_what_the_llm_client_sends(tmp_path):
    """At MAKILAB_LOG_LEVEL=DEBUG the Anthropic SDK logged each request's body: an exchange
    sent to extraction, a forget's topic and candidates sent to its judge (QA: forgotten
    content stays out of the log). Its HTTP loggers stay at INFO at least; ours log DEBUG."""
    code = """
        import django, logging
        django.setup()
        import anthropic
        client = anthropic.Anthropic(api_key="k", base_url="http://127.0.0.1:9", max_retries=0)
        try:
            client.messages.create(
                model="claude-sonnet-4-6", max_tokens=10,
                messages=[{"role": "user", "content": "oublie ma dette envers Paulo"}],
            )
        except anthropic.APIConnectionError:
            pass
        logging.getLogger("memory.services.forgetting").debug("our own debug line")
    """
    result = _run_python(code, tmp_path, MAKILAB_LOG_LEVEL="DEBUG")
    assert result.returncode == 0, result.stderr
    assert "our own debug line" in result.stderr
    assert "Paulo" not in result.stderr, result.stderr
