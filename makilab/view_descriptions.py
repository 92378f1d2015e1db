"""DRF's VIEW_DESCRIPTION_FUNCTION: what OPTIONS and the browsable API say a view does.

DRF's default is the view class's docstring: developer documentation in English,
shown to the owner and the agent (``OPTIONS /api/schema/`` printed drf-spectacular's).
A view says it in French with a ``description`` attribute, or says nothing.
"""

from __future__ import annotations

from django.utils.encoding import smart_str
from rest_framework.utils import formatting


def view_description(view, html: bool = False) -> str:
    """The view's French ``description``, or "" when it declares none (never its docstring)."""
    description = formatting.dedent(smart_str(getattr(view, "description", None) or ""))
    if html and description:
        return formatting.markup_description(description)
    return description
