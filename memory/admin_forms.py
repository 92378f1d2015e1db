"""The Django admin's forms: each checks what the service behind its save_model would
refuse, with the same rule and French message, so a refusal shows on the form (raised
from save_model, it was a 500)."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memory.exceptions import FactKeyLookAlike, MemoryServiceError
from memory.form_errors import form_errors_add, form_shown_values
from memory.models import (
    FACT_ASIDE_KEY_PATTERN,
    AgentItem,
    ChannelSettings,
    Fact,
    FactKind,
    MemorySettings,
    fact_key_composed,
    validate_fact_key,
    validate_fact_key_shape,
)
from memory.models.rules import invisible_in
from memory.services.fact_keys import key_look_alike_refuse
from memory.services.fact_ownership import STATED_FIELDS
from memory.services.fact_revisions import (
    FACT_CHANGED_MESSAGE,
    FACT_FORGOTTEN_SINCE_MESSAGE,
    fact_version,
    fact_version_readable,
)
from memory.services.messages import channel_validate
from memory.services.search import DATE_RANGE_UTC_MESSAGE, moment_in_range
from memory.services.self_memory_validate import agent_item_validate
from memory.services.settings import (
    EDITABLE_FIELDS,
    memory_settings_changes_clean,
    values_same,
)

EXPIRY_PAST_MESSAGE = (
    "Cette date d'expiration est déjà passée : le fait quitterait la mémoire aussitôt. "
    "Pour le retirer, oubliez-le."
)
SETTING_CHANGED_SINCE_MESSAGE = (
    "« {label} » a changé depuis l'ouverture de la page (/memory, l'API ou un autre "
    "onglet) : il vaut maintenant {value}. Rien n'a été enregistré : vérifiez vos "
    "modifications, puis enregistrez-les à nouveau pour garder les vôtres."
)
KEY_TAKEN_MESSAGE = (
    "La clé « {key} » est déjà prise par une autre mémoire (un fait, ou un élément de "
    "l'agent) : choisissez-en une autre."
)


def _forgotten_since(current: Fact, opened: str) -> bool:
    """Whether ``current`` was forgotten after the version ``opened`` a form read."""
    moment = parse_datetime(opened) if fact_version_readable(opened) else None
    return (
        bool(current.forgotten and current.forgotten_at and moment)
        and current.forgotten_at > moment
    )


class OpenedVersionAdminForm(forms.ModelForm):
    """A change form that carries the fact's version and what it showed of each field
    (hidden initial inputs): a save writes only the fields the owner changed (save_model
    reads ``changed_data``), and one changing a field that changed since the form opened
    (the API, the agent, the page) is refused with the value stored now, the form then
    showing it as its opening value: saving again takes the owner's (QA 2: the old value
    came back; QA 3: the agent's items too). The save hands the version this check read to
    fact_update (``opened_version``), which compares it on the row it locks: a write landing
    between the check and the save is refused there (QA 9b: it was overwritten unseen)."""

    opened = forms.CharField(widget=forms.HiddenInput, required=False)
    _checked_version: str | None = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.fields["opened"].initial = fact_version(self.instance)
            for name, field in self.fields.items():
                # A post without the form's opening values (a script, a page from before
                # them) compares with the row as stored, as it always did.
                initial = self.add_initial_prefix(name)
                posted = not self.is_bound or any(k.startswith(initial) for k in self.data)
                if name != "opened" and posted:
                    field.show_hidden_initial = True

    def clean(self):
        cleaned = super().clean()
        opened = (cleaned.get("opened") or "").strip()
        if self.instance.pk is None:
            return cleaned  # a new fact
        if not opened:
            # A post from before these inputs: changed_data compares with the row the form
            # was built on, as it always did; that row's version is the one checked.
            self._checked_version = fact_version(self.instance)
            return cleaned
        current = Fact.all_objects.filter(pk=self.instance.pk).first()
        if current is None:
            return cleaned
        self._checked_version = fact_version(current)
        if self._checked_version == opened:
            return cleaned
        if _forgotten_since(current, opened) and set(self.changed_data) - {"opened"}:
            # The form showed it live: saving would revive it unseen (fact_update revives).
            # Opened again on it as it is, so saving again restores it knowingly.
            self._opened_at(current, [])
            raise ValidationError(FACT_FORGOTTEN_SINCE_MESSAGE)
        # A field the row already holds as posted is no conflict (QA 3: a double submit
        # was refused as a change made since, by itself).
        since = [
            name
            for name in self.changed_data
            if self._changed_since(name, current) and not self._holds(name, current)
        ]
        if since:
            self._opened_at(current, since)
            raise ValidationError(FACT_CHANGED_MESSAGE.format(value=current.value))
        return cleaned  # changed elsewhere only: saved over the row as this check read it

    def opened_version(self) -> str | None:
        """fact_update's ``opened``: the fact's version the owner's changes were checked
        against (clean), None when nothing was (a new fact, or erased since)."""
        return self._checked_version

    def _changed_since(self, name: str, current: Fact) -> bool:
        """Whether the stored ``name`` differs from what the form showed of it."""
        if name == "opened" or name not in self.fields:
            return False
        field = self.fields[name]
        shown = field.hidden_widget().value_from_datadict(
            self.data, self.files, self.add_initial_prefix(name)
        )
        return field.has_changed(getattr(current, name), shown)

    def _holds(self, name: str, current: Fact) -> bool:
        """Whether the stored ``name`` is already what the owner posts."""
        return name in self.cleaned_data and values_same(
            getattr(current, name), self.cleaned_data[name]
        )

    def _opened_at(self, current: Fact, names: list[str]) -> None:
        """The form as opened on ``current``: its version, and the stored value as what it
        showed of ``names``, so that saving again writes the owner's values knowingly."""
        data = self.data.copy()
        data[self.add_prefix("opened")] = fact_version(current)
        for name in names:
            field = self.fields[name]
            widget = field.hidden_widget()
            value = field.prepare_value(getattr(current, name))
            initial_name = self.add_initial_prefix(name)
            if isinstance(widget, forms.MultiWidget):
                for i, part in enumerate(widget.decompress(value)):
                    data[f"{initial_name}_{i}"] = widget.widgets[i].format_value(part) or ""
            else:
                data[initial_name] = widget.format_value(value) or ""
        self.data = data


class FactAdminForm(OpenedVersionAdminForm):
    """The owner's fact: its key must be free among every row, the ones the list hides too
    (the model's own check reads Fact.objects, which hides them: the insert failed, a 500);
    edited over the version it opened (OpenedVersionAdminForm).
    """

    class Meta:
        model = Fact
        fields = ("key", *STATED_FIELDS)  # what an owner's write may state

    def clean_expires_at(self):
        """The years every other writer accepts (the API, the import): a moment past them
        overflowed on its way to UTC (a 500) or made every later export unimportable."""
        expires_at = self.cleaned_data.get("expires_at")
        if expires_at is not None and not moment_in_range(expires_at):
            raise ValidationError(DATE_RANGE_UTC_MESSAGE)
        if (
            expires_at is not None
            and "expires_at" in self.changed_data
            and (expires_at <= timezone.now())
        ):
            # The fact would leave the memory at once as expired (and the agent's next
            # statement could overwrite it): forgetting it is what says that.
            raise ValidationError(EXPIRY_PAST_MESSAGE)
        return expires_at

    def clean_key(self):
        key = self.cleaned_data["key"]
        if "key" in self.changed_data:
            key = fact_key_composed(key)  # an accent typed apart is the composed key
        holder = Fact.all_objects.filter(key=key).exclude(pk=self.instance.pk).first()
        self._stated_anew = holder is not None and self.instance.pk is None and _stated_anew(holder)
        if holder is not None and not self._stated_anew:
            raise ValidationError(KEY_TAKEN_MESSAGE.format(key=key))
        if self._stated_anew:
            # The model's checks of this field are left out below (its holder is no
            # duplicate): the key rule is not (an aside key typed by hand was a 500).
            validate_fact_key(key)
        if self.instance.pk is None or "key" in self.changed_data:
            try:
                key_look_alike_refuse(key, but=self.instance.pk)
            except FactKeyLookAlike as exc:
                raise ValidationError(str(exc)) from None
        if self._keeps_its_key():
            validate_fact_key_shape(key)
        return key

    def _get_validation_exclusions(self):
        exclude = super()._get_validation_exclusions()
        if getattr(self, "_stated_anew", False):
            exclude.add("key")  # its holder moves aside in fact_store: not a duplicate
        if self._keeps_its_key():
            # A fact restored beside the owner's newer one keeps the key a forget set it
            # aside under, and one stored before invisible characters were refused keeps
            # them: keys no writer may choose now, kept as they are, only their shape
            # checked (clean_key), as fact_update does.
            exclude.add("key")
        return exclude

    def _keeps_its_key(self) -> bool:
        key = self.instance.key or ""
        return (
            self.instance.pk is not None
            and "key" not in self.changed_data
            and (FACT_ASIDE_KEY_PATTERN.search(key) is not None or invisible_in(key) is not None)
        )


def _stated_anew(holder: Fact) -> bool:
    """Whether the owner's new fact may take ``holder``'s key: an owner's fact that is not
    live (forgotten, taken by a forget, expired), which fact_store sets aside or brings
    back, as the API and /memory do (the admin refused it, its words pointing at a forget)."""
    return holder.kind == FactKind.OWNER and (
        holder.forgotten or holder.forgetting_id is not None or holder.is_expired
    )


class MemorySettingsAdminForm(forms.ModelForm):
    """The settings row as the admin edits it, under the rule every settings write follows.

    Each field carries the value the page opened with (a hidden initial-* input), so
    changed_data is what the owner changed on this page, not what differs from the row
    now: a knob moved meanwhile on /memory or through the API is not put back. Those
    changes go through memory_settings_changes_clean, the notes' rules of every writer
    ("Profil" -> "Profil.md", "#makilab" -> "makilab"), its refusals shown by their field.
    A field the owner changed whose stored value changed since the page opened (a note
    added on /memory, a slider moved) is refused by that field with the stored value, as
    /memory's sliders and the fact form refuse it; the form then opens on that value, so
    saving again takes the owner's (QA 3b: the other writer's change was lost unseen).
    """

    class Meta:
        model = MemorySettings
        fields = EDITABLE_FIELDS

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.show_hidden_initial = True

    def clean(self):
        cleaned = super().clean()
        try:
            cleaned.update(memory_settings_changes_clean(changes=self.settings_changes()))
        except ValidationError as exc:
            form_errors_add(self, exc)
            return cleaned
        self._refuse_changed_since(cleaned)
        return cleaned

    def settings_changes(self) -> dict[str, object]:
        """The fields the owner changed on this page, with their cleaned values."""
        return {
            name: self.cleaned_data[name] for name in self.changed_data if name in self.cleaned_data
        }

    def settings_opened(self) -> dict[str, object]:
        """What the page showed of each field it says it showed (form_shown_values):
        memory_settings_update's ``opened``. A post without them (a script, a page from
        before them) compares with the row as stored."""
        return form_shown_values(self)

    def _refuse_changed_since(self, cleaned: dict[str, object]) -> None:
        """Each changed field stored since the page opened, to another value than the
        owner's, refused by its field with the stored value (memory_settings_update's rule,
        checked here so it shows on the form: save_model runs in the same transaction)."""
        # The row as stored now (self.instance too, until _post_clean writes the form in).
        stored = MemorySettings.objects.get(pk=self.instance.pk)
        opened = self.settings_opened()
        since = [
            name
            for name in self.changed_data
            if name in opened
            and name in cleaned
            and not values_same(getattr(stored, name), opened[name])
            and not values_same(getattr(stored, name), cleaned[name])
        ]
        if not since:
            return
        data = self.data.copy()
        for name in since:
            value = getattr(stored, name)
            field = self.fields[name]
            data[self.add_initial_prefix(name)] = field.hidden_widget().format_value(
                field.prepare_value(value)
            )
            label = field.label or name
            self.add_error(
                name, SETTING_CHANGED_SINCE_MESSAGE.format(label=label, value=_said(value))
            )
        self.data = data  # the form opens on the stored values: saving again takes the owner's


def _said(value: object) -> str:
    """A stored setting as the owner reads it in a message."""
    if isinstance(value, bool):
        return "activé" if value else "désactivé"
    if isinstance(value, list | tuple):
        return ", ".join(f"« {item} »" for item in value) if value else "vide"
    if isinstance(value, str):
        return f"« {value} »" if value else "vide"
    return str(value)


class ChannelSettingsAdminForm(forms.ModelForm):
    """A channel's name under the rule of every writer (channel_validate), checked before
    channel_settings_set would refuse it."""

    class Meta:
        model = ChannelSettings
        fields = ("channel", "observed")

    def clean_channel(self):
        try:
            return channel_validate(self.cleaned_data["channel"])
        except ValidationError as exc:
            raise ValidationError(exc.messages) from None


class AgentItemAdminForm(OpenedVersionAdminForm):
    """The agent's item under the rule agent_item_store applies (kind, category, text),
    edited over the version it opened (OpenedVersionAdminForm)."""

    class Meta:
        model = AgentItem
        fields = ("kind", "category", "value", "importance")  # the admin gives its own list

    def clean(self):
        cleaned = super().clean()
        kind = cleaned.get("kind", self.instance.kind)
        if kind is None or "value" not in cleaned or "category" not in cleaned:
            return cleaned  # a field already refused
        try:
            agent_item_validate(kind=kind, category=cleaned["category"], content=cleaned["value"])
        except MemoryServiceError as exc:
            self.add_error(None, str(exc))
        return cleaned
