"""The admin site: its French titles, and the guards every ModelAdmin registered on it
gets, ours and the installed apps' (auth, authtoken, axes) alike.

A guard turns what only a hand-made request sends, and Django's own code answered with
a 500, into the answer Django gives a wrong but ordinary request.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import build_q_object_from_lookup_parameters, prepare_lookup_value
from django.contrib.admin.views.main import ERROR_FLAG, IGNORED_PARAMS, PAGE_VAR
from django.core.exceptions import EmptyResultSet, FullResultSet, ValidationError
from django.db import models
from django.utils.translation import gettext

# Django's own words when an action is posted without rows (French from its catalogue).
NO_ROWS_SELECTED = (
    "Items must be selected in order to perform actions on them. No items have been changed."
)

JSON_TOO_DEEP_MESSAGE = "Ce JSON est trop imbriqué pour être lu : simplifiez-le."


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


class LookupGuard:
    """A filter written by hand that no list could take is refused as Django refuses any
    wrong lookup (``?e=1``), where Django let the database's error through as a 500:

    - a date lookup whose year, month or day is no calendar number (``?created_at__year=
      99999``, the drill-down's or one on any date field): an OverflowError;
    - a regex lookup that is no regex (``?value__regex=(``): SQLite's REGEXP error;
    - a filter the database could not run (``_unrunnable``): one that does not compile (a
      lookup its backend has no SQL for, ``?subjects__contains=x``, a NotSupportedError on
      SQLite; a year comparison past the calendar, ``?created_at__year__gt=99999``; a range
      of one value), or an integer past SQLite's 64 bits (``?id__in=99…9``, an
      OverflowError when the query binds it).
    """

    def get_changelist_instance(self, request):
        queryset = self.get_queryset(request)
        for name, raw in request.GET.items():
            lookup = name.rpartition("__")[2]
            if lookup in ("year", "month", "day") and not (
                raw.isascii() and raw.isdigit() and len(raw) <= 4
            ):
                raise IncorrectLookupParameters(f"{lookup}: {raw[:20]!r}")
            if lookup in ("regex", "iregex") and not _compiles(raw):
                raise IncorrectLookupParameters(f"{lookup}: {raw[:20]!r}")
            if name not in NOT_LOOKUPS and _unrunnable(queryset, name, request.GET.getlist(name)):
                raise IncorrectLookupParameters(f"{name}: {raw[:20]!r}")
        return super().get_changelist_instance(request)


# The changelist's own parameters (ordering, search, page...): no field lookup.
NOT_LOOKUPS = frozenset((*IGNORED_PARAMS, PAGE_VAR, ERROR_FLAG))
# What SQLite binds as an INTEGER; Python's sqlite3 raises OverflowError past it.
SQLITE_INTEGER_RANGE = range(-(2**63), 2**63)


def _unrunnable(queryset, name: str, values: list[str]) -> bool:
    """Whether the database could not run ``queryset`` filtered as the changelist filters
    by the parameter ``name`` (Django's own preparation: ``__in`` split on commas).

    The query is compiled, never run. A parameter that is no field lookup (a list filter's
    own, ``?expired=yes``) or that Django refuses itself (a value its field cannot read,
    a comparison past the integer range it answers without SQL) is left to Django.
    """
    try:
        filtered = queryset.filter(
            build_q_object_from_lookup_parameters({name: prepare_lookup_value(name, values)})
        )
    except Exception:  # Django's changelist judges these: ?e=1, or its list filter's own
        return False
    try:
        _sql, params = filtered.query.get_compiler(using=queryset.db).as_sql()
    except (EmptyResultSet, FullResultSet):
        return False
    except Exception:
        # NotSupportedError, a year past the calendar (``?created_at__year__gt=99999``:
        # ValueError), a range of one value (IndexError): whatever keeps it from compiling
        # would be a 500 when the list runs it (QA 4).
        return True
    return any(
        isinstance(param, int) and not isinstance(param, bool) and param not in SQLITE_INTEGER_RANGE
        for param in params
    )


def _compiles(pattern: str) -> bool:
    import re

    try:
        re.compile(pattern)
    except (re.error, OverflowError, RecursionError):
        return False
    return True


class ReadableJSONField(forms.JSONField):
    """Django's JSON form field, refusing in French a text nested deeper than the parser
    recurses (5,000 « [ »), as it refuses any text that is no JSON: json.loads raised a
    RecursionError through it, a 500. Its hidden initial-* input is read the same way."""

    def to_python(self, value):
        try:
            return super().to_python(value)
        except RecursionError:
            raise ValidationError(JSON_TOO_DEEP_MESSAGE, code="invalid") from None

    def bound_data(self, data, initial):
        try:
            return super().bound_data(data, initial)
        except RecursionError:
            return forms.fields.InvalidJSONInput(data)  # shown back as typed, as bad JSON is


class JSONFieldGuard:
    """Every JSON field of an admin form is a ReadableJSONField (our forms' fields from the
    model included: the admin builds them through formfield_for_dbfield)."""

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if isinstance(db_field, models.JSONField):
            kwargs.setdefault("form_class", ReadableJSONField)
        return super().formfield_for_dbfield(db_field, request, **kwargs)


class AdminGuards(SelectedRowsGuard, LookupGuard, JSONFieldGuard):
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
