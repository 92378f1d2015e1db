"""HTTPS switches: `check --deploy` is clean in production mode; plain http stays the default."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from django.test import Client

from memory.management.commands.serve import waitress_proxy_options

ROOT = Path(__file__).resolve().parent.parent
STRONG_KEY = "k7Vq-2pLx9Rz4Tn8Wc3Hb6Md1Fs5Gj0Ya7Ue2Io9Pw4Lk6Nh3Bv8Cx1Zq5Rt7Ym0"
SECURITY_SETTINGS = (
    "SECURE_SSL_REDIRECT",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
    "SECURE_PROXY_SSL_HEADER",
)


def _environ(data_dir: Path, **env: str) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MAKILAB_"))}
    environ |= {"DJANGO_SETTINGS_MODULE": "makilab.settings", "MAKILAB_DATA_DIR": str(data_dir)}
    # A developer's own .env must not change the result.
    no_env_file = data_dir / "empty.env"
    no_env_file.touch()
    return environ | {"MAKILAB_ENV_FILE": str(no_env_file)} | env


def _check_deploy(data_dir: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=_environ(data_dir, **env),
        capture_output=True,
        text=True,
        timeout=180,
    )


def _security_settings(data_dir: Path, **env: str) -> dict:
    code = (
        "import json; from django.conf import settings; "
        f"print(json.dumps({{n: getattr(settings, n) for n in {SECURITY_SETTINGS!r}}}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=_environ(data_dir, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.slow
def test_check_deploy_is_clean_in_production_mode_behind_https(tmp_path):
    result = _check_deploy(
        tmp_path, DJANGO_DEBUG="false", MAKILAB_HTTPS="true", DJANGO_SECRET_KEY=STRONG_KEY
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout
    assert "WARNINGS" not in result.stdout + result.stderr


@pytest.mark.slow
def test_without_https_check_deploy_still_names_what_is_off(tmp_path):
    result = _check_deploy(tmp_path, DJANGO_DEBUG="false", DJANGO_SECRET_KEY=STRONG_KEY)
    assert result.returncode != 0
    for check in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert check in result.stderr + result.stdout


def test_https_turns_on_the_redirect_secure_cookies_and_a_year_of_hsts(tmp_path):
    values = _security_settings(tmp_path, MAKILAB_HTTPS="true")
    assert values == {
        "SECURE_SSL_REDIRECT": True,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_HSTS_SECONDS": 31_536_000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": False,
        "SECURE_PROXY_SSL_HEADER": None,
    }


def test_each_https_setting_has_its_own_switch(tmp_path):
    values = _security_settings(
        tmp_path,
        MAKILAB_HTTPS="true",
        MAKILAB_BEHIND_PROXY="true",
        MAKILAB_HSTS_SECONDS="3600",
        MAKILAB_HSTS_INCLUDE_SUBDOMAINS="false",
        MAKILAB_HSTS_PRELOAD="true",
    )
    assert values["SECURE_HSTS_SECONDS"] == 3600
    assert values["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is False
    assert values["SECURE_HSTS_PRELOAD"] is True
    assert values["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]


def test_by_default_everything_stays_plain_http(tmp_path):
    values = _security_settings(tmp_path)
    assert values == {
        "SECURE_SSL_REDIRECT": False,
        "SESSION_COOKIE_SECURE": False,
        "CSRF_COOKIE_SECURE": False,
        "SECURE_HSTS_SECONDS": 0,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": False,
        "SECURE_HSTS_PRELOAD": False,
        "SECURE_PROXY_SSL_HEADER": None,
    }


def test_a_bad_https_switch_stops_start_up(tmp_path):
    code = "from django.conf import settings; settings.SECURE_SSL_REDIRECT"
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=_environ(tmp_path, MAKILAB_HTTPS="oui"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "MAKILAB_HTTPS doit valoir true ou false" in result.stderr


@pytest.mark.django_db
def test_the_login_page_is_served_over_plain_http_by_default():
    response = Client().get("/login/")
    assert response.status_code == 200
    assert "Strict-Transport-Security" not in response.headers


@pytest.mark.django_db
def test_behind_a_proxy_only_a_forwarded_https_request_is_served(settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    plain = Client().get("/login/")
    assert plain.status_code == 301
    assert plain["Location"] == "https://testserver/login/"
    forwarded = Client().get("/login/", HTTP_X_FORWARDED_PROTO="https")
    assert forwarded.status_code == 200
    assert forwarded["Strict-Transport-Security"].startswith("max-age=31536000")


def _echo_app(environ, start_response):
    body = json.dumps(
        {
            "scheme": environ["wsgi.url_scheme"],
            "proto": environ.get("HTTP_X_FORWARDED_PROTO"),
        }
    ).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body]


def _through_waitress(options: dict) -> dict:
    from tests.waitress_serving import waitress_serving

    with waitress_serving(_echo_app, **options) as port:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/", headers={"X-Forwarded-Proto": "https"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())


def test_serve_keeps_the_proxys_x_forwarded_proto_only_behind_a_proxy(settings):
    settings.MAKILAB_BEHIND_PROXY = True
    settings.MAKILAB_TRUSTED_PROXY = "127.0.0.1"
    assert _through_waitress(waitress_proxy_options()) == {"scheme": "https", "proto": "https"}
    settings.MAKILAB_BEHIND_PROXY = False
    # Without a proxy, a client cannot claim https: waitress drops the header.
    assert _through_waitress(waitress_proxy_options()) == {"scheme": "http", "proto": None}
