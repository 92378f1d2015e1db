"""The database connection of a long-lived helper thread (the log writer, the facts'
keyword query), kept across calls and following the configured database."""

from __future__ import annotations

from django.db import connection


def connection_follow(opened_on: object) -> object:
    """Close this thread's connection if it was opened on another database than the one
    configured now (a throw-away memory came or went); returns the configured database's
    name, for the caller to keep and pass back next time. Opening a connection costs
    about a millisecond of CPU, so one that still points to the right file is kept."""
    name = connection.settings_dict["NAME"]
    if opened_on != name:
        connection.close()
    return name
