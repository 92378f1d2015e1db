"""The paths a command is given, checked before any work, refused in French.

``Path.is_file()`` and ``Path.exists()`` raise PermissionError under a folder the
account cannot enter (a traceback for the owner), and say "no" for a folder where
a file is expected, which the commands reported as "introuvable". Here each case
has its own words, the system's reason given by ``os_error_reason``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from django.core.management.base import CommandError

from memory.error_reasons import os_error_reason

FILE_MISSING = "Fichier introuvable : {path}"
FOLDER_MISSING = "Dossier introuvable : {path}"
IS_A_FOLDER = "C'est un dossier, pas un fichier : {path}"
NOT_A_FILE = "Ce n'est pas un fichier ordinaire (un périphérique, un tube, une socket) : {path}"
NOT_A_FOLDER = "Ce n'est pas un dossier : {path}"
PATH_UNREACHABLE = "Impossible d'accéder à {path} : {reason}."
FILE_UNREADABLE = "Impossible de lire {path} : {reason}."


def path_stat(path: Path) -> os.stat_result | None:
    """What is at ``path`` (symbolic links followed), None when nothing is; a CommandError
    when the system will not look (a folder on the way it cannot enter, a link loop)."""
    try:
        return path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise CommandError(
            PATH_UNREACHABLE.format(path=path, reason=os_error_reason(exc))
        ) from None


def not_a_folder_check(path: Path) -> os.stat_result | None:
    """A CommandError when ``path`` is a folder; else what is there (None: nothing)."""
    info = path_stat(path)
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise CommandError(IS_A_FOLDER.format(path=path))
    return info


def file_check(path: Path, *, missing: str = FILE_MISSING) -> None:
    """A CommandError unless ``path`` is a regular file (``missing``: the words for none)."""
    info = not_a_folder_check(path)
    if info is None:
        raise CommandError(missing.format(path=path))
    if not stat.S_ISREG(info.st_mode):  # QA: /dev/null was « introuvable »
        raise CommandError(NOT_A_FILE.format(path=path))


def folder_check(path: Path) -> None:
    """A CommandError unless ``path`` is a folder."""
    info = path_stat(path)
    if info is None:
        raise CommandError(FOLDER_MISSING.format(path=path))
    if not stat.S_ISDIR(info.st_mode):
        raise CommandError(NOT_A_FOLDER.format(path=path))


def file_unreadable(path: Path, exc: OSError) -> CommandError:
    """The refusal of a file the system will not let the command read."""
    return CommandError(FILE_UNREADABLE.format(path=path, reason=os_error_reason(exc)))
