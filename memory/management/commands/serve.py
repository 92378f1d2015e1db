"""Run Makilab Memory on its embedded defaults: one process, one command.

Applies migrations, creates the first admin account when
DJANGO_SUPERUSER_USERNAME / DJANGO_SUPERUSER_PASSWORD are given, then serves
the site with waitress (threaded WSGI) until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import logging
import os

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

logger = logging.getLogger(__name__)


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


class Command(BaseCommand):
    help = "Migrate, then serve Makilab Memory on its embedded defaults."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=settings.MAKILAB_HOST)
        parser.add_argument("--port", type=int, default=settings.MAKILAB_PORT)
        parser.add_argument("--threads", type=int, default=settings.MAKILAB_THREADS)
        parser.add_argument("--no-migrate", action="store_true", help="Skip `migrate`.")

    def handle(self, *args, **options):
        from waitress import serve

        from makilab.wsgi import application

        if not options["no_migrate"]:
            call_command("migrate", interactive=False, verbosity=0)
        created = superuser_ensure()
        if created:
            self.stdout.write(f"Compte administrateur « {created} » créé.")
        elif not get_user_model().objects.filter(is_superuser=True).exists():
            self.stdout.write(
                "Aucun compte administrateur : créez-en un avec `python manage.py createsuperuser`."
            )
        url = f"http://{options['host']}:{options['port']}/"
        self.stdout.write(f"Makilab Memory sur {url} (Ctrl-C pour arrêter)")
        serve(
            application,
            host=options["host"],
            port=options["port"],
            threads=options["threads"],
            ident="makilab",
        )
        self.stdout.write("Arrêté.")
