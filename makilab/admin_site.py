"""The admin site: its French titles, and the guards every ModelAdmin registered on it
gets, ours and the installed apps' (auth, authtoken, axes) alike.

A guard turns what only a hand-made request sends, and Django's own code answered with
a 500, into the answer Django gives a wrong but ordinary request.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import ValidationError
from django.utils.translation import gettext

# Django's own words when an action is posted without rows (French from its catalogue).
NO_ROWS_SELECTED = (
    "Items must be selected in order to perform actions on them. No items have been changed."
)


class SelectedRowsGuard:
    """An action posted with a selected value that is no row id (``_selected_action=abc``)
    is refused as an action on no rows: Django's filter on it raised ValueError, a 500."""

    def response_action(self, request, queryset):
        pk = self.model._meta.pk
        try:
            for value in request.POST.getlist(ACTION_CHECKBOX_NAME):
                pk.run_validators(pk.to_python(value))
        except ValidationError:
            self.message_user(request, gettext(NO_ROWS_SELECTED), messages.WARNING)
            return None  # the changelist redirects to itself, as for an empty selection
        return super().response_action(request, queryset)


class DateHierarchyGuard:
    """A date lookup whose year, month or day is no calendar number (``?created_at__year=
    99999``, the drill-down's or one written by hand on any date field) and a regex lookup
    that is no regex (``?value__regex=(``) are refused as Django refuses any wrong lookup
    (``?e=1``): Django let an OverflowError, and SQLite's REGEXP its error, through as 500s."""

    def get_changelist_instance(self, request):
        for name, raw in request.GET.items():
            lookup = name.rpartition("__")[2]
            if lookup in ("year", "month", "day") and not (
                raw.isascii() and raw.isdigit() and len(raw) <= 4
            ):
                raise IncorrectLookupParameters(f"{lookup}: {raw[:20]!r}")
            if lookup in ("regex", "iregex") and not _compiles(raw):
                raise IncorrectLookupParameters(f"{lookup}: {raw[:20]!r}")
        return super().get_changelist_instance(request)


def _compiles(pattern: str) -> bool:
    import re

    try:
        re.compile(pattern)
    except (re.error, OverflowError, RecursionError):
        return False
    return True


class AdminGuards(SelectedRowsGuard, DateHierarchyGuard):
    """Every guard, mixed in front of each registered ModelAdmin by MakilabAdminSite."""


class MakilabAdminSite(admin.AdminSite):
    """admin.site (makilab.apps.MakilabAdminConfig): registering a ModelAdmin, with
    @admin.register or from an installed app's admin module, registers it guarded."""

    site_header = "Makilab — mémoire"
    site_title = "Makilab"
    index_title = "Administration de la mémoire"

    def register(self, model_or_iterable, admin_class=None, **options):
        admin_class = admin_class or admin.ModelAdmin
        if not issubclass(admin_class, AdminGuards):
            admin_class = type(
                admin_class.__name__,
                (AdminGuards, admin_class),
                {"__module__": admin_class.__module__, "__qualname__": admin_class.__qualname__},
            )
        super().register(model_or_iterable, admin_class, **options)
