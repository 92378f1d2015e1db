"""Management commands refuse a wrong argument in French (argparse's own words are English).

``FrenchCommand`` is the base of the project's commands: its parser (and its
subcommands' parsers) say what argparse says, in French, from the command line
(usage, then the message, exit status 2) and through ``call_command`` (a
CommandError, as any other refusal).
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


class FrenchCommandParser(CommandParser):
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


def _french(parser) -> None:
    parser.__class__ = FrenchCommandParser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                _french(subparser)
