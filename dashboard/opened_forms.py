"""Forms that edit a stored fact over the version they opened: the fact edit form and the
agent's item edit form of /memory.

Each shown field carries the value the form opened with (a hidden initial-* input,
show_hidden_initial), and the form carries the fact's version (``opened``, fact_version):
a save writes only the fields the owner changed, and fact_update refuses it (FactChanged)
when the fact changed since; the form then comes back over the fact as stored now, the
owner's changes kept (``over``), and says what changed (``changed_text``).
"""

from __future__ import annotations

from django import forms
from django.utils import formats

from memory.form_errors import form_shown_values
from memory.models import Fact
from memory.services.fact_revisions import (
    FACT_FORGOTTEN_SINCE_MESSAGE,
    fact_version,
    fact_version_readable,
)
from memory.services.settings import values_same

FACT_CHANGED_START = (
    "Ce fait a changé depuis que vous l'avez ouvert (un autre onglet, l'agent ou l'administration)"
)
FACT_CHANGED_END = (
    "Rien n'a été enregistré : vos modifications sont gardées ci-dessous, les autres champs "
    "montrent les valeurs enregistrées maintenant ; enregistrez à nouveau pour garder les vôtres."
)
FACT_CHANGED_FIELDS = FACT_CHANGED_START + " ; maintenant, {fields}. " + FACT_CHANGED_END
FACT_CHANGED_ELSEWHERE = (
    FACT_CHANGED_START + ", mais pas dans les champs de ce formulaire (son expiration, "
    "peut-être : voir ci-dessous). " + FACT_CHANGED_END
)
FIELD_NOW = "{label} : « {value} »"
# QA: a version the form could not read was said as a change made since.
FACT_VERSION_UNREADABLE = (
    "La version du fait que ce formulaire a ouverte est illisible : rien n'a été enregistré. "
    "Vos modifications sont gardées ci-dessous, les autres champs montrent les valeurs "
    "enregistrées maintenant ; enregistrez à nouveau pour garder les vôtres."
)


class OpenedVersionForm(forms.Form):
    """A form editing the fields SHOWN_FIELDS of a fact, over the version it opened.

    ``FIELD_ATTRS`` names the fact's attribute of a field whose name differs (the agent's
    item form says « content » for the fact's value).
    """

    # The fact as the form opened it (fact_version): a save over a change made since, in
    # another tab, by the agent or the admin, is refused instead of undoing it unseen.
    opened = forms.CharField(widget=forms.HiddenInput, required=False)
    SHOWN_FIELDS: tuple[str, ...] = ()
    FIELD_ATTRS: dict[str, str] = {}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in self.SHOWN_FIELDS:
            self.fields[name].show_hidden_initial = True

    @classmethod
    def stored(cls, fact: Fact, name: str) -> object:
        """The fact's stored value of the form's field ``name``."""
        return getattr(fact, cls.FIELD_ATTRS.get(name, name))

    @classmethod
    def initial_of(cls, fact: Fact) -> dict[str, object]:
        """The form's opening values: the fact as stored now, and its version."""
        return {
            **{name: cls.stored(fact, name) for name in cls.SHOWN_FIELDS},
            "opened": fact_version(fact),
        }

    def clean_opened(self) -> str:
        opened = self.cleaned_data["opened"]
        if opened and not fact_version_readable(opened):
            raise forms.ValidationError("Version illisible.", code="unreadable_version")
        return opened

    def opened_version(self) -> str | None:
        """fact_update's ``opened``: None (no check) for a post without it."""
        return self.cleaned_data.get("opened") or None

    def owner_changed(self) -> list[str]:
        """The shown fields the owner changed. A post that does not say what its form
        showed for a field (a script, a page from before these inputs) is taken as
        changing it, as it always was."""
        return [
            name
            for name in self.SHOWN_FIELDS
            if name in self.changed_data or self.add_initial_prefix(name) not in self.data
        ]

    def shown_changes(self) -> dict[str, object]:
        """fact_update's keyword arguments for the shown fields the owner changed."""
        changed = self.owner_changed()
        return {
            self.FIELD_ATTRS.get(name, name): self.cleaned_data[name]
            for name in self.SHOWN_FIELDS
            if name in changed
        }

    def opened_values(self) -> dict[str, object]:
        """What the form showed for each field it says it showed (form_shown_values)."""
        return form_shown_values(self, self.SHOWN_FIELDS)

    def changed_since(self, fact: Fact) -> list[str]:
        """The shown fields whose stored value differs from what the form opened with."""
        return [
            name
            for name, seen in self.opened_values().items()
            if not values_same(self.stored(fact, name), seen)
        ]

    def over(self, fact: Fact, message: str) -> OpenedVersionForm:
        """This form again over ``fact`` as stored now, saying ``message``: what the owner
        changed stays as typed, the other fields show the stored values, and the opening
        values (initial-*, ``opened``) are the stored ones, so saving again writes only
        the owner's changes over the row as it is now."""
        data = self.data.copy()
        changed = self.owner_changed()
        for name in self.SHOWN_FIELDS:
            field = self.fields[name]
            stored = field.prepare_value(self.stored(fact, name))
            stored = "" if stored is None else str(stored)
            data[self.add_initial_prefix(name)] = stored
            if name not in changed:
                data[self.add_prefix(name)] = stored
        data[self.add_prefix("opened")] = fact_version(fact)
        form = type(self)(data, auto_id=self.auto_id, prefix=self.prefix)
        form.is_valid()
        form.add_error(None, message)
        return form

    def changed_text(self, fact: Fact, refusal: str) -> str:
        """The refusal of an edit over a change made since: the fields changed, with their
        values now (the service's own words when the form does not say what it showed)."""
        if fact.forgotten:
            return FACT_FORGOTTEN_SINCE_MESSAGE  # saving again restores it, knowingly
        if not self.opened_values():
            return refusal
        said = [
            FIELD_NOW.format(label=self.fields[name].label, value=self.shown(fact, name))
            for name in self.changed_since(fact)
        ]
        if not said:
            return FACT_CHANGED_ELSEWHERE
        return FACT_CHANGED_FIELDS.format(fields=", ".join(said))

    def shown(self, fact: Fact, name: str) -> str:
        """The stored value of the field ``name`` as the owner reads it: a choice by its
        label, a number in French (« 0,9 »), a list by commas."""
        value = self.stored(fact, name)
        field = self.fields[name]
        if isinstance(field, forms.ChoiceField):
            return str(_choice_label(field.choices, value))
        if isinstance(value, float):
            return formats.localize(value)
        if isinstance(value, list):
            return ", ".join(value) or "aucun"
        return str(value)


def _choice_label(choices, value) -> object:
    """The label of ``value`` among ``choices``, groups included; the value when unknown."""
    for key, label in choices:
        if isinstance(label, (list, tuple)):
            found = _choice_label(label, value)
            if found is not value:
                return found
        elif key == value:
            return label
    return value
