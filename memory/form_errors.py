"""A service's refusal shown on a Django form, and what a form showed when it opened (the
/memory pages and the admin alike)."""

from __future__ import annotations

from django.core.exceptions import ValidationError


def form_errors_add(form, exc: Exception, *, field: str | None = None) -> None:
    """A service's refusal shown on the form: on the field it names, else on ``field``
    (None: above the form)."""
    if isinstance(exc, ValidationError) and hasattr(exc, "error_dict"):
        for name, messages in exc.message_dict.items():
            form.add_error(name if name in form.fields else field, messages)
    elif isinstance(exc, ValidationError):
        form.add_error(field, exc.messages)
    else:
        form.add_error(field, str(exc))


def form_shown_values(form, names=None) -> dict[str, object]:
    """What ``form`` showed of each field (``names``, else all) it says it showed: its hidden
    initial-* input (show_hidden_initial), read as the form reads it. A field without one (a
    script, a page from before these inputs) or unreadable is left out: taken as changing
    it, as ``changed_data`` does."""
    shown = {}
    for name in form.fields if names is None else names:
        initial_name = form.add_initial_prefix(name)
        if initial_name not in form.data:
            continue
        field = form.fields[name]
        raw = field.hidden_widget().value_from_datadict(form.data, form.files, initial_name)
        try:
            shown[name] = field.to_python(raw)
        except ValidationError:
            continue
    return shown
