"""Why the system, the json module or SQLite refused, in the owner's words.

Their own texts are English ("[Errno 13] Permission denied: 'x'", "Expecting ','
delimiter: line 1 column 9 (char 8)", "unable to open database file"): every
message the owner sees gives the reason with these functions instead. Pure, no
Django: the stores use them as well as the services and the commands.
"""

from __future__ import annotations

import errno
import json
import sqlite3
import sys

# Why a file, a folder or a connection was refused (the system's strerror is English).
OS_ERROR_REASONS = {
    errno.EACCES: "accès refusé",
    errno.EPERM: "opération non permise",
    errno.ENOENT: "fichier ou dossier introuvable",
    errno.ENOTDIR: "un élément du chemin n'est pas un dossier",
    errno.EEXIST: "un fichier existe déjà à cet endroit",
    errno.EISDIR: "c'est un dossier",
    errno.ENOTEMPTY: "le dossier n'est pas vide",
    errno.ENAMETOOLONG: "nom de fichier trop long",
    errno.ELOOP: "boucle de liens symboliques",
    errno.ENOSPC: "disque plein",
    errno.EDQUOT: "quota de disque dépassé",
    errno.EROFS: "système de fichiers en lecture seule",
    errno.EIO: "erreur de lecture du disque",
    errno.EMFILE: "trop de fichiers ouverts",
    errno.ENFILE: "trop de fichiers ouverts",
    errno.ENOMEM: "mémoire insuffisante",
    errno.EBUSY: "fichier occupé",
    errno.EAGAIN: "fichier momentanément indisponible",
    errno.ENXIO: "périphérique absent",
    errno.ENODEV: "périphérique absent",
    errno.EOVERFLOW: "fichier trop grand",
    errno.ESTALE: "fichier réseau périmé",
    errno.ETIMEDOUT: "délai dépassé",
    errno.EINVAL: "nom ou fichier invalide",
    errno.ECONNREFUSED: "connexion refusée",
    errno.ECONNRESET: "connexion coupée",
    errno.ECONNABORTED: "connexion interrompue",
    errno.EPIPE: "connexion coupée",
    errno.EHOSTUNREACH: "machine injoignable",
    errno.ENETUNREACH: "réseau injoignable",
    errno.EADDRNOTAVAIL: "adresse absente de cette machine",
}
# Python raises some of these without a number (socket timeouts, a closed connection).
_OS_ERROR_CLASSES = (
    (TimeoutError, errno.ETIMEDOUT),
    (ConnectionRefusedError, errno.ECONNREFUSED),
    (ConnectionResetError, errno.ECONNRESET),
    (ConnectionAbortedError, errno.ECONNABORTED),
    (BrokenPipeError, errno.EPIPE),
    (PermissionError, errno.EACCES),
    (FileNotFoundError, errno.ENOENT),
    (FileExistsError, errno.EEXIST),
    (IsADirectoryError, errno.EISDIR),
    (NotADirectoryError, errno.ENOTDIR),
)
REASON_OS_ERROR = "erreur système n° {errno}"

# The json module's messages (CPython's C and Python scanners), by how they begin.
JSON_ERROR_REASONS = (
    ("Expecting value", "valeur attendue"),
    ("Expecting property name", "nom de champ entre guillemets attendu"),
    ("Expecting ':'", "« : » attendu"),
    ("Expecting ','", "« , » attendu"),
    ("Unterminated string", "chaîne non terminée"),
    ("Invalid control character", "caractère de contrôle dans une chaîne"),
    ("Invalid \\uXXXX", "séquence \\uXXXX invalide"),
    ("Invalid \\escape", "séquence d'échappement invalide"),
    ("Extra data", "texte en trop après la valeur"),
    ("Illegal trailing comma", "virgule en trop avant la fermeture"),
    ("Unexpected UTF-8 BOM", "marque d'ordre des octets (BOM) inattendue"),
)
REASON_JSON_ERROR = "syntaxe invalide"
# Said from where the error is, more exactly than the json module's message.
REASON_JSON_TRUNCATED = "texte incomplet"
REASON_JSON_TRAILING_COMMA = "virgule en trop avant « {closer} »"
JSON_AT_COLUMN = "colonne {column} : {reason}"
JSON_AT_LINE = "ligne {line}, colonne {column} : {reason}"
# int() refuses more digits than this (CVE-2020-10735), with an English ValueError.
NUMBER_TOO_LONG = "nombre trop long : {limit} chiffres au plus"

SQLITE_ERROR_REASONS = {
    sqlite3.SQLITE_PERM: "accès refusé",
    sqlite3.SQLITE_BUSY: "base occupée par un autre programme",
    sqlite3.SQLITE_LOCKED: "base verrouillée",
    sqlite3.SQLITE_NOMEM: "mémoire insuffisante",
    sqlite3.SQLITE_READONLY: "base en lecture seule",
    sqlite3.SQLITE_IOERR: "erreur de lecture ou d'écriture du disque",
    sqlite3.SQLITE_CORRUPT: "base abîmée",
    sqlite3.SQLITE_FULL: "disque plein",
    sqlite3.SQLITE_CANTOPEN: "impossible d'ouvrir ou de créer le fichier",
    sqlite3.SQLITE_NOTADB: "ce n'est pas une base SQLite",
}
REASON_SQLITE_ERROR = "erreur SQLite {name}"


def os_error_reason(exc: OSError) -> str:
    """Why the system refused, in French (its own text is English)."""
    code = exc.errno
    if code is None:
        code = next((c for cls, c in _OS_ERROR_CLASSES if isinstance(exc, cls)), None)
    return OS_ERROR_REASONS.get(code) or REASON_OS_ERROR.format(errno=code or "?")


def json_error_what(exc: json.JSONDecodeError) -> str:
    """Why a JSON text is invalid, in French (never the json module's English): a text
    that stops short, a comma before a closing bracket, or the module's own reason."""
    if exc.msg.startswith("Expecting") and exc.doc.strip() and not exc.doc[exc.pos :].strip():
        return REASON_JSON_TRUNCATED  # something, then nothing where more was expected
    closer = exc.doc[exc.pos : exc.pos + 1]
    if (
        closer in ("}", "]")
        and exc.doc[: exc.pos].rstrip().endswith(",")
        and exc.msg.startswith(("Expecting value", "Expecting property name", "Illegal trailing"))
    ):
        return REASON_JSON_TRAILING_COMMA.format(closer=closer)
    return next(
        (french for english, french in JSON_ERROR_REASONS if exc.msg.startswith(english)),
        REASON_JSON_ERROR,
    )


def json_error_reason(exc: json.JSONDecodeError, *, line: bool = False) -> str:
    """Where and why a JSON text is invalid, in French: "colonne 12 : « , » attendu"
    (``line``: "ligne 3, colonne 12 : …", for a text of several lines)."""
    where = JSON_AT_LINE if line else JSON_AT_COLUMN
    return where.format(line=exc.lineno, column=exc.colno, reason=json_error_what(exc))


def json_int(text: str) -> int:
    """json's parse_int: int(), with int()'s refusal of a number too long said in French."""
    try:
        return int(text)
    except ValueError:  # the only one: the scanner hands over digits only
        raise ValueError(NUMBER_TOO_LONG.format(limit=sys.get_int_max_str_digits())) from None


def sqlite_error_reason(exc: sqlite3.Error) -> str:
    """Why SQLite refused, in French (its own text is English)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return REASON_SQLITE_ERROR.format(name=type(exc).__name__)
    name = getattr(exc, "sqlite_errorname", None) or code
    return SQLITE_ERROR_REASONS.get(code & 0xFF) or REASON_SQLITE_ERROR.format(name=name)


class DuplicateKey(Exception):
    """Raised by ``object_without_duplicates`` (not a ValueError: NaN's handler catches those)."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def object_without_duplicates(pairs: list[tuple[str, object]]) -> dict:
    """json.loads' object_pairs_hook: the object, unless a key appears twice in it (the
    request bodies', the MCP messages' and the export lines' one rule)."""
    data = {}
    for key, value in pairs:
        if key in data:
            raise DuplicateKey(key)
        data[key] = value
    return data
