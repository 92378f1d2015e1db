"""Tiny, strict readers for environment variables.

Each one raises ImproperlyConfigured with the variable's name on a bad value,
so a typo in a deployment fails at start-up instead of silently meaning
something else ("yes" is not a boolean here, "10s" is not an int).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

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
    raise ImproperlyConfigured(f"{name} must be true or false (or 1/0), not {raw!r}.")


def env_int(name: str, default: int | None, *, minimum: int | None = None) -> int | None:
    """Read an integer; "None" (any case) means no value."""
    raw = os.environ.get(name, "").strip()
    if raw == "":
        return default
    if raw.lower() == "none":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {raw!r}.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, not {value}.")
    return value


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, not {raw!r}.") from None


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
        raise ImproperlyConfigured(f"{name} must be hours such as 2,6,10, not {raw!r}.") from None
    if not hours or not all(0 <= h <= 23 for h in hours):
        raise ImproperlyConfigured(f"{name} must be hours from 0 to 23, not {raw!r}.")
    return hours


def env_secret(name: str, default: str = "") -> str:
    """Read NAME, or the content of the file NAME_FILE points at (Docker/systemd secrets)."""
    file_path = os.environ.get(f"{name}_FILE", "").strip()
    if file_path:
        try:
            return Path(file_path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ImproperlyConfigured(
                f"{name}_FILE points at {file_path!r}, which cannot be read: {exc.strerror}."
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
                f"MAKILAB_ENV_FILE points at {named!r}, which is not a readable file."
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
            f"{name} must be a rate such as 600/minute (per second, minute, hour or day) "
            f"or None, not {raw!r}."
        )
    return raw.lower()
