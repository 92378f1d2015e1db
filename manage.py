#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "makilab.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # A bad variable is its own one-line message: Django first fails to find the
        # command ("KeyError: 'memory_stats'") and the traceback buries the variable.
        sys.stderr.write(f"Configuration invalide : {exc}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
