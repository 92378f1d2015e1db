"""Columns of the memory's admin lists, shared by memory.admin and memory.admin_logs."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import admin
from django.db.models import Model

YES, NO = "Oui", "Non"


def yes_no_column(field: str, description: str) -> Callable[..., str]:
    """A list column saying a boolean ``field`` in words, « Oui » / « Non », headed
    ``description`` and sorted by the field: Django's boolean icon carries the English
    alternative text « True » / « False », read aloud by a screen reader (QA).

    A null says « Non » (Message.observed is null for every message of a room that is
    not observed). Set it as a ModelAdmin attribute named ``<field>_said`` and list
    that name.
    """

    @admin.display(description=description, ordering=field)
    def said(model_admin, obj: Model) -> str:
        return YES if getattr(obj, field) else NO

    said.__name__ = said.__qualname__ = f"{field}_said"
    return said
