"""The dashboard's door: a logged-in staff user, as the admin asks."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django_htmx.http import HttpResponseClientRedirect

FORBIDDEN_TEMPLATE = "dashboard/403.html"


def staff_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Anonymous → the login page (an htmx request is told to go there); non-staff → 403."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        user = request.user
        if not user.is_authenticated:
            if getattr(request, "htmx", False):
                # A swapped fragment must not become a login page inside the page.
                next_url = request.htmx.current_url_abs_path or request.get_full_path()
                return HttpResponseClientRedirect(redirect_to_login(next_url)["Location"])
            return redirect_to_login(request.get_full_path())
        if not (user.is_active and user.is_staff):
            return render(request, FORBIDDEN_TEMPLATE, status=403)
        return view(request, *args, **kwargs)

    return wrapper
