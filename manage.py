#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "makilab.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        # Loaded here, so that a bad variable is its own one-line message: Django would
        # first fail to find the command ("KeyError: 'memory_stats'") and print a traceback.
        settings.INSTALLED_APPS  # noqa: B018
    except ImproperlyConfigured as exc:
        sys.stderr.write(f"ImproperlyConfigured: {exc}\n")
        sys.exit(1)
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
