"""The auto-retrieval section's forms: the toggle and sliders, and the preview box."""

from __future__ import annotations

from django import forms

from dashboard.forms import PREVIEW_MAX_CHARS, StrictCheckboxField
from memory.form_errors import form_shown_values
from memory.models import MemorySettings
from memory.services.settings import model_field_range


class RetrievalSettingsForm(forms.ModelForm):
    """The toggle and the sliders; ranges are the model's validators.

    Each control carries the value the page shows for it (a hidden initial-* input), so
    a save writes only the controls the owner moved: a knob the API changed since the
    page opened keeps the API's value.
    """

    auto_retrieve_enabled = StrictCheckboxField(label="Auto-retrieval activé", required=False)
    # (name, step, decimals shown): the range inputs.
    SLIDERS = (
        ("max_results", "1", None),
        ("min_score", "0.05", 2),
        ("live_max_results", "1", None),
    )

    class Meta:
        model = MemorySettings
        fields = ("auto_retrieve_enabled", "max_results", "min_score", "live_max_results")
        labels = {
            "auto_retrieve_enabled": "Auto-retrieval activé",
            "max_results": "Nombre maximum de souvenirs",
            "min_score": "Score minimum",
            "live_max_results": "Extraits des salons observés",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, step, decimals in self.SLIDERS:
            low, high = model_field_range(MemorySettings, name)
            self.fields[name].widget = forms.NumberInput(
                attrs={"type": "range", "min": low, "max": high, "step": step}
            )
            # Digits the slider's number shows (floatformat, as the status line says it).
            self.fields[name].decimals = decimals
        for field in self.fields.values():
            field.show_hidden_initial = True

    def settings_changes(self) -> dict[str, object]:
        """The controls the owner moved, with their cleaned values.

        A post that does not say what its page showed for a control (a script, a page
        from before these inputs) is taken as changing it, as it always was.
        """
        return {
            name: value
            for name, value in self.cleaned_data.items()
            if name in self.changed_data or self.add_initial_prefix(name) not in self.data
        }

    def sliders_of(self, names) -> list:
        """The bound sliders among ``names`` (a toggle has no slider to put back)."""
        sliders = {name for name, _step, _decimals in self.SLIDERS}
        return [self[name] for name in names if name in sliders]

    def over_stored(self, stored: dict[str, object], message: str) -> RetrievalSettingsForm:
        """This form again with the controls refused back at their ``stored`` value, shown
        and as the page's opening value, saying ``message``: moving another control then
        leaves them as stored, and moving one again saves the owner's value knowingly."""
        data = self.data.copy()
        for name, value in stored.items():
            data[self.add_initial_prefix(name)] = str(value)
            if isinstance(value, bool):
                data.pop(self.add_prefix(name), None)
                if value:
                    data[self.add_prefix(name)] = "on"
            else:
                data[self.add_prefix(name)] = str(value)
        form = type(self)(data, instance=self.instance)
        form.is_valid()
        form.add_error(None, message)
        return form

    def settings_opened(self) -> dict[str, object]:
        """What the page showed for each control it says it showed (form_shown_values):
        memory_settings_update's ``opened``, so a move over a value changed since the page
        opened is refused rather than undoing it."""
        return form_shown_values(self)


class PreviewForm(forms.Form):
    message = forms.CharField(
        label="Message",
        max_length=PREVIEW_MAX_CHARS,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "Comment va mon épaule ?"}),
    )
    channel = forms.CharField(label="Canal", max_length=64, initial="dashboard")

    def clean_channel(self) -> str:
        from memory.services.messages import channel_validate  # the API's one rule

        try:
            return channel_validate(self.cleaned_data["channel"])
        except forms.ValidationError as exc:
            raise forms.ValidationError(exc.message_dict["channel"]) from None
