"""Forms of the dashboard: they validate and represent; services write.

Ranges come from the models' validators (ModelForm fields carry them, and
model_field_range reads them for the others), so the sliders, the API and
the admin refuse the same values.
"""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import AuthenticationForm
from django.core.validators import ProhibitNullCharactersValidator

from dashboard.opened_forms import OpenedVersionForm
from memory.api.fields import BOOLEAN_EXPECTED, StrictBooleanField
from memory.exceptions import InvalidTTL
from memory.models import Fact, MemorySettings, MemoryType, validate_fact_key, validate_fact_value
from memory.services.search import QUERY_MAX_CHARS
from memory.services.settings import model_field_range
from memory.services.ttl import parse_ttl

NOT_STAFF_MESSAGE = "Ce compte n'a pas accès au tableau de bord de Makilab."
PREVIEW_MAX_CHARS = 2_000
NOTE_PATH_MAX_CHARS = 500
TTL_AND_NO_EXPIRY_MESSAGE = (
    "Une durée de vie ou « Sans expiration », pas les deux : lequel vaut n'est pas clair."
)
TTL_HELP = "Ex. « 30m », « 1h », « 7d », « 2w »."


# A box the page posts checked: « on »; the API's words for yes or no are read too.
CHECKBOX_WORDS = {**StrictBooleanField.WORDS, "on": True, "": False}


class StrictCheckboxInput(forms.CheckboxInput):
    """A checkbox whose unknown word reaches its field, which refuses it (Django's reads any
    word but « false » and « 0 » as checked: QA saw « maybe » switch auto-retrieval on)."""

    def value_from_datadict(self, data, files, name):
        if name not in data:
            return False
        raw = data.get(name)
        said = CHECKBOX_WORDS.get(str(raw).strip().lower())
        return raw if said is None else said


class StrictCheckboxField(forms.BooleanField):
    """A yes-or-no box that refuses in French a word it does not know (BOOLEAN_EXPECTED)."""

    widget = StrictCheckboxInput

    def to_python(self, value):
        if isinstance(value, str):
            said = CHECKBOX_WORDS.get(value.strip().lower())
            if said is None:
                raise forms.ValidationError(BOOLEAN_EXPECTED, code="invalid")
            value = said
        return super().to_python(value)


def _importance_field(**kwargs) -> forms.FloatField:
    """A fact's importance under the model's own range validators (their messages say the
    limit as the owner reads it, « 1 », where the form field's own said « 1.0 »), the range
    shown on the input."""
    low, high = model_field_range(Fact, "importance")
    return forms.FloatField(
        label="Importance",
        validators=Fact._meta.get_field("importance").validators,
        # Any step: the agent and the API store importances such as 0.75, and a browser
        # refuses to submit a value off the input's step (QA: the text could not be edited).
        widget=forms.NumberInput(attrs={"step": "any", "min": low, "max": high}),
        **kwargs,
    )


class StaffAuthenticationForm(AuthenticationForm):
    """The dashboard's login: like the admin's, only staff accounts get in."""

    def confirm_login_allowed(self, user) -> None:
        super().confirm_login_allowed(user)
        if not user.is_staff:
            raise forms.ValidationError(NOT_STAFF_MESSAGE, code="not_staff")


def _clean_ttl(value: str) -> str:
    value = value.strip()
    try:
        parse_ttl(value)
    except InvalidTTL as exc:
        raise forms.ValidationError(str(exc)) from None
    return value


class SubjectsField(forms.CharField):
    """Tags typed as "a, b, c"; cleaned to a list of words."""

    def to_python(self, value) -> list[str]:
        text = super().to_python(value)
        return [part.strip() for part in text.split(",") if part.strip()]

    def prepare_value(self, value):
        if isinstance(value, list):
            return ", ".join(value)
        return value


class FactValueField(forms.CharField):
    """A fact's value checked by its one rule (validate_fact_value), which refuses a NUL
    character itself: Django's own check, which every CharField adds, said it twice."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.validators = [
            *(v for v in self.validators if not isinstance(v, ProhibitNullCharactersValidator)),
            validate_fact_value,
        ]


class _FactFieldsForm(forms.Form):
    # No max_length: its maxlength attribute would let the browser cut a pasted text
    # silently; the model's rule refuses it with a message instead.
    value = FactValueField(label="Valeur", widget=forms.Textarea(attrs={"rows": 2}))
    memory_type = forms.ChoiceField(
        label="Type", choices=MemoryType.choices, initial=MemoryType.FACT
    )
    subjects = SubjectsField(
        label="Sujets",
        required=False,
        help_text="Séparés par des virgules.",
        widget=forms.TextInput(attrs={"placeholder": "mickael, sport"}),
    )
    ttl = forms.CharField(label="Durée de vie", required=False, max_length=20, help_text=TTL_HELP)

    def clean_ttl(self) -> str:
        return _clean_ttl(self.cleaned_data["ttl"])


class FactAddForm(_FactFieldsForm):
    key = forms.CharField(
        label="Clé",
        max_length=Fact._meta.get_field("key").max_length,
        widget=forms.TextInput(attrs={"placeholder": "user_name"}),
    )
    importance = _importance_field(required=False, help_text="Vide : celle du type.")
    field_order = ("key", "value", "memory_type", "importance", "subjects", "ttl")

    def clean_key(self) -> str:
        key = self.cleaned_data["key"].strip()
        validate_fact_key(key)  # the one key rule, the model's
        return key

    def stated(self) -> dict[str, object]:
        """The arguments for fact_store: an empty field states nothing (a known key keeps it)."""
        return {
            name: value for name, value in self.cleaned_data.items() if value not in (None, "", [])
        }


class FactEditForm(OpenedVersionForm, _FactFieldsForm):
    """The inline edit of a fact, over the version it opened (OpenedVersionForm): a save
    writes only the fields the owner changed, so a field another client changed meanwhile
    is not written back as the form showed it.
    """

    importance = _importance_field()
    no_expiry = StrictCheckboxField(label="Sans expiration", required=False)
    field_order = ("value", "memory_type", "importance", "subjects", "ttl", "no_expiry")
    # The fact's own fields the form shows (ttl and no_expiry are requests: empty, the
    # expiry stays, so they need no opening value).
    SHOWN_FIELDS = ("value", "memory_type", "importance", "subjects")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["ttl"].help_text = "Vide : expiration inchangée. " + TTL_HELP
        # Focus on the text once htmx swaps the form in (QA: it went to the page's body,
        # and a keyboard user tabbed again from the top).
        self.fields["value"].widget.attrs["autofocus"] = True

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("ttl") and cleaned.get("no_expiry"):
            raise forms.ValidationError(TTL_AND_NO_EXPIRY_MESSAGE)
        return cleaned

    def changes(self) -> dict[str, object]:
        """The keyword arguments for fact_update: the fields the owner changed, and ttl
        only when the owner asked for a change (a duration, or « Sans expiration »)."""
        data = self.shown_changes()
        if self.cleaned_data.get("no_expiry"):
            data["ttl"] = None
        elif self.cleaned_data.get("ttl"):
            data["ttl"] = self.cleaned_data["ttl"]
        return data


class FactFilterForm(forms.Form):
    filter = forms.CharField(label="Filtrer", required=False, max_length=QUERY_MAX_CHARS)
    forgotten = StrictCheckboxField(label="Afficher les faits oubliés", required=False)


class SearchForm(forms.Form):
    """The query, its mode and the filters; ``cleaned_data["filters"]`` is search_filters_build's."""

    MODE_CHOICES = (("hybrid", "Hybride"), ("semantic", "Sémantique"), ("text", "Texte"))

    q = forms.CharField(label="Recherche", max_length=QUERY_MAX_CHARS)
    mode = forms.ChoiceField(
        label="Mode", choices=MODE_CHOICES, initial="semantic", widget=forms.RadioSelect
    )
    channel = forms.CharField(label="Canal", max_length=64, required=False)
    memory_type = forms.ChoiceField(
        label="Type de fait",
        choices=[("", "Tous"), *MemoryType.choices],
        required=False,
    )
    subjects = forms.CharField(
        label="Sujets", max_length=500, required=False, help_text="Séparés par des virgules."
    )
    since = forms.DateField(label="Depuis le", required=False)
    until = forms.DateField(label="Avant le", required=False)

    def clean(self):
        from django.core.exceptions import ValidationError

        from memory.services.search import search_filters_build

        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            cleaned["filters"] = search_filters_build(
                channel=cleaned.get("channel", ""),
                memory_type=cleaned.get("memory_type", ""),
                subjects=cleaned.get("subjects", ""),
                since=cleaned.get("since"),
                until=cleaned.get("until"),
            )
        except ValidationError as exc:
            for field, messages in exc.message_dict.items():
                self.add_error(field if field in self.fields else None, messages)
        return cleaned


class NotePathForm(forms.Form):
    path = forms.CharField(
        label="Chemin de la note",
        max_length=NOTE_PATH_MAX_CHARS,
        widget=forms.TextInput(attrs={"placeholder": "Contexte/Profil.md"}),
    )


class NoteTagForm(forms.Form):
    tag = forms.CharField(
        label="Tag",
        max_length=MemorySettings._meta.get_field("obsidian_context_tag").max_length,
        help_text="Les notes portant ce tag sont ajoutées au contexte.",
    )


class NotesToggleForm(forms.Form):
    obsidian_context_enabled = StrictCheckboxField(
        label="Notes Obsidian dans le contexte", required=False
    )
