import os

import pytest
from django.core.exceptions import ImproperlyConfigured

from makilab.env import (
    env_bool,
    env_broker_url,
    env_choice,
    env_file_load,
    env_float,
    env_int,
    env_list,
    env_rate,
    env_secret,
    env_url,
    url_redacted,
)


@pytest.mark.parametrize(
    ("raw", "expected"), [("true", True), ("1", True), ("FALSE", False), ("0", False)]
)
def test_env_bool_reads_true_and_false(monkeypatch, raw, expected):
    monkeypatch.setenv("FLAG", raw)
    assert env_bool("FLAG", not expected) is expected


@pytest.mark.parametrize("raw", ["yes", "no", "on", "vrai", "2"])
def test_env_bool_rejects_anything_else_with_the_variable_name(monkeypatch, raw):
    monkeypatch.setenv("FLAG", raw)
    with pytest.raises(ImproperlyConfigured, match="FLAG"):
        env_bool("FLAG", False)


def test_env_bool_falls_back_to_the_default_when_unset(monkeypatch):
    monkeypatch.delenv("FLAG", raising=False)
    assert env_bool("FLAG", True) is True


def test_env_int_parses_none_and_rejects_text(monkeypatch):
    monkeypatch.setenv("N", "None")
    assert env_int("N", 5) is None
    monkeypatch.setenv("N", "42")
    assert env_int("N", 5) == 42
    monkeypatch.setenv("N", "10s")
    with pytest.raises(ImproperlyConfigured, match="N doit être un nombre entier"):
        env_int("N", 5)
    monkeypatch.setenv("N", "-1")
    with pytest.raises(ImproperlyConfigured, match="N doit être au moins 0, pas -1"):
        env_int("N", 5, minimum=0)


def test_env_secret_reads_the_file_named_by_var_file(monkeypatch, tmp_path):
    secret = tmp_path / "key"
    secret.write_text("s3cret\n")
    monkeypatch.setenv("API_KEY", "from-env")
    monkeypatch.setenv("API_KEY_FILE", str(secret))
    assert env_secret("API_KEY") == "s3cret"


def test_env_secret_reports_an_unreadable_file(monkeypatch, tmp_path):
    monkeypatch.setenv("API_KEY_FILE", str(tmp_path / "missing"))
    # The system's reason in French, not its English strerror.
    said = "API_KEY_FILE désigne .*, qui ne peut pas être lu : fichier ou dossier introuvable"
    with pytest.raises(ImproperlyConfigured, match=said):
        env_secret("API_KEY")


def test_env_secret_reports_a_file_that_is_not_text(monkeypatch, tmp_path):
    """A key file in another encoding (or a binary file named by mistake) stopped
    start-up with a UnicodeDecodeError traceback instead of the one-line message."""
    secret = tmp_path / "key"
    secret.write_bytes(b"cl\xe9-latin1\n")
    monkeypatch.setenv("API_KEY_FILE", str(secret))
    said = "API_KEY_FILE désigne .*, qui ne peut pas être lu : ce n'est pas du texte UTF-8"
    with pytest.raises(ImproperlyConfigured, match=said):
        env_secret("API_KEY")


def test_env_list_splits_on_commas(monkeypatch):
    monkeypatch.setenv("HOSTS", "a.example, b.example,,")
    assert env_list("HOSTS", []) == ["a.example", "b.example"]


def test_env_file_load_reads_the_default_file_without_overriding_the_environment(
    monkeypatch, tmp_path
):
    env_file = tmp_path / ".env"
    env_file.write_text("FROM_FILE=file\nBOTH=file\n# a comment\nQUOTED='a b'\n")
    monkeypatch.delenv("MAKILAB_ENV_FILE", raising=False)
    monkeypatch.delenv("FROM_FILE", raising=False)
    monkeypatch.delenv("QUOTED", raising=False)
    monkeypatch.setenv("BOTH", "environment")
    assert env_file_load(env_file) == env_file
    assert os.environ["FROM_FILE"] == "file"
    assert os.environ["QUOTED"] == "a b"
    assert os.environ["BOTH"] == "environment"
    for name in ("FROM_FILE", "QUOTED"):
        monkeypatch.delenv(name)


def test_env_file_load_without_a_file_changes_nothing(monkeypatch, tmp_path):
    monkeypatch.delenv("MAKILAB_ENV_FILE", raising=False)
    before = dict(os.environ)
    assert env_file_load(tmp_path / ".env") is None
    assert dict(os.environ) == before


def test_makilab_env_file_names_another_file_and_must_exist(monkeypatch, tmp_path):
    other = tmp_path / "prod.env"
    other.write_text("OTHER_VAR=1\n")
    monkeypatch.setenv("MAKILAB_ENV_FILE", str(other))
    monkeypatch.delenv("OTHER_VAR", raising=False)
    assert env_file_load(tmp_path / ".env") == other
    assert os.environ["OTHER_VAR"] == "1"
    monkeypatch.delenv("OTHER_VAR")
    monkeypatch.setenv("MAKILAB_ENV_FILE", str(tmp_path / "missing.env"))
    with pytest.raises(ImproperlyConfigured, match="MAKILAB_ENV_FILE"):
        env_file_load(tmp_path / ".env")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("600/minute", "600/minute"), ("5/S", "5/s"), ("100/day", "100/day"), ("None", None)],
)
def test_env_rate_reads_drf_rates_and_none(monkeypatch, raw, expected):
    monkeypatch.setenv("RATE", raw)
    assert env_rate("RATE", "1/hour") == expected


@pytest.mark.parametrize("raw", ["600", "600/fortnight", "0/minute", "-1/s", "10 per minute"])
def test_env_rate_rejects_anything_else_with_the_variable_name(monkeypatch, raw):
    monkeypatch.setenv("RATE", raw)
    with pytest.raises(ImproperlyConfigured, match="RATE doit être une limite de débit"):
        env_rate("RATE", "1/hour")


@pytest.mark.parametrize("raw", ["nan", "inf", "-inf", "NaN"])
def test_env_float_refuses_what_is_not_finite(monkeypatch, raw):
    monkeypatch.setenv("DELAY", raw)
    with pytest.raises(ImproperlyConfigured, match="DELAY doit être un nombre fini"):
        env_float("DELAY", 1.0)


def test_env_float_checks_positive_and_minimum(monkeypatch):
    monkeypatch.setenv("DELAY", "0")
    assert env_float("DELAY", 1.0) == 0.0
    with pytest.raises(ImproperlyConfigured, match="DELAY doit être supérieur à 0"):
        env_float("DELAY", 1.0, positive=True)
    monkeypatch.setenv("DELAY", "0.5")
    assert env_float("DELAY", 1.0, positive=True) == 0.5
    with pytest.raises(ImproperlyConfigured, match="DELAY doit être au moins 1"):
        env_float("DELAY", 1.0, minimum=1)


@pytest.mark.parametrize(
    "raw",
    [
        "http://localhost:abc",
        "http://localhost:99999",
        "ftp://qdrant.example",
        "localhost:6333",
        "http://:6333",
        "http//localhost:6333",
    ],
)
def test_env_url_refuses_a_bad_scheme_host_or_port(monkeypatch, raw):
    monkeypatch.setenv("SERVER_URL", raw)
    with pytest.raises(ImproperlyConfigured, match="SERVER_URL doit"):
        env_url("SERVER_URL", schemes={"http", "https"})


def test_env_url_accepts_good_urls_and_never_echoes_a_password(monkeypatch):
    monkeypatch.delenv("SERVER_URL", raising=False)
    assert env_url("SERVER_URL", schemes={"http", "https"}) == ""
    monkeypatch.setenv("SERVER_URL", "HTTPS://user:pw@qdrant.example:6333/prefix")
    assert env_url("SERVER_URL", schemes={"http", "https"}).endswith("/prefix")
    monkeypatch.setenv("SERVER_URL", "http://admin:s3cr3t@localhost:abc")
    with pytest.raises(ImproperlyConfigured) as caught:
        env_url("SERVER_URL", schemes={"http", "https"})
    assert "s3cr3t" not in str(caught.value) and "***@localhost" in str(caught.value)


@pytest.mark.parametrize(
    "raw",
    [
        "memory://localhost/",
        "redis://:pw@127.0.0.1:6379/0",
        "rediss://127.0.0.1:6380/0",
        "amqp://guest@localhost//",
        "sqla+sqlite:///var/celery.db",
        "sentinel://a:26379;sentinel://b:26379",
        "sqs://",
    ],
)
def test_env_broker_url_accepts_what_kombu_resolves(monkeypatch, raw):
    monkeypatch.setenv("BROKER", raw)
    assert env_broker_url("BROKER", "memory://localhost/") == raw


@pytest.mark.parametrize(
    "raw",
    [
        "redis//localhost:6379/0",
        "foo://localhost",
        "redis://localhost:abc/0",
        "redis://a:6379;foo://b",
        "kombu.transport.redis://x",
    ],
)
def test_env_broker_url_refuses_what_kombu_cannot_resolve(monkeypatch, raw):
    monkeypatch.setenv("BROKER", raw)
    with pytest.raises(ImproperlyConfigured, match="BROKER"):
        env_broker_url("BROKER", "memory://localhost/")


def test_env_choice_returns_the_choice_as_spelled(monkeypatch):
    monkeypatch.setenv("LEVEL", "debug")
    assert env_choice("LEVEL", "INFO", ("DEBUG", "INFO"), ignore_case=True) == "DEBUG"
    with pytest.raises(ImproperlyConfigured, match="LEVEL doit être l'une des valeurs DEBUG, INFO"):
        env_choice("LEVEL", "INFO", ("DEBUG", "INFO"))


def test_url_redacted_hides_the_user_info_only():
    assert url_redacted("http://admin:pw@host:6333/x") == "http://***@host:6333/x"
    assert url_redacted("http://host:6333") == "http://host:6333"
