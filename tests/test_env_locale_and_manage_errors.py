"""A bad time zone or language stops start-up with an error naming its variable, and
manage.py says a configuration error in one line, without a traceback.

Django's own errors name no variable ("Incorrect timezone setting", "No translation
files found for default language"), and a bad variable made manage.py print a
traceback starting with a misleading KeyError for the command's name.
"""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from makilab.env import env_language_code, env_time_zone
from tests.test_env_refuses_bad_values import manage_run


@pytest.mark.parametrize(
    ("name", "value"),
    [("MAKILAB_TIME_ZONE", "Mars/Olympus"), ("MAKILAB_LANGUAGE_CODE", "xx")],
)
def test_manage_refuses_a_bad_time_zone_or_language_naming_the_variable(tmp_path, name, value):
    result = manage_run(tmp_path, "check", **{name: value})
    assert result.returncode != 0
    assert f"Configuration invalide : {name} doit être" in result.stderr
    assert repr(value) in result.stderr


def test_a_bad_variable_is_one_clear_line_on_stderr_without_a_keyerror(tmp_path):
    result = manage_run(tmp_path, "memory_stats", DJANGO_DEBUG="maybe")
    assert result.returncode != 0
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "Configuration invalide : DJANGO_DEBUG doit valoir true ou false (ou 1/0), pas 'maybe'."
    ]
    assert "KeyError" not in result.stderr and "Traceback" not in result.stderr


def test_manage_still_takes_its_settings_module_from_the_command_line(tmp_path):
    """Loading the settings early (for the one-line error) must not bind them before
    Django reads --settings: a command would then run on the real data's settings."""
    result = manage_run(tmp_path, "diffsettings", "--settings=tests.settings")
    assert result.returncode == 0, result.stderr
    assert "SETTINGS_MODULE = 'tests.settings'" in result.stdout


@pytest.mark.parametrize("value", ["Europe/Paris", "UTC", "America/Argentina/Buenos_Aires"])
def test_a_real_time_zone_is_accepted(monkeypatch, value):
    monkeypatch.setenv("TZ_VAR", value)
    assert env_time_zone("TZ_VAR", "Europe/Paris") == value


@pytest.mark.parametrize("value", ["Mars/Olympus", "../etc/passwd", "Europe/", "Paris"])
def test_an_unknown_time_zone_is_refused(monkeypatch, value):
    monkeypatch.setenv("TZ_VAR", value)
    with pytest.raises(ImproperlyConfigured, match="TZ_VAR doit être un fuseau horaire"):
        env_time_zone("TZ_VAR", "Europe/Paris")


@pytest.mark.parametrize("value", ["fr", "en", "en-us", "pt-br", "de"])
def test_a_language_django_is_translated_into_is_accepted(monkeypatch, value):
    monkeypatch.setenv("LANG_VAR", value)
    assert env_language_code("LANG_VAR", "fr") == value


@pytest.mark.parametrize("value", ["xx", "français", "fr_FR.UTF-8", "../fr", "en_US", "pt_BR"])
def test_an_unknown_language_is_refused(monkeypatch, value):
    monkeypatch.setenv("LANG_VAR", value)
    with pytest.raises(ImproperlyConfigured, match="LANG_VAR doit être une langue"):
        env_language_code("LANG_VAR", "fr")


def test_both_default_to_the_french_of_paris(monkeypatch):
    monkeypatch.delenv("TZ_VAR", raising=False)
    monkeypatch.delenv("LANG_VAR", raising=False)
    assert env_time_zone("TZ_VAR", "Europe/Paris") == "Europe/Paris"
    assert env_language_code("LANG_VAR", "fr") == "fr"
