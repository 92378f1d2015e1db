"""The Django admin's read-only rows: the logs (messages, summaries, retrievals, jobs,
digests) and the forgets, visible and never edited by hand.

ReadOnlyAdminMixin is here for every read-only admin (the fact history in
memory.admin, the LLM usage in agent.admin). The guards against hand-made requests
(a date drill-down or an action selection that is no number) are the admin site's,
given to every admin it registers: makilab.admin_site.
"""

from __future__ import annotations

from django.contrib import admin, messages

from memory.admin_columns import yes_no_column
from memory.admin_confirm import erase_unconfirmed
from memory.exceptions import MemoryServiceError
from memory.models import Actor, Digest, Forgetting, Job, MemoryRetrieval, Message, Summary
from memory.services.erasing import forgetting_erase
from memory.services.forgetting import forgetting_restore

# The keys of Forgetting.counts (memory.services.forgetting_plan), in French.
FORGETTING_COUNT_NAMES = (
    ("exchanges", "échange(s)"),
    ("messages", "message(s)"),
    ("facts", "fait(s)"),
    ("summaries", "résumé(s)"),
    ("history", "ligne(s) d'historique"),
)


class ReadOnlyAdminMixin:
    """Logs and derived rows: visible, never edited by hand."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Message)
class MessageAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "created_at",
        "channel",
        "role",
        "author",
        "source",
        "content",
        "compacted_said",
        "observed_said",
        "digested_at",
        "index_state",
        "index_error",
    )
    list_filter = ("channel", "role", "source", "compacted", "observed", "index_state")
    search_fields = ("content", "author")
    date_hierarchy = "created_at"

    compacted_said = yes_no_column("compacted", "compacté")
    observed_said = yes_no_column("observed", "salon observé")


@admin.register(Summary)
class SummaryAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("created_at", "channel", "message_count", "content", "index_state")
    list_filter = ("channel", "index_state")
    search_fields = ("content",)


@admin.register(MemoryRetrieval)
class MemoryRetrievalAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("created_at", "channel", "message_preview", "tokens_added", "total_ms")
    list_filter = ("channel",)
    search_fields = ("message_preview",)
    date_hierarchy = "created_at"


@admin.register(Forgetting)
class ForgettingAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """The forgets: read-only; "restore" undoes one within its retention window."""

    list_display = ("created_at", "topic", "state", "actor", "selection", "purge_after")
    list_filter = ("state", "actor")
    actions = ["restore_forgettings", "erase_forgettings"]

    @admin.action(description="Annuler les oublis sélectionnés")
    def restore_forgettings(self, request, queryset) -> None:
        self._each(request, queryset, forgetting_restore, "Oubli n° {id} annulé.")

    exclude = ("counts",)
    readonly_fields = ("counts_shown",)

    @admin.display(description="quantités")
    def counts_shown(self, obj: Forgetting) -> str:
        """What the forget took, in French (the JSON's keys are English)."""
        return ", ".join(f"{obj.counts.get(key, 0)} {name}" for key, name in FORGETTING_COUNT_NAMES)

    @admin.action(description="Effacer maintenant ce que les oublis sélectionnés ont pris")
    def erase_forgettings(self, request, queryset):
        asked = erase_unconfirmed(
            self,
            request,
            queryset,
            action="erase_forgettings",
            question=(
                f"Effacer maintenant ce que {len(queryset)} oubli(s) ont pris (messages, faits, "
                "résumés et leur historique), sans attendre la fin du délai d'annulation ?"
            ),
            rows=(
                f"Oubli n° {forgetting.pk} « {forgetting.topic} » : {self.counts_shown(forgetting)}"
                for forgetting in queryset
            ),
        )
        if asked is not None:
            return asked
        self._each(request, queryset, forgetting_erase, "Oubli n° {id} effacé définitivement.")
        return None

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
