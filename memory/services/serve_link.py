"""The link between `manage.py serve` and the commands run beside it.

serve holds an exclusive flock on ``MAKILAB_DATA_DIR/serve.json`` for its
whole life and writes there its pid, its URL, its Qdrant folder and a random
secret. The file is created mode 0600: only the account that owns the data
folder reads it, and that account can already read the SQLite file and the
secret key, so the secret gives nobody anything new. The kernel drops the lock
when serve dies, so a stale file after a crash means nothing.

- A second serve on the same data folder finds the lock taken and refuses.
- A maintenance command finds it taken and, when the embedded Qdrant folder is
  serve's, asks serve to run the operation (POST /api/memory/maintenance/<op>
  with the secret in a header), follows the run's progress and prints its lines.
"""

from __future__ import annotations

import fcntl
import hmac
import json
import os
import secrets
import time
import urllib.error
import urllib.request
from pathlib import Path

from django.conf import settings

from memory.error_reasons import json_error_reason, os_error_reason
from memory.exceptions import MemoryServiceError
from memory.services.maintenance_runs import Outcome, Progress, operation_run

RUNTIME_FILE = "serve.json"
SECRET_HEADER = "X-Makilab-Maintenance"
POLL_INTERVAL_S = 0.3
STARTING_WAIT_S = 60.0
REQUEST_TIMEOUT_S = 30.0

SERVE_ALREADY_RUNNING_MESSAGE = (
    "Un autre « serve » utilise déjà ce dossier de données ({data_dir}){who}. "
    "Arrêtez-le d'abord, ou donnez à celui-ci un autre MAKILAB_DATA_DIR."
)
SERVE_STARTING_MESSAGE = (
    "Le service démarre encore (aucune adresse dans {path}) : réessayez dans un instant."
)
SERVE_FILE_UNREADABLE_MESSAGE = (
    "{path} est illisible pour ce compte ({detail}) : lancez la commande avec le compte "
    "qui fait tourner « serve »."
)
SERVE_UNREACHABLE_MESSAGE = (
    "Le service qui détient la base vectorielle ({url}) ne répond pas : {detail}"
)
SERVE_NOT_JSON = "sa réponse n'est pas du JSON ({reason})"
SERVE_NOT_TEXT = "ce n'est pas du texte"
DETACHED_MESSAGE = (
    "Interrompu : l'opération continue dans le service (elle est sans risque à relancer)."
)
SERVE_REFUSED_MESSAGE = "Le service a refusé l'opération ({status}) : {detail}"
# A refusal that is not the API's JSON (a proxy's page, another program on the port).
SERVE_REFUSED_UNEXPLAINED = (
    "réponse sans explication : vérifiez que c'est bien ce « serve » qui répond à cette adresse"
)


class ServeLinkError(MemoryServiceError):
    """The running service could not be reached or refused the operation."""


class ServeAlreadyRunning(MemoryServiceError):
    """Another serve holds the data folder."""


_secret: str | None = None  # set in the serving process only


def runtime_path() -> Path:
    return Path(settings.DATA_DIR) / RUNTIME_FILE


class ServeLock:
    """serve's hold on its data folder, and what it tells the commands beside it."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or runtime_path()
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            info = _read(self.path) or {}
            who = f" : pid {info['pid']}, {info['url']}" if "pid" in info and "url" in info else ""
            raise ServeAlreadyRunning(
                SERVE_ALREADY_RUNNING_MESSAGE.format(data_dir=settings.DATA_DIR, who=who)
            ) from None
        os.fchmod(fd, 0o600)
        os.ftruncate(fd, 0)
        self._fd = fd

    def publish(self, url: str) -> None:
        """Say where serve answers, and the secret the commands must send."""
        global _secret
        secret = secrets.token_urlsafe(32)
        info = {
            "pid": os.getpid(),
            "url": url,
            "qdrant_path": str(settings.QDRANT_PATH),
            "secret": secret,
        }
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, json.dumps(info).encode(), 0)
        _secret = secret

    def release(self) -> None:
        global _secret
        _secret = None
        if self._fd is not None:
            os.ftruncate(self._fd, 0)  # the secret leaves the disk with serve
            os.close(self._fd)  # releases the flock
            self._fd = None


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text() or "null")
    except (OSError, ValueError):
        return None


def serve_running() -> bool:
    """Whether a serve holds this data folder (its lock is taken)."""
    path = runtime_path()
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    except OSError as exc:  # another account's serve.json (mode 0600)
        raise ServeLinkError(
            SERVE_FILE_UNREADABLE_MESSAGE.format(path=path, detail=os_error_reason(exc))
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # also releases our shared lock, if we got it
    return False


def serve_owning_the_store() -> dict | None:
    """The running serve's runtime info when it owns the embedded Qdrant folder, else None.

    With QDRANT_URL every process opens the (shared) server itself.
    """
    if settings.QDRANT_URL or not serve_running():
        return None
    deadline = time.monotonic() + STARTING_WAIT_S
    while True:
        info = _read(runtime_path())
        if info and info.get("url"):
            break
        if time.monotonic() > deadline or not serve_running():
            raise ServeLinkError(SERVE_STARTING_MESSAGE.format(path=runtime_path()))
        time.sleep(POLL_INTERVAL_S)
    if info.get("qdrant_path") != str(settings.QDRANT_PATH):
        return None  # that serve uses another Qdrant folder than ours
    return info


def secret_matches(value: str | None) -> bool:
    """Whether ``value`` is this serving process's maintenance secret."""
    return bool(_secret and value and hmac.compare_digest(value.encode(), _secret.encode()))


def _local_base(url: str) -> str:
    """serve's URL as this machine reaches it (a wildcard bind is reached on loopback:
    0.0.0.0 on 127.0.0.1, the IPv6 wildcard [::] on [::1])."""
    return url.replace("//0.0.0.0:", "//127.0.0.1:").replace("//[::]:", "//[::1]:").rstrip("/")


def _refusal_detail(error: urllib.error.HTTPError) -> str:
    """The French "message" of serve's JSON refusal (with its fields' errors, if any), or a
    French default for any other body."""
    try:
        body = json.loads(error.read() or b"null")
    except (OSError, ValueError):  # cut short, or not JSON
        body = None
    message = body.get("message") if isinstance(body, dict) else None
    if not isinstance(message, str) or not message:
        return SERVE_REFUSED_UNEXPLAINED
    extra = body.get("extra")
    fields = extra.get("fields") if isinstance(extra, dict) else None
    if isinstance(fields, dict) and fields:  # "Données invalides." says why, field by field
        from memory.services.messages_record import item_errors_text

        said = {
            name: errors if isinstance(errors, list) else [errors]
            for name, errors in fields.items()
        }
        return f"{message} {item_errors_text(said)}"
    return message


def _call(info: dict, method: str, path: str, body: dict | None = None) -> dict:
    headers = {SECRET_HEADER: info["secret"], "Accept": "application/json"}
    if settings.MAKILAB_HTTPS:
        # Behind a TLS proxy the site redirects plain http; this call stays on loopback.
        headers["X-Forwarded-Proto"] = "https"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    url = _local_base(info["url"]) + path
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
            return json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        raise ServeLinkError(
            SERVE_REFUSED_MESSAGE.format(status=error.code, detail=_refusal_detail(error))
        ) from None
    except (OSError, ValueError) as exc:
        detail = _unreachable_detail(exc)
        raise ServeLinkError(SERVE_UNREACHABLE_MESSAGE.format(url=url, detail=detail)) from None


def _unreachable_detail(exc: OSError | ValueError) -> str:
    """Why serve's answer did not come, in French (urllib's and json's texts are English)."""
    if isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, OSError):
        exc = exc.reason  # the socket's refusal, wrapped
    if isinstance(exc, json.JSONDecodeError):
        return SERVE_NOT_JSON.format(reason=json_error_reason(exc))
    if isinstance(exc, ValueError):  # a body that is not text
        return SERVE_NOT_JSON.format(reason=SERVE_NOT_TEXT)
    return os_error_reason(exc)


def maintenance_remote(
    info: dict, operation: str, options: dict, progress: Progress | None = None
) -> Outcome:
    """Have the running serve run ``operation``; follow its progress until it ends."""
    run = _call(info, "POST", f"/api/memory/maintenance/{operation}", options)
    try:
        while True:
            if progress:
                for step in run["steps"]:
                    progress(step["kind"], step["done"], step["total"])
            if run["state"] != "running":
                break
            time.sleep(POLL_INTERVAL_S)
            run = _call(info, "GET", f"/api/memory/maintenance/runs/{run['id']}")
    except KeyboardInterrupt:
        raise ServeLinkError(DETACHED_MESSAGE) from None
    if run["state"] == "failed":
        raise ServeLinkError(run["error"])
    return Outcome(run["lines"], ok=run["ok"], data=run.get("data"))


def maintenance_dispatch(
    operation: str, options: dict, progress: Progress | None = None
) -> Outcome:
    """Run ``operation`` where the vector store is: in the running serve if it owns it, else here."""
    info = serve_owning_the_store()
    if info is not None:
        return maintenance_remote(info, operation, options, progress)
    return operation_run(operation, options, progress)
