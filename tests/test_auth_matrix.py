"""Every URL pattern of the URLconf, requested by every kind of caller, against the expected matrix.

Callers: anonymous, a bad token, the agent's token (a non-staff account's), the
owner's token (a staff account's), a logged-in account that is not staff, the
owner's staff session. Two scopes (memory.api.permissions): the agent's token
reaches the API and MCP but not the owner's operations (OWNER_ONLY_API: settings
changes, restores, hard deletes, the export), which answer it 403 and change
nothing; the owner, by token or session, reaches everything but the maintenance channel,
which only serve's local secret opens (no token, no session). The patterns are read from the URLconf,
so a route added later (an app's API, an admin model) is checked without
editing this file; the API is walked twice, under /api/v1/ (namespace ``v1:``) and
at its unversioned aliases, and both must answer alike. Nobody but the agent and the owner ever sees data: a marker
stored in a fact and in a retrieval log must not appear in their responses, and
their writes (POST) change nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from rest_framework.authtoken.models import Token

from memory.api.permissions import OWNER_ONLY_MESSAGE
from memory.models import Fact, MemoryRetrieval, MemorySettings
from memory.services.facts import fact_store

pytestmark = pytest.mark.django_db

MARKER = "VALEUR-SECRÈTE-4242"
FACT_KEY = "secret_fact"
# The owner's operations, per route: the agent's token is refused (403) and changes nothing.
OWNER_ONLY_API = {
    "memory-api:export": {"get"},
    "memory-api:settings": {"patch"},
    "memory-api:fact-restore": {"post"},
    "memory-api:fact-erase": {"post"},
    "memory-api:forgettings": {"get"},
    "memory-api:retrievals": {"get"},
    "memory-api:forgetting-restore": {"post"},
    "memory-api:forgetting-erase": {"post"},
    "memory-api:channel": {"put"},
    "memory-api:digest": {"post"},
}
OWNER_IDENTITIES = ("owner_token", "staff_session")


@dataclass(frozen=True)
class Route:
    url: str
    pattern: str
    name: str

    @property
    def area(self) -> str:
        """Which door guards it: admin, api (DRF), mcp (token only), docs, dashboard, or a public page."""
        path = self.url.lstrip("/")
        if path.startswith("api/v1/"):  # the stable prefix; the same doors as its aliases
            path = "api/" + path.removeprefix("api/v1/")
        if path == "mcp":
            return "mcp"
        if path.startswith("api/memory/maintenance/"):
            return "local"  # serve's local secret only (memory.api.maintenance)
        if path.startswith("admin/"):
            return "admin"
        if path.startswith("api/docs/"):
            return "docs"
        if path.startswith("api/"):
            return "api"
        if self.name in ("login", "logout") or path == "":
            return "public"
        return "dashboard"


def _examples(staff_id: int) -> dict[str, str]:
    return {
        "key": FACT_KEY,
        "object_id": "1",
        "forgetting_id": "1",
        "content_type_id": "1",
        "id": str(staff_id),
        "app_label": "memory",
        "url": "inexistant/",
        "operation": "reindex",
        "run_id": "inconnu",
        "channel": "lobby",
        "item_id": "1",
    }


def routes(staff_id: int) -> list[Route]:
    """A concrete URL for every pattern, placeholders filled with examples."""
    examples = _examples(staff_id)
    found: list[Route] = []

    def walk(patterns, prefix: str, namespace: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                inner = pattern.namespace or ""
                walk(pattern.url_patterns, route, f"{namespace}:{inner}".strip(":"))
                continue
            assert isinstance(pattern, URLPattern)
            url = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: examples[m.group(1)], route)
            url = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: examples[m.group(1)], url)
            url = "/" + url.replace("^", "").replace("$", "")
            name = f"{namespace}:{pattern.name}".strip(":") if pattern.name else ""
            found.append(Route(url=url, pattern=route, name=name))

    walk(get_resolver().url_patterns, "", "")
    for route in found:
        # The example URL really reaches the pattern it was made from.
        match = resolve(route.url.split("?")[0])
        assert match.route == route.pattern or match.url_name == route.name.split(":")[-1], route
    return found


@pytest.fixture
def world(staff_user, django_user_model):
    fact_store(key=FACT_KEY, value=MARKER)
    MemoryRetrieval.objects.create(channel="whatsapp", message_preview=MARKER)
    agent = django_user_model.objects.create_user(username="agent")
    outsider = django_user_model.objects.create_user(username="invite", password="x")
    return {
        "staff": staff_user,
        "agent_token": Token.objects.create(user=agent).key,
        "owner_token": Token.objects.create(user=staff_user).key,
        "outsider": outsider,
    }


def client_for(identity: str, world: dict) -> Client:
    if identity == "bad_token":
        return Client(HTTP_AUTHORIZATION="Token " + "0" * 40)
    if identity in ("agent_token", "owner_token"):
        return Client(HTTP_AUTHORIZATION=f"Token {world[identity]}")
    client = Client()
    if identity == "staff_session":
        client.force_login(world["staff"])
    elif identity == "outsider_session":
        client.force_login(world["outsider"])
    return client


def _login_redirect(response, login_path: str) -> bool:
    return response.status_code == 302 and response["Location"].startswith(login_path)


def _unversioned(name: str) -> str:
    """Drop the version namespace (v1:memory-api:export -> memory-api:export): same scopes."""
    return name.removeprefix("v1:")


def _owner_only(route: Route, method: str) -> bool:
    return method in OWNER_ONLY_API.get(_unversioned(route.name), ())


def _refused(identity: str, route: Route, method: str, response) -> str | None:
    """Why ``response`` breaks the matrix for a caller who must get no data (None: fine)."""
    status = response.status_code
    if route.area == "public":
        # Login page (or a redirect away from it), logout (POST only), the root redirect.
        return None if status in (200, 302, 405) else f"public page answered {status}"
    if route.area == "admin":
        if route.name == "admin:login":
            return None if status in (200, 302) else f"admin login answered {status}"
        if route.name == "admin:logout":
            return None if status in (302, 405) else f"admin logout answered {status}"
        if route.name == "admin:view_on_site":
            # contenttypes' shortcut: a redirect to the object's public URL, no admin data.
            return None if status in (302, 404) else f"view_on_site answered {status}"
        return None if _login_redirect(response, "/admin/login/") else f"admin gave {status}"
    if route.area == "api":
        if identity == "agent_token" and _owner_only(route, method):
            return None if status == 403 else f"owner's operation gave {status} to the agent"
        return None if status in (401, 403) else f"API gave {status} to {identity}"
    if route.area == "local":  # no token, no session: only serve's local secret
        return None if status == 403 else f"maintenance gave {status} to {identity}"
    if route.area == "mcp":  # the MCP endpoint takes the agent's token, never a session
        # The owner's token: 403, every tool writes as the agent (memory.mcp.http).
        expected = 403 if identity == "owner_token" else 401
        return None if status == expected else f"MCP gave {status} to {identity}"
    # dashboard and docs: the login page for a stranger, a French 403 for a non-staff account.
    if identity == "outsider_session":
        return None if status == 403 else f"dashboard gave {status} to a non-staff account"
    return None if _login_redirect(response, "/login/?next=") else f"dashboard gave {status}"


def _allowed(route: Route, response) -> str | None:
    """Why ``response`` refuses a caller who is allowed in (None: fine)."""
    status = response.status_code
    if status >= 500:
        return f"server error {status}"
    if (
        status == 403
        and route.area == "admin"
        and (route.name.endswith(("_add", "_delete")) or route.name == "admin:autocomplete")
    ):
        # Logs and the settings row are read-only in the admin: adding or deleting them
        # is refused to everyone (memory.admin_logs.ReadOnlyAdminMixin); autocomplete without
        # its parameters is refused too. The session itself was accepted.
        return None
    if status in (401, 403):
        return f"refused with {status}"
    if status == 302 and "login" in response["Location"] and route.name not in ("login",):
        if route.name == "admin:logout":
            return None
        return f"sent to the login page ({response['Location']})"
    return None


IDENTITIES = (
    "anonymous",
    "bad_token",
    "agent_token",
    "owner_token",
    "outsider_session",
    "staff_session",
)


def _requests(identity: str, route: Route) -> list[tuple[str, bool]]:
    """(method, allowed in?) pairs to send: who is allowed in reads, and uses the owner's
    operations when it is the owner; who is not also tries to write (GET and POST, and
    the owner's operations for the agent)."""
    owner_methods = sorted(OWNER_ONLY_API.get(_unversioned(route.name), ()))
    if route.area == "local":
        return [("get", False), ("post", False)]
    if identity == "staff_session" and route.area != "mcp":
        return [("get", True)] + [(m, True) for m in owner_methods if m != "get"]
    if identity == "owner_token" and route.area == "mcp":
        return [("get", False), ("post", False)]
    if identity in ("agent_token", "owner_token") and route.area in ("api", "mcp"):
        if identity == "owner_token":
            return [("get", True)] + [(m, True) for m in owner_methods if m != "get"]
        pairs = [] if "get" in owner_methods else [("get", True)]
        return pairs + [(m, False) for m in owner_methods]
    return [("get", False), ("post", False)]


@pytest.mark.parametrize("identity", IDENTITIES)
def test_every_url_pattern_answers_each_caller_as_the_matrix_says(identity, world):
    settings_before = MemorySettings.load().updated_at
    facts_before = list(Fact.objects.values_list("key", "value", "forgotten"))
    problems: list[str] = []
    for route in routes(world["staff"].pk):
        for method, allowed_in in _requests(identity, route):
            # POST /logout/ ends a session: every request starts from the same identity.
            client = client_for(identity, world)
            response = getattr(client, method)(route.url)
            body = b"".join(response.streaming_content) if response.streaming else response.content
            if allowed_in:
                problem = _allowed(route, response)
            else:
                problem = _refused(identity, route, method, response)
                if MARKER.encode() in body:
                    problem = "leaked stored data"
            if problem:
                problems.append(f"{method.upper()} {route.url} ({route.pattern}): {problem}")
    assert problems == [], "\n".join(problems)
    if identity not in OWNER_IDENTITIES:
        assert list(Fact.objects.values_list("key", "value", "forgotten")) == facts_before
        assert MemorySettings.load().updated_at == settings_before


def test_the_walk_covers_the_whole_urlconf(world):
    found = routes(world["staff"].pk)
    areas = {route.area for route in found}
    assert areas == {"admin", "api", "mcp", "docs", "dashboard", "public", "local"}
    memory_api = [r for r in found if r.name.startswith("memory-api:")]
    dashboard = [r for r in found if r.name.startswith("dashboard:")]
    assert {
        "memory-api:facts",
        "memory-api:fact",
        "memory-api:fact-restore",
        "memory-api:fact-revisions",
        "memory-api:search",
        "memory-api:settings",
        "memory-api:stats",
        "memory-api:retrievals",
        "memory-api:forget",
        "memory-api:forgettings",
        "memory-api:forgetting-restore",
        "memory-api:export",
        "memory-api:fact-erase",
        "memory-api:forgetting-erase",
        "memory-api:messages",
        "memory-api:context",
        "memory-api:recent-facts",
    } <= {r.name for r in memory_api}
    assert len(dashboard) >= 16
    assert any(r.name == "schema" for r in found)
    # Every API route also under the stable /api/v1/ prefix, with the same name.
    api = {r.name for r in found if r.name.startswith(("memory-api:", "agent-api:"))}
    v1 = {_unversioned(r.name) for r in found if r.name.startswith("v1:")}
    assert api == v1
    assert all(r.url.startswith("/api/v1/") for r in found if r.name.startswith("v1:"))


def test_the_agent_token_reads_facts_but_a_bad_token_is_told_401(world):
    agent = client_for("agent_token", world)
    response = agent.get("/api/memory/facts")
    assert response.status_code == 200
    assert MARKER in response.content.decode()
    bad = client_for("bad_token", world).get("/api/memory/facts")
    assert bad.status_code == 401
    assert bad["WWW-Authenticate"] == "Token"
    anonymous = client_for("anonymous", world).get("/api/memory/facts")
    assert anonymous.status_code == 401
    assert MARKER not in anonymous.content.decode()


def test_the_agent_token_cannot_change_settings_but_the_owner_token_can(world):
    agent = client_for("agent_token", world)
    refused = agent.patch(
        "/api/memory/settings", {"max_results": 7}, content_type="application/json"
    )
    assert refused.status_code == 403
    assert refused.json()["message"] == OWNER_ONLY_MESSAGE
    assert MemorySettings.load().max_results != 7

    owner = client_for("owner_token", world)
    accepted = owner.patch(
        "/api/memory/settings", {"max_results": 7}, content_type="application/json"
    )
    assert accepted.status_code == 200, accepted.content
    assert MemorySettings.load().max_results == 7
