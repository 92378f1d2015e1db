"""The API's session authentication, its CSRF refusal said in French.

DRF checks a session's CSRF token itself (the API views are csrf_exempt) and answers
« CSRF Failed: CSRF token missing. » (QA): the owner's browser scripts read our French
message instead, as the pages' own CSRF failure page says it. Tokens need no CSRF token.
"""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.authentication import SessionAuthentication

CSRF_REFUSED_MESSAGE = (
    "Requête refusée : le jeton CSRF de la session manque ou ne correspond pas. Envoyez "
    "l'en-tête X-CSRFToken avec la valeur du cookie csrftoken, ou utilisez un jeton d'API "
    "(Authorization: Token …)."
)


class FrenchCsrfSessionAuthentication(SessionAuthentication):
    def enforce_csrf(self, request) -> None:
        try:
            super().enforce_csrf(request)
        except exceptions.PermissionDenied:
            raise exceptions.PermissionDenied(CSRF_REFUSED_MESSAGE) from None
