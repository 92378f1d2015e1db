"""Run Makilab Memory on its embedded defaults: one process, one command.

Applies migrations, creates the first admin account when
DJANGO_SUPERUSER_USERNAME / DJANGO_SUPERUSER_PASSWORD are given, then serves
the site with waitress (threaded WSGI). With the in-process broker (no
CELERY_BROKER_URL) the same process also runs the Celery worker and the
periodic tasks (makilab.runtime), so the embedded Qdrant folder has one owner.
Ctrl-C or SIGTERM stops everything cleanly.
"""

from __future__ import annotations

import logging
import os
import signal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.error_reasons import os_error_reason
from memory.exceptions import StoreUnavailable
from memory.management.french import FrenchCommand

logger = logging.getLogger(__name__)

SHARED_FOLDER_WARNING = (
    "Attention : le Qdrant embarqué (un dossier) ne s'ouvre que dans un seul processus. "
    "Avec des workers Celery séparés, définissez QDRANT_URL (un serveur Qdrant), "
    "sinon le web et les workers se disputeront le dossier."
)


PORT_IN_USE_MESSAGE = (
    "Le port {port} est déjà utilisé sur {host} : arrêtez ce qui l'occupe, ou choisissez "
    "un autre port (--port ou MAKILAB_PORT)."
)
BIND_ERROR_MESSAGE = "Impossible d'écouter sur {host}:{port} : {detail}"
BAD_ADDRESS_DETAIL = "hôte ou port invalide"
PORT_RANGE_MESSAGE = (
    "Port invalide : {port} (un nombre de 1 à 65535 est attendu, --port ou MAKILAB_PORT)."
)
THREADS_MESSAGE = (
    "Nombre de threads invalide : {threads} (au moins 1, --threads ou MAKILAB_THREADS)."
)
PORT_MAX = 65535


def bind_error_message(host: str, port: int, exc: Exception) -> str:
    """One French line for a socket that cannot be bound (no traceback).

    waitress raises OSError when the socket cannot be bound, ValueError or
    OverflowError when the host does not resolve or the port is out of range.
    """
    import errno

    if not isinstance(exc, OSError):
        return BIND_ERROR_MESSAGE.format(host=host, port=port, detail=BAD_ADDRESS_DETAIL)
    if exc.errno == errno.EADDRINUSE:
        return PORT_IN_USE_MESSAGE.format(host=host, port=port)
    return BIND_ERROR_MESSAGE.format(host=host, port=port, detail=os_error_reason(exc))


def serve_url(host: str, port: int) -> str:
    """The URL serve answers at, as the commands beside it read it (serve.json).

    An IPv6 literal is bracketed (RFC 3986): ``--host ::`` is ``http://[::]:8000/``,
    not ``http://:::8000/``, which no client can parse.
    """
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}/"


def serve_options_check(options: dict) -> None:
    """Refuse a port or a thread count waitress would misuse, before anything starts.

    waitress takes a port above 65535 modulo 65536 (70000 serves on 4464) and
    starts with no thread at all for --threads 0.
    """
    if not 1 <= options["port"] <= PORT_MAX:
        raise CommandError(PORT_RANGE_MESSAGE.format(port=options["port"]))
    if options["threads"] < 1:
        raise CommandError(THREADS_MESSAGE.format(threads=options["threads"]))


def superuser_ensure() -> str | None:
    """Create the superuser named in the environment if it does not exist yet."""
    username = os.environ.get("DJANGO_SUPERUSER_USERNAME", "").strip()
    password = os.environ.get("DJANGO_SUPERUSER_PASSWORD", "")
    if not username or not password:
        return None
    user_model = get_user_model()
    if user_model.objects.filter(username=username).exists():
        return None
    user_model.objects.create_superuser(
        username=username,
        email=os.environ.get("DJANGO_SUPERUSER_EMAIL", ""),
        password=password,
    )
    return username


def waitress_proxy_options() -> dict:
    """waitress drops X-Forwarded-* unless the peer is a trusted proxy: trust ours.

    Only X-Forwarded-Proto is trusted (Django's SECURE_PROXY_SSL_HEADER reads it,
    and waitress sets wsgi.url_scheme from it); without MAKILAB_BEHIND_PROXY a
    client cannot claim https.
    """
    if not settings.MAKILAB_BEHIND_PROXY:
        return {}
    return {
        "trusted_proxy": settings.MAKILAB_TRUSTED_PROXY,
        "trusted_proxy_headers": {"x-forwarded-proto"},
    }


def restore_unfinished_refuse() -> None:
    """A restore cut short has erasures and forgets still to replay (restore_journal):
    serving that memory would show what its owner erased. Said in French, with the fix."""
    from memory.services.backup import database_path
    from memory.services.restore_journal import RESTORE_UNFINISHED, journal_path

    journal = journal_path(database_path())
    if journal.exists():
        raise CommandError(RESTORE_UNFINISHED.format(file=journal))


class Command(FrenchCommand):
    help = (
        "Applique les migrations, puis sert Makilab Memory avec ses composants embarqués "
        "par défaut."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default=settings.MAKILAB_HOST)
        parser.add_argument("--port", type=int, default=settings.MAKILAB_PORT)
        parser.add_argument("--threads", type=int, default=settings.MAKILAB_THREADS)
        parser.add_argument("--no-migrate", action="store_true", help="Ne pas lancer `migrate`.")
        parser.add_argument(
            "--worker",
            choices=["auto", "yes", "no"],
            default="auto",
            help="Lancer le worker Celery et le planificateur dans ce processus "
            "(auto : seulement avec le broker en processus).",
        )

    def handle(self, *args, **options):
        from memory.services.serve_link import ServeAlreadyRunning, ServeLock

        serve_options_check(options)
        restore_unfinished_refuse()
        # Before anything else: a second serve on this data folder would share the
        # embedded Qdrant folder and the in-process queue's recovery with the first.
        lock = ServeLock()
        try:
            lock.acquire()
        except ServeAlreadyRunning as exc:
            raise CommandError(str(exc)) from None
        try:
            self._serve(lock, options)
        finally:
            lock.release()

    def _serve(self, lock, options) -> None:
        from makilab.celery import app as celery_app
        from makilab.http_server import http_server_create
        from makilab.runtime import EmbeddedWorker, Scheduler, broker_in_process
        from makilab.wsgi import application
        from memory.services.notes import notes_source_prepare

        if not options["no_migrate"]:
            call_command("migrate", interactive=False, verbosity=0)
        created = superuser_ensure()
        if created:
            self.stdout.write(f"Compte administrateur « {created} » créé.")
        elif not get_user_model().objects.filter(is_superuser=True).exists():
            self.stdout.write(
                "Aucun compte administrateur : créez-en un avec `python manage.py createsuperuser`."
            )
        self.stdout.write(f"Notes Obsidian lues depuis {notes_source_prepare()}.")
        embedded = broker_in_process()
        run_worker = options["worker"] == "yes" or (options["worker"] == "auto" and embedded)
        if not run_worker and not settings.QDRANT_URL:
            self.stderr.write(SHARED_FOLDER_WARNING)

        try:
            server = http_server_create(
                application,
                host=options["host"],
                port=options["port"],
                threads=options["threads"],
                ident="makilab",
                **waitress_proxy_options(),
            )
        except (OSError, ValueError, OverflowError) as exc:
            raise CommandError(bind_error_message(options["host"], options["port"], exc)) from None
        # waitress stops cleanly on SystemExit; make SIGTERM (systemd, docker,
        # a test) mean the same as Ctrl-C.
        previous_handler = signal.signal(signal.SIGTERM, _raise_system_exit)

        worker = scheduler = None
        if run_worker and embedded:
            # The previous process's in-memory queue died with it: void its claims.
            from memory.services.indexing import restart_recover
            from memory.services.jobs import jobs_restart_recover

            restart_recover()
            jobs_restart_recover()
            _search_index_build(self.stdout)
        if run_worker:
            # The catch-up: a digest whose fixed hour passed while serve was stopped runs now.
            from memory.services.digest import digest_schedule_check

            digest_schedule_check()
            worker = EmbeddedWorker(celery_app, concurrency=settings.MAKILAB_WORKER_THREADS)
            scheduler = Scheduler(celery_app)
            worker.start()
            scheduler.start()
        if run_worker or settings.QDRANT_URL:
            # The first message must not lose its semantic source to a cold embedder.
            from memory.services.retrieval import retrieval_warm

            retrieval_warm()
        url = serve_url(options["host"], server.effective_port)
        lock.publish(url)
        mode = "avec le worker intégré" if run_worker else "sans worker (lancez celery à part)"
        self.stdout.write(f"Makilab Memory sur {url} {mode} (Ctrl-C pour arrêter)", ending="\n")
        self.stdout.flush()
        try:
            server.run()
        finally:
            if scheduler is not None:
                scheduler.stop()
            if worker is not None:
                worker.stop()
            _close_stores()
            signal.signal(signal.SIGTERM, previous_handler)
            self.stdout.write("Arrêté.")


def _search_index_build(stdout) -> None:
    """Index what was added since the last start before the first search (embedded Qdrant).

    Qdrant Edge builds its search index only when asked, and building holds the
    process for a few seconds at 100k points: done here, never on a request (and
    later by the periodic task, once the store has been idle for a while).
    """
    from memory.services.maintenance import search_index_maintain

    try:
        built = search_index_maintain(quiet_s=0)
    except StoreUnavailable as exc:  # the folder is unreadable: serve runs, searches say why
        logger.warning("search index not built at start: %s", exc)
        return
    if built:
        stdout.write(f"Index de recherche construit ({sum(built.values())} points).")


def _raise_system_exit(signum, frame) -> None:
    raise SystemExit(0)


def _close_stores() -> None:
    """Release the embedded Qdrant folder, if this process opened it."""
    import sys

    if "memory.stores.vectors" in sys.modules:
        sys.modules["memory.stores.vectors"].vector_store_reset()
