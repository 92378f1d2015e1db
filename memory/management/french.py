"""Management commands speak French (argparse's and Django's own words are English).

``FrenchCommand`` is the base of the project's commands: its parser (and its
subcommands' parsers) say what argparse says, in French, from the command line
(usage, then the message, exit status 2) and through ``call_command`` (a
CommandError, as any other refusal); their --help too (its sections, and the options
every command has).
"""

from __future__ import annotations

import argparse
import re
import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import OperationalError

_SAID = [
    (
        r"argument (\S+): invalid int value: '(.*)'",
        "option {0} : « {1} » n'est pas un nombre entier.",
    ),
    (r"argument (\S+): invalid float value: '(.*)'", "option {0} : « {1} » n'est pas un nombre."),
    (
        r"argument (\S+): invalid choice: '(.*)' \(choose from (.*)\)",
        "option {0} : « {1} » n'est pas un choix possible ({2}).",
    ),
    (r"argument (\S+): expected one argument", "option {0} : une valeur est attendue."),
    (r"the following arguments are required: (.*)", "arguments obligatoires manquants : {0}."),
    (r"unrecognized arguments: (.*)", "arguments inconnus : {0}."),
    (
        r"ambiguous option: (\S+) could match (.*)",
        "option {0} ambiguë : elle peut désigner {1}. Écrivez-la en entier.",
    ),
    (
        r"argument (\S+): ignored explicit argument '(.*)'",
        "option {0} : elle ne prend pas de valeur (« {1} » donné).",
    ),
    (r"argument (\S+): (.*)", "option {0} : {1}"),
]


def said_in_french(message: str) -> str:
    for pattern, french in _SAID:
        found = re.fullmatch(pattern, message, flags=re.S)
        if found:
            said = french.format(*found.groups())
            if said.startswith("option ") and not found.group(1).startswith("-"):
                said = "argument" + said.removeprefix("option")  # a positional one
            return said
    return message


# The help of the options every command has (argparse's and Django's own, in English).
_OPTION_HELP = {
    "help": "Afficher cette aide et quitter.",
    "version": "Afficher la version et quitter.",
    "verbosity": "Niveau de détail : 0 minimal, 1 normal, 2 détaillé, 3 très détaillé.",
    "settings": (
        "Le module de réglages Python, par exemple « makilab.settings » (sinon la variable "
        "DJANGO_SETTINGS_MODULE)."
    ),
    "pythonpath": "Un dossier à ajouter au chemin de recherche de Python.",
    "traceback": "Afficher la trace complète d'une erreur de la commande.",
    "no_color": "Ne pas colorer la sortie.",
    "force_color": "Colorer la sortie même hors d'un terminal.",
    "skip_checks": "Ne pas lancer les vérifications du projet.",
}
_USAGE = "usage: "


class FrenchCommandParser(CommandParser):
    def format_usage(self):
        return _usage_in_french(super().format_usage())

    def format_help(self):
        return _usage_in_french(super().format_help())

    def error(self, message):
        message = said_in_french(message)
        if self.called_from_command_line:
            self.print_usage(sys.stderr)
            self.exit(2, f"{self.prog} : erreur : {message}\n")
        raise CommandError(message)


NOT_MIGRATED_MESSAGE = (
    "La base de cette mémoire n'est pas encore créée (ou pas à jour) : lancez "
    "`python manage.py migrate`, ou `python manage.py serve`, qui la crée."
)


class FrenchCommand(BaseCommand):
    def execute(self, *args, **options):
        """The command; on a database never created (or not migrated), a French refusal
        saying how to create it instead of SQLite's « no such table » traceback."""
        try:
            return super().execute(*args, **options)
        except OperationalError as exc:
            if "no such table" not in str(exc) and "no such column" not in str(exc):
                raise
            raise CommandError(NOT_MIGRATED_MESSAGE) from None

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        # Django builds CommandParsers (the command's, its subcommands'); the subclass only
        # changes how they refuse.
        _french(parser)
        return parser


def _usage_in_french(text: str) -> str:
    return "utilisation : " + text.removeprefix(_USAGE) if text.startswith(_USAGE) else text


def _french(parser) -> None:
    parser.__class__ = FrenchCommandParser
    # The sections of --help (argparse's own titles are English).
    parser._positionals.title = "arguments"
    parser._optionals.title = "options"
    for action in parser._actions:
        if action.dest in _OPTION_HELP and action.help != argparse.SUPPRESS:
            action.help = _OPTION_HELP[action.dest]
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                _french(subparser)
