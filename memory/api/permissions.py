"""Who may call the memory API: two scopes.

- The agent's scope: the token of a non-staff account (the agent, an outside
  agent, the MCP client). Chat, context, record messages, search, read and
  store facts, forget (a topic, a fact) as the tools do.
- The owner's scope: a staff account, by its dashboard session or its own
  token. Everything the agent may do, plus the owner's operations: changing
  the settings, undoing a forget, hard deletes, the export, maintenance.

A session of a non-staff account is refused everywhere, as it is on the
dashboard and in the admin: the memory holds the owner's private facts.
"""

from __future__ import annotations

from rest_framework.authentication import TokenAuthentication
from rest_framework.permissions import BasePermission

OWNER_ONLY_MESSAGE = (
    "Opération réservée au propriétaire (compte d'équipe) : le jeton de l'agent ne peut pas "
    "la faire."
)


class BearerTokenAuthentication(TokenAuthentication):
    """DRF's token, sent the way MCP clients (and most HTTP clients) send one:
    ``Authorization: Bearer <token>``; the API and /mcp take it as ``Token <token>``."""

    keyword = "Bearer"


def is_owner(user) -> bool:
    """A staff account: its session or its token is an owner's."""
    return bool(user and user.is_authenticated and user.is_active and user.is_staff)


class IsStaffOrToken(BasePermission):
    """The agent's scope: any active account's API token, or the owner's staff session."""

    message = "Accès réservé au propriétaire (session d'équipe) ou à l'agent (jeton d'API)."

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated and user.is_active):
            return False
        if isinstance(request.successful_authenticator, TokenAuthentication):
            return True
        return bool(user.is_staff)


class IsOwner(BasePermission):
    """The owner's scope: a staff account, by session or its own token; never the agent's token."""

    message = OWNER_ONLY_MESSAGE

    def has_permission(self, request, view) -> bool:
        return is_owner(request.user)
