"""A service's refusal shown on a Django form (the /memory pages and the admin alike)."""

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
