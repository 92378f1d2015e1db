"""The admin fact list's editable columns, saved over the rows as they are now.

The list's forms carry the values the page showed (hidden initial-* inputs), so a save
writes only what the owner changed there, and a column changed there that changed since the
list opened is refused with the value stored now (saving again takes the owner's). Rows that changed state since the list opened
are left out of the save, each said in French, and the others are saved:

- a row no longer in the list (a topic forget took it, or it was erased): Django's
  formset refused the whole save over its hidden id (« Corrigez l'erreur ci-dessous »,
  with no field to correct; QA 3), and named nothing the owner could act on;
- a row forgotten: a change typed there would have revived it (fact_update revives),
  unseen when the list showed it live. Restoring is the list's action that does that.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.forms.models import BaseModelFormSet
from django.http import HttpRequest
from django.utils.functional import cached_property

from memory.form_errors import form_shown_values
from memory.services.settings import values_same

ROWS_GONE_ONE = (
    "Une ligne n'est plus dans la liste (oubliée ou effacée depuis l'ouverture de la "
    "page) : ses modifications n'ont pas été enregistrées ; les autres l'ont été."
)
ROWS_GONE_MANY = (
    "{count} lignes ne sont plus dans la liste (oubliées ou effacées depuis l'ouverture "
    "de la page) : leurs modifications n'ont pas été enregistrées ; les autres l'ont été."
)
COLUMN_CHANGED_SINCE = (
    "Changé depuis l'ouverture de la liste (un autre onglet, l'agent ou l'API) : "
    "maintenant « {value} ». Rien n'a été enregistré ; enregistrez à nouveau pour garder "
    "la vôtre."
)
ROW_FORGOTTEN = (
    "Le fait n° {id} est oublié : sa modification n'a pas été enregistrée. Pour le "
    "modifier, restaurez-le d'abord (action « Restaurer les faits oubliés sélectionnés »)."
)


def changelist_form(form: type[forms.ModelForm]) -> type[forms.ModelForm]:
    """``form`` with each editable column carrying the value the page showed, so that a
    save writes only what the owner changed (QA: an importance change put the page's old
    value back over one the API changed since the list opened)."""

    class ChangelistForm(form):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            for field in self.fields.values():
                field.show_hidden_initial = True

        def clean(self):
            """A column the owner changed that changed since the list opened (/memory, the
            API, the agent) is refused with the value stored now, which the row then takes
            as what it showed: saving again writes the owner's (QA 4: the list overwrote
            it). A column already stored as posted is no conflict."""
            cleaned = super().clean()
            shown = form_shown_values(self, [n for n in self.changed_data if n in self.fields])
            data = None
            for name, seen in shown.items():
                stored = getattr(self.instance, name)
                if name not in cleaned or values_same(stored, seen):
                    continue  # refused already, or unchanged since the list opened
                if values_same(stored, cleaned[name]):
                    continue  # already stored as posted
                field = self.fields[name]
                data = data if data is not None else self.data.copy()
                data[self.add_initial_prefix(name)] = field.hidden_widget().format_value(
                    field.prepare_value(stored)
                )
                self.add_error(name, COLUMN_CHANGED_SINCE.format(value=stored))
            if data is not None:
                self.data = data
            return cleaned

    return ChangelistForm


def changelist_formset(formset: type[BaseModelFormSet], request: HttpRequest):
    """``formset`` leaving out, and saying to ``request``'s owner, the rows posted that
    are no longer listed and the changes typed on a forgotten row (left unwritten)."""

    class ListedRowsFormSet(formset):
        @cached_property
        def forms(self):
            built = super().forms
            if not self.is_bound:
                return built
            kept, gone = [], 0
            for i, form in enumerate(built):
                if i < self.initial_form_count() and form.instance.pk is None:
                    gone += 1  # its hidden id names a row the list no longer has
                    continue
                if getattr(form.instance, "forgotten", False) and form.has_changed():
                    messages.warning(request, ROW_FORGOTTEN.format(id=form.instance.pk))
                    # Kept in place (the page lists the row, and shows its form again if
                    # another row is refused), with nothing to write.
                    form.changed_data = []
                kept.append(form)
            if gone:
                said = ROWS_GONE_ONE if gone == 1 else ROWS_GONE_MANY.format(count=gone)
                messages.warning(request, said)
            return kept

    return ListedRowsFormSet
