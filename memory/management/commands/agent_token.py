"""The agent's API token in one command: a plain (non-staff) account, created if missing."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError
from django.db import transaction

from memory.management.french import FrenchCommand

BAD_NAME = (
    "Nom de compte invalide : « {name} » (1 à 150 caractères : lettres, chiffres et @ . + - _)."
)
INACTIVE_REFUSED = (
    "« {name} » est un compte désactivé : l'API refuserait son jeton. Réactivez-le dans "
    "l'administration, ou choisissez un autre nom."
)
STAFF_REFUSED = (
    "« {name} » est un compte administrateur : son jeton serait celui du propriétaire "
    "(toutes les opérations). Donnez à l'agent un compte ordinaire, par exemple « gateway »."
)


class Command(FrenchCommand):
    help = (
        "Affiche le jeton d'API du compte de l'agent (la portée de l'agent : chat, contexte, "
        "messages, recherche, faits, oubli, MCP), en créant ce compte ordinaire (non "
        "administrateur) et son jeton s'ils manquent. Idempotente : une seconde exécution "
        "affiche le même jeton."
    )

    def add_arguments(self, parser):
        parser.add_argument("username", help="Le compte de l'agent, par exemple gateway.")

    def handle(self, *args, username: str, **options):
        from rest_framework.authtoken.models import Token

        user_model = get_user_model()
        field = user_model._meta.get_field(user_model.USERNAME_FIELD)
        try:  # the field's own checks and validators (no blank, no space, its length)
            name = field.clean(username, None)
        except ValidationError as exc:
            raise CommandError(BAD_NAME.format(name=username)) from exc
        with transaction.atomic():
            user = user_model.objects.filter(**{user_model.USERNAME_FIELD: name}).first()
            if user is None:
                user = user_model.objects.create_user(name)  # no password: a token only
                self.stderr.write(f"Compte « {name} » créé (sans mot de passe).")
            elif user.is_staff or user.is_superuser:
                raise CommandError(STAFF_REFUSED.format(name=name))
            elif not user.is_active:
                raise CommandError(INACTIVE_REFUSED.format(name=name))
            token, _ = Token.objects.get_or_create(user=user)
        self.stdout.write(token.key)
