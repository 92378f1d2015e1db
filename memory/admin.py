"""The Django admin of the memory: facts with history, the settings rows.

The read-only logs are memory.admin_logs, imported here: Django's autodiscovery
imports this module only, and that import registers them. The forms, which check what
each save_model's service would refuse, are memory.admin_forms.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memory.admin_changelist import changelist_form, changelist_formset
from memory.admin_columns import yes_no_column
from memory.admin_confirm import erase_unconfirmed
from memory.admin_forms import (
    AgentItemAdminForm,
    ChannelSettingsAdminForm,
    FactAdminForm,
    MemorySettingsAdminForm,
    OpenedVersionAdminForm,
)
from memory.admin_logs import ReadOnlyAdminMixin
from memory.exceptions import FactChanged
from memory.models import (
    Actor,
    AgentItem,
    ChannelSettings,
    Fact,
    FactRevision,
    MemorySettings,
    Message,
    RevisionReason,
)
from memory.services.erasing import fact_erase
from memory.services.facts import (
    fact_forget,
    fact_restore,
    fact_store,
    fact_update,
)
from memory.services.settings import memory_settings_update


class ExpiredFilter(admin.SimpleListFilter):
    title = "expiré"
    parameter_name = "expired"

    def lookups(self, request, model_admin):
        return [("yes", "Oui"), ("no", "Non")]

    def queryset(self, request, queryset):
        now = timezone.now()
        if self.value() == "yes":
            return queryset.filter(expires_at__lte=now)
        if self.value() == "no":
            return queryset.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        return queryset


class ChannelFilter(admin.SimpleListFilter):
    """The facts' channels, the empty one named (QA: Django's filter gave it an empty link,
    read by a screen reader as an unnamed one)."""

    title = "canal"
    parameter_name = "channel"
    NONE = "__aucun__"

    def lookups(self, request, model_admin):
        channels = (
            model_admin.get_queryset(request).order_by("channel").values_list("channel", flat=True)
        )
        return [
            (channel or self.NONE, channel or "Aucun (tous les canaux)")
            for channel in dict.fromkeys(channels)
        ]

    def queryset(self, request, queryset):
        value = self.value()
        if value is None:
            return queryset
        return queryset.filter(channel="" if value == self.NONE else value)


class FactRevisionInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = FactRevision
    extra = 0
    fields = ("created_at", "actor", "reason", "old_value", "new_value", "changes", "note")
    readonly_fields = fields
    ordering = ("-created_at", "-id")

    def has_view_permission(self, request, obj=None) -> bool:
        return True


@admin.register(Fact)
class FactAdmin(admin.ModelAdmin):
    form = FactAdminForm
    list_display = (
        "key",
        "value",
        "memory_type",
        "importance",
        "source",
        "channel",
        "expires_at",
        "forgotten_said",
        "index_state",
    )
    list_display_links = ("key",)
    list_editable = ("value", "importance")
    list_filter = (
        "memory_type",
        "source",
        ChannelFilter,
        "forgotten",
        ExpiredFilter,
        "index_state",
    )
    search_fields = ("key", "value", "subjects")
    readonly_fields = (
        "forgotten",
        "forgotten_at",
        "created_at",
        "updated_at",
        "last_accessed_at",
        "access_count",
        "source_message_shown",
        "forgetting",
        "owner_fields",
        # The indexing state machine's fields: shown (an error stays visible), never edited.
        "index_state",
        "index_attempts",
        "index_error",
        "index_retry_at",
        "indexed_at",
        "version",
        "indexed_version",
        "index_queued_at",
        "index_lease_token",
        "index_lease_until",
    )
    # The owner's facts only (Fact.objects); the agent's self and goals: AgentItemAdmin.
    exclude = ("kind", "category")
    inlines = [FactRevisionInline]
    actions = ["restore_facts", "forget_facts", "erase_facts"]
    delete_confirmation_template = "admin/memory/fact/forget_confirmation.html"

    forgotten_said = yes_no_column("forgotten", "oublié")

    @admin.display(description="message d'origine")
    def source_message_shown(self, obj: Fact) -> str:
        """The fact's source message, read as every page reads messages: one a forget took
        (a fact it left keeps the link until the purge) shows nothing of its text."""
        message = Message.objects.filter(pk=obj.source_message_id).first()
        return str(message) if message is not None else "—"

    def get_changeform_initial_data(self, request: HttpRequest) -> dict:
        """The add form pre-filled from the URL (?key=…&value=…): an expiry given there as
        text reached the date-time widget as a string (a 500); it is parsed, or dropped."""
        initial = super().get_changeform_initial_data(request)
        if "expires_at" in initial:
            try:
                parsed = parse_datetime(str(initial["expires_at"]))
            except ValueError:  # well formed, but no such date
                parsed = None
            if parsed is None:
                initial.pop("expires_at")
            else:
                initial["expires_at"] = (
                    parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed)
                )
        return initial

    def get_changelist_form(self, request, **kwargs):
        return changelist_form(super().get_changelist_form(request, **kwargs))

    def get_changelist_formset(self, request, **kwargs):
        return changelist_formset(super().get_changelist_formset(request, **kwargs), request)

    def _changeform_view(self, request, object_id, form_url, extra_context):
        """The change form, its save refused by fact_update when the fact changed after the
        form's check (a write or a forget between clean() and save_model: FactChanged, its
        own savepoint rolled back, this view's transaction intact). The form is then checked
        again on the row as it is now, by the same rule (OpenedVersionAdminForm.clean): its
        French refusal shown on the form, the owner's changes kept, not a 500 (QA 9b)."""
        try:
            return super()._changeform_view(request, object_id, form_url, extra_context)
        except FactChanged:
            # Once: this view's transaction holds the database's write lock (SQLite,
            # transaction_mode IMMEDIATE), so the row checked again is the row saved next.
            return super()._changeform_view(request, object_id, form_url, extra_context)

    def save_model(self, request, obj: Fact, form, change: bool) -> None:
        # Go through the services so every admin edit leaves a revision.
        if not change:
            fact, _ = fact_store(
                key=obj.key,
                value=obj.value,
                memory_type=obj.memory_type,
                importance=obj.importance,
                subjects=obj.subjects,
                source=obj.source,
                channel=obj.channel,
                actor=Actor.ADMIN,
            )
            if obj.expires_at != fact.expires_at:
                fact = fact_update(fact=fact, actor=Actor.ADMIN, expires_at=obj.expires_at)
            obj.pk = fact.pk
            return
        # The fields the owner changed in the form ("opened" is the form's version, no field).
        changed = {name: getattr(obj, name) for name in form.changed_data if name != "opened"}
        if not changed:
            return
        stored = Fact.objects.get(pk=obj.pk)
        fact_update(
            fact=stored,
            actor=Actor.ADMIN,
            reason=RevisionReason.EDITED,
            opened=_opened_version(form),
            **changed,
        )

    def delete_model(self, request, obj: Fact) -> None:
        # Deleting from the admin forgets: the history stays and the fact can be restored.
        fact_forget(fact=obj, actor=Actor.ADMIN, note="supprimé depuis l'administration")

    def delete_queryset(self, request, queryset) -> None:
        for fact in queryset:
            self.delete_model(request, fact)

    @admin.action(description="Restaurer les faits oubliés sélectionnés")
    def restore_facts(self, request: HttpRequest, queryset) -> None:
        restored = [
            fact_restore(fact=f, actor=Actor.ADMIN) for f in queryset.filter(forgotten=True)
        ]
        self.message_user(request, f"{len(restored)} fait(s) restauré(s).", messages.SUCCESS)

    @admin.action(description="Oublier les faits sélectionnés")
    def forget_facts(self, request: HttpRequest, queryset) -> None:
        forgotten = [
            fact_forget(fact=f, actor=Actor.ADMIN) for f in queryset.filter(forgotten=False)
        ]
        self.message_user(request, f"{len(forgotten)} fait(s) oublié(s).", messages.SUCCESS)

    @admin.action(description="Effacer définitivement les faits sélectionnés (irréversible)")
    def erase_facts(self, request: HttpRequest, queryset) -> TemplateResponse | None:
        asked = erase_unconfirmed(
            self,
            request,
            queryset,
            action="erase_facts",
            question=f"Effacer définitivement {len(queryset)} fait(s), avec leur historique ?",
            rows=(f"« {fact.key} » : {fact.value[:120]}" for fact in queryset),
        )
        if asked is not None:
            return asked
        # The default changelist hides nothing: forgotten facts can be erased too.
        erased = [fact_erase(fact=f, actor=Actor.ADMIN) for f in queryset]
        self.message_user(
            request,
            f"{len(erased)} fait(s) effacé(s) définitivement, avec leur historique.",
            messages.SUCCESS,
        )
        return None

    def get_actions(self, request: HttpRequest) -> dict:
        """Without Django's « Supprimer les faits sélectionnés »: it forgets (delete_model),
        which « Oublier les faits sélectionnés » says, while its page said deleted."""
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def response_delete(self, request: HttpRequest, obj_display: str, obj_id) -> HttpResponse:
        """The delete view forgets (delete_model): said so, not « supprimé »."""
        self.message_user(
            request, f"« {obj_display} » est oublié : il reste restaurable.", messages.SUCCESS
        )
        opts = self.model._meta
        return HttpResponseRedirect(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))


@admin.register(AgentItem)
class AgentItemAdmin(FactAdmin):
    """The agent's memories about itself and its goals (Fact rows of kind self / goal)."""

    form = AgentItemAdminForm  # its own fields (kind, category); keys are derived from the text

    list_display = ("value", "kind", "category", "importance", "forgotten_said", "updated_at")
    list_display_links = ("value",)
    list_editable = ()
    list_filter = ("kind", "category", "forgotten", "index_state")
    search_fields = ("value",)
    exclude = ("key", "memory_type", "subjects", "source", "expires_at", "channel")

    def get_readonly_fields(self, request, obj=None):
        # The kind of an existing item never changes (its key says it).
        return (*super().get_readonly_fields(request, obj), *(("kind",) if obj else ()))

    def save_model(self, request, obj: Fact, form, change: bool) -> None:
        from memory.services.self_memory import agent_item_store

        if not change:
            item = agent_item_store(
                kind=obj.kind, category=obj.category, content=obj.value, actor=Actor.ADMIN
            ).item
            obj.pk = item.pk
            return
        changed = {name: getattr(obj, name) for name in form.changed_data if name != "opened"}
        if changed:
            stored = Fact.all_objects.get(pk=obj.pk)
            fact_update(
                fact=stored,
                actor=Actor.ADMIN,
                reason=RevisionReason.EDITED,
                opened=_opened_version(form),
                **changed,
            )


def _opened_version(form) -> str | None:
    """fact_update's ``opened`` for a save of ``form``: the version the change form's check
    read; None for a row of the list's editable columns (checked column by column against
    the row the list read, changelist_form)."""
    return form.opened_version() if isinstance(form, OpenedVersionAdminForm) else None


@admin.register(MemorySettings)
class MemorySettingsAdmin(admin.ModelAdmin):
    """The single settings row: the changelist opens it directly; no add, no delete.

    Saved through memory_settings_update with only the fields changed on the page, as the
    API and /memory save it.
    """

    form = MemorySettingsAdminForm
    readonly_fields = ("updated_at",)

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def changelist_view(self, request, extra_context=None):
        obj = MemorySettings.load()
        return HttpResponseRedirect(reverse("admin:memory_memorysettings_change", args=[obj.pk]))

    def save_model(self, request, obj, form, change) -> None:
        # The form refused a change over a value stored since the page opened; the service
        # checks it again under the write lock this save runs in.
        memory_settings_update(changes=form.settings_changes(), opened=form.settings_opened())
        obj.refresh_from_db()


@admin.register(ChannelSettings)
class ChannelSettingsAdmin(admin.ModelAdmin):
    """Which channels are observed rooms (saved through the service, as the API and /memory)."""

    form = ChannelSettingsAdminForm
    list_display = ("channel", "observed_said", "updated_at")
    list_filter = ("observed",)
    observed_said = yes_no_column("observed", "observé")
    search_fields = ("channel",)

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return ("channel", "updated_at") if obj is not None else ("updated_at",)

    def save_model(self, request, obj, form, change) -> None:
        from memory.services.channels import channel_settings_set

        saved = channel_settings_set(channel=obj.channel, observed=obj.observed)
        obj.pk, obj.updated_at = saved.pk, saved.updated_at
