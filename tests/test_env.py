import pytest
from django.core.exceptions import ImproperlyConfigured

from makilab.env import env_bool, env_int, env_list, env_secret


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
    with pytest.raises(ImproperlyConfigured, match="N must be an integer"):
        env_int("N", 5)
    monkeypatch.setenv("N", "-1")
    with pytest.raises(ImproperlyConfigured, match="at least 0"):
        env_int("N", 5, minimum=0)


def test_env_secret_reads_the_file_named_by_var_file(monkeypatch, tmp_path):
    secret = tmp_path / "key"
    secret.write_text("s3cret\n")
    monkeypatch.setenv("API_KEY", "from-env")
    monkeypatch.setenv("API_KEY_FILE", str(secret))
    assert env_secret("API_KEY") == "s3cret"


def test_env_secret_reports_an_unreadable_file(monkeypatch, tmp_path):
    monkeypatch.setenv("API_KEY_FILE", str(tmp_path / "missing"))
    with pytest.raises(ImproperlyConfigured, match="API_KEY_FILE"):
        env_secret("API_KEY")


def test_env_list_splits_on_commas(monkeypatch):
    monkeypatch.setenv("HOSTS", "a.example, b.example,,")
    assert env_list("HOSTS", []) == ["a.example", "b.example"]
