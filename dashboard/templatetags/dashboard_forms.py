"""Form pieces the dashboard's hand-written inputs need."""

from __future__ import annotations

from django import template
from django.forms import BoundField
from django.utils.safestring import SafeString

register = template.Library()


@register.filter
def initial_input(field: BoundField) -> SafeString:
    """The hidden initial-* input of a field: the value the page opened with.

    The form compares it with the posted value (changed_data) to save only what moved.
    """
    return field.as_hidden(only_initial=True)
