"""Who may call the memory API."""

from __future__ import annotations

from rest_framework.authentication import TokenAuthentication
from rest_framework.permissions import BasePermission


class IsStaffOrToken(BasePermission):
    """The agent with its API token, or a staff user logged in to the dashboard.

    A session of a non-staff account is refused, as it is on the dashboard and
    in the admin: the memory holds the owner's private facts.
    """

    message = "Accès réservé au propriétaire (session d'équipe) ou à l'agent (jeton d'API)."

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated and user.is_active):
            return False
        if isinstance(request.successful_authenticator, TokenAuthentication):
            return True
        return bool(user.is_staff)


class IsStaff(BasePermission):
    """The owner only (a staff account, by session or its own token): never the agent's token.

    For what hands over the whole memory at once (the export).
    """

    message = "Accès réservé au propriétaire (compte d'équipe)."

    def has_permission(self, request, view) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and user.is_active and user.is_staff)
