"""The Django admin's read-only rows: the logs (messages, summaries, retrievals, jobs,
digests) and the forgets, visible and never edited by hand.

ReadOnlyAdminMixin is here for every read-only admin (the fact history in
memory.admin, the LLM usage in agent.admin); DateHierarchyGuard for the logs
browsed by date; SelectedRowsGuard for every admin with actions.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.utils.translation import gettext

from memory.exceptions import MemoryServiceError
from memory.models import Actor, Digest, Forgetting, Job, MemoryRetrieval, Message, Summary
from memory.services.erasing import forgetting_erase
from memory.services.forgetting import forgetting_restore


class ReadOnlyAdminMixin:
    """Logs and derived rows: visible, never edited by hand."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class DateHierarchyGuard:
    """A date drill-down whose year, month or day is no calendar number (``?created_at__year=
    99999999999999999999``) is refused as Django refuses any wrong lookup (``?e=1``): its
    own parsing lets an OverflowError through, a 500."""

    def get_changelist_instance(self, request):
        from django.contrib.admin.options import IncorrectLookupParameters

        for part in ("year", "month", "day"):
            raw = request.GET.get(f"{self.date_hierarchy}__{part}")
            if raw is not None and not (raw.isascii() and raw.isdigit() and len(raw) <= 4):
                raise IncorrectLookupParameters(f"{part}: {raw[:20]!r}")
        return super().get_changelist_instance(request)


# Django's own words when an action is posted without rows (French from its catalogue).
NO_ROWS_SELECTED = (
    "Items must be selected in order to perform actions on them. No items have been changed."
)


class SelectedRowsGuard:
    """An action posted with a selected value that is no row id (``_selected_action=abc``,
    only a hand-made request sends one) is refused as an action on no rows: Django's
    filter on it raised ValueError, a 500."""

    def response_action(self, request, queryset):
        from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME

        pk = self.model._meta.pk
        try:
            for value in request.POST.getlist(ACTION_CHECKBOX_NAME):
                pk.run_validators(pk.to_python(value))
        except ValidationError:
            self.message_user(request, gettext(NO_ROWS_SELECTED), messages.WARNING)
            return None  # the changelist redirects to itself, as for an empty selection
        return super().response_action(request, queryset)


@admin.register(Message)
class MessageAdmin(DateHierarchyGuard, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "created_at",
        "channel",
        "role",
        "author",
        "source",
        "content",
        "compacted",
        "observed",
        "digested_at",
        "index_state",
        "index_error",
    )
    list_filter = ("channel", "role", "source", "compacted", "observed", "index_state")
    search_fields = ("content", "author")
    date_hierarchy = "created_at"


@admin.register(Summary)
class SummaryAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("created_at", "channel", "message_count", "content", "index_state")
    list_filter = ("channel", "index_state")
    search_fields = ("content",)


@admin.register(MemoryRetrieval)
class MemoryRetrievalAdmin(DateHierarchyGuard, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("created_at", "channel", "message_preview", "tokens_added", "total_ms")
    list_filter = ("channel",)
    search_fields = ("message_preview",)
    date_hierarchy = "created_at"


@admin.register(Forgetting)
class ForgettingAdmin(SelectedRowsGuard, ReadOnlyAdminMixin, admin.ModelAdmin):
    """The forgets: read-only; "restore" undoes one within its retention window."""

    list_display = ("created_at", "topic", "state", "actor", "selection", "purge_after")
    list_filter = ("state", "actor")
    actions = ["restore_forgettings", "erase_forgettings"]

    @admin.action(description="Annuler les oublis sélectionnés")
    def restore_forgettings(self, request, queryset) -> None:
        self._each(request, queryset, forgetting_restore, "Oubli n° {id} annulé.")

    @admin.action(description="Effacer maintenant ce que les oublis sélectionnés ont pris")
    def erase_forgettings(self, request, queryset) -> None:
        self._each(request, queryset, forgetting_erase, "Oubli n° {id} effacé définitivement.")

    def _each(self, request, queryset, service, done: str) -> None:
        for forgetting in queryset:
            try:
                service(forgetting_id=forgetting.pk, actor=Actor.ADMIN)
            except MemoryServiceError as exc:
                self.message_user(request, f"n° {forgetting.pk} : {exc}", messages.WARNING)
            else:
                self.message_user(request, done.format(id=forgetting.pk), messages.SUCCESS)


@admin.register(Job)
class JobAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Durable background jobs: their state, attempts and last error."""

    list_display = ("created_at", "kind", "key", "state", "attempts", "error", "finished_at")
    list_filter = ("kind", "state")
    search_fields = ("key", "error")


@admin.register(Digest)
class DigestAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """The digests of the observed rooms: what each read, stored and cost."""

    list_display = (
        "started_at",
        "state",
        "trigger",
        "messages_digested",
        "facts_stored",
        "cost_usd",
        "note",
    )
    list_filter = ("state", "trigger")
