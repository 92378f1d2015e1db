"""Tiny, strict readers for environment variables.

Each one raises ImproperlyConfigured with the variable's name on a bad value,
so a typo in a deployment fails at start-up instead of silently meaning
something else ("yes" is not a boolean here, "10s" is not an int).
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import secrets
from collections.abc import Collection
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.core.exceptions import ImproperlyConfigured

TRUE_VALUES = frozenset({"true", "1"})
FALSE_VALUES = frozenset({"false", "0"})


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool) -> bool:
    """Read "true"/"false"/"1"/"0" (any case); anything else is an error."""
    raw = os.environ.get(name, "").strip().lower()
    if raw == "":
        return default
    if raw in TRUE_VALUES:
        return True
    if raw in FALSE_VALUES:
        return False
    raise ImproperlyConfigured(f"{name} doit valoir true ou false (ou 1/0), pas {raw!r}.")


def env_int(
    name: str,
    default: int | None,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    allow_none: bool = True,
) -> int | None:
    """Read an integer; "None" (any case) means no value, unless ``allow_none`` is False."""
    raw = os.environ.get(name, "").strip()
    if raw == "":
        return default
    if allow_none and raw.lower() == "none":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} doit être un nombre entier, pas {raw!r}.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} doit être au moins {minimum}, pas {value}.")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name} doit être au plus {maximum}, pas {value}.")
    return value


def env_float(
    name: str, default: float, *, minimum: float | None = None, positive: bool = False
) -> float:
    """Read a finite number ("nan" and "inf" are errors); ``positive``: above 0."""
    raw = os.environ.get(name, "").strip()
    if raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} doit être un nombre, pas {raw!r}.") from None
    if not math.isfinite(value):
        raise ImproperlyConfigured(f"{name} doit être un nombre fini, pas {raw!r}.")
    if positive and value <= 0:
        raise ImproperlyConfigured(f"{name} doit être supérieur à 0, pas {raw}.")
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} doit être au moins {minimum:g}, pas {raw}.")
    return value


def env_choice(
    name: str, default: str, choices: Collection[str], *, ignore_case: bool = False
) -> str:
    """One of ``choices`` (returned as spelled there); anything else is an error."""
    raw = os.environ.get(name, "").strip()
    if raw == "":
        return default
    for choice in choices:
        if raw == choice or (ignore_case and raw.lower() == choice.lower()):
            return choice
    raise ImproperlyConfigured(
        f"{name} doit être l'une des valeurs {', '.join(sorted(choices))}, pas {raw!r}."
    )


def env_time_zone(name: str, default: str) -> str:
    """An IANA time zone name ("Europe/Paris"): Django's own error names no variable."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    raw = os.environ.get(name, "").strip()
    if raw == "":
        return default
    try:
        ZoneInfo(raw)
    except (ZoneInfoNotFoundError, ValueError):
        raise ImproperlyConfigured(
            f"{name} doit être un fuseau horaire tel que Europe/Paris ou UTC, pas {raw!r}."
        ) from None
    return raw


def env_language_code(name: str, default: str) -> str:
    """A language code Django has translations for ("fr", "en-us"), as gettext looks it up
    at start-up: Django's own error ("No translation files found") names no variable."""
    import gettext

    import django
    from django.utils.translation import to_locale
    from django.utils.translation.trans_real import language_code_re

    raw = os.environ.get(name, "").strip()
    if raw == "":
        return default
    locale_dir = Path(django.__file__).parent / "conf" / "locale"
    # Django's own shape of a language code (its check translation.E001), then its files.
    known = language_code_re.match(raw) and gettext.find(
        "django", str(locale_dir), [to_locale(raw)]
    )
    if not known:
        raise ImproperlyConfigured(
            f"{name} doit être une langue dans laquelle Django est traduit, telle que fr ou en, "
            f"pas {raw!r}."
        )
    return raw


def url_redacted(url: str) -> str:
    """``url`` with its user info (``user:password@``) shown as ``***@``: what messages,
    logs and pages may show of a URL that can carry a password."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "***" if "@" in url else url
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]))


def env_url(name: str, default: str = "", *, schemes: Collection[str]) -> str:
    """An absolute URL with one of ``schemes``, a host and, if any, a numeric port.

    Empty stays empty (the integration is off). The value is never echoed with its
    password: only ``url_redacted`` of it.
    """
    raw = os.environ.get(name, default).strip()
    if raw == "":
        return raw
    example = f"{sorted(schemes)[0]}://hôte:port"
    try:
        parts = urlsplit(raw)
        _ = parts.port  # ValueError on a port that is not a number from 0 to 65535
    except ValueError:
        raise ImproperlyConfigured(
            f"{name} doit être une URL telle que {example} (un port est un nombre), "
            f"pas {url_redacted(raw)!r}."
        ) from None
    if parts.scheme.lower() not in schemes:
        raise ImproperlyConfigured(
            f"{name} doit commencer par {' ou '.join(f'{s}://' for s in sorted(schemes))}, "
            f"pas {url_redacted(raw)!r}."
        )
    if not parts.hostname:
        raise ImproperlyConfigured(
            f"{name} doit indiquer un hôte, par exemple {example}, pas {url_redacted(raw)!r}."
        )
    return raw


def env_proxy(name: str, default: str) -> str:
    """The address whose proxy headers waitress keeps: an IP address, written as waitress
    compares it with the peer's (``0:0:0:0:0:0:0:1`` is ``::1``), or ``*``. Another word
    (a host name, ``localhost``: serve listens on TCP, its peers are addresses) never
    matches, and the header would be dropped silently."""
    raw = os.environ.get(name, "").strip() or default
    if raw == "*":
        return raw
    try:
        return str(ipaddress.ip_address(raw))
    except ValueError:
        raise ImproperlyConfigured(
            f"{name} doit être une adresse IP (telle que 127.0.0.1) ou *, pas {raw!r}."
        ) from None


def env_broker_url(name: str, default: str) -> str:
    """A Celery broker URL (``;`` between fail-over URLs) whose scheme names a kombu
    transport: kombu reads "redis//host" as an amqp host and only fails an unknown
    transport ("foo://") at the first publish. Checked against kombu's alias table,
    without importing a transport or connecting."""
    from kombu.transport import TRANSPORT_ALIASES

    raw = os.environ.get(name, "").strip() or default
    for url in raw.split(";"):
        url = url.strip()
        scheme, separator, _ = url.partition("://")
        # "sqla+postgresql://...": the transport is before the "+" (kombu.Connection).
        transport = scheme.partition("+")[0]
        if not separator or not transport:
            raise ImproperlyConfigured(
                f"{name} doit être une URL telle que redis://127.0.0.1:6379/0, "
                f"pas {url_redacted(url)!r}."
            )
        if transport not in TRANSPORT_ALIASES and transport.lower() not in TRANSPORT_ALIASES:
            raise ImproperlyConfigured(
                f"{name} désigne un transport Celery inconnu de kombu ({transport!r}) : "
                "redis://, amqp://, sqs://, memory://... sont connus."
            )
        try:
            _ = urlsplit(url).port
        except ValueError:
            raise ImproperlyConfigured(
                f"{name} contient un port qui n'est pas un nombre : {url_redacted(url)!r}."
            ) from None
    return raw


def env_list(name: str, default: list[str]) -> list[str]:
    """Comma-separated values, blanks dropped."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_hours(name: str, default: list[int]) -> list[int]:
    """Hours of the day, comma-separated ("2,6,10"): sorted, distinct, each 0-23, at least one."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return sorted(set(default))
    try:
        hours = sorted({int(item) for item in raw.split(",") if item.strip()})
    except ValueError:
        raise ImproperlyConfigured(
            f"{name} doit lister des heures, par exemple 2,6,10, pas {raw!r}."
        ) from None
    if not hours or not all(0 <= h <= 23 for h in hours):
        raise ImproperlyConfigured(f"{name} doit lister des heures de 0 à 23, pas {raw!r}.")
    return hours


def env_secret(name: str, default: str = "") -> str:
    """Read NAME, or the content of the file NAME_FILE points at (Docker/systemd secrets)."""
    file_path = os.environ.get(f"{name}_FILE", "").strip()
    if file_path:
        try:
            return Path(file_path).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            # The system's own reason is English: the owner reads it in French.
            from memory.error_reasons import os_error_reason

            reason = (
                "ce n'est pas du texte UTF-8"
                if isinstance(exc, UnicodeDecodeError)
                else os_error_reason(exc)
            )
            raise ImproperlyConfigured(
                f"{name}_FILE désigne {file_path!r}, qui ne peut pas être lu : {reason}."
            ) from None
    return os.environ.get(name, default).strip()


def env_file_load(default: Path) -> Path | None:
    """Load a .env file into os.environ; variables already set keep their value.

    The file is MAKILAB_ENV_FILE when set (it must exist), else ``default``
    when it exists. Returns the file read, or None.
    """
    named = os.environ.get("MAKILAB_ENV_FILE", "").strip()
    path = Path(named) if named else default
    if not path.is_file():
        if named:
            raise ImproperlyConfigured(
                f"MAKILAB_ENV_FILE désigne {named!r}, qui n'est pas un fichier lisible."
            )
        return None
    from dotenv import load_dotenv

    load_dotenv(path, override=False, encoding="utf-8")
    return path


_RATE = re.compile(r"^[1-9]\d*/(s|sec|second|m|min|minute|h|hour|d|day)$")


def env_rate(name: str, default: str | None) -> str | None:
    """A DRF throttle rate such as "600/minute"; "None" (any case) means no limit."""
    raw = os.environ.get(name, "").strip()
    if raw == "":
        return default
    if raw.lower() == "none":
        return None
    if not _RATE.match(raw.lower()):
        raise ImproperlyConfigured(
            f"{name} doit être une limite de débit telle que 600/minute "
            f"(unités : second, minute, hour ou day) ou None, pas {raw!r}."
        )
    return raw.lower()


def env_secret_key(data_dir: Path) -> str:
    """SECRET_KEY from DJANGO_SECRET_KEY, else one generated once into ``data_dir``."""
    key = env_secret("DJANGO_SECRET_KEY")
    if key:
        return key
    key_file = data_dir / "secret_key"
    if not key_file.exists():
        key_file.touch(mode=0o600)
        key_file.write_text(secrets.token_urlsafe(50), encoding="utf-8")
    return key_file.read_text(encoding="utf-8").strip()
