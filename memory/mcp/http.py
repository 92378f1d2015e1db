"""/mcp: the memory's MCP server over streamable HTTP, inside the WSGI service.

The SDK's streamable HTTP transport is an ASGI app; the service is WSGI
(waitress). ``a2wsgi`` runs the ASGI app on one event loop in a background
thread and lets a WSGI request drive it. The transport runs *stateless* with
JSON responses: every POST carries one JSON-RPC message and gets its answer
in the body, so no long-lived SSE stream ties up a WSGI thread, and any
process of a scaled-out service can answer any request.

The request goes through Django first (allowed hosts, security middleware),
then a thin view checks the API token exactly as ``/api/memory/`` does (DRF's
``TokenAuthentication``), accepting ``Authorization: Bearer <token>`` as MCP
clients send it, as well as ``Token <token>``.
"""

from __future__ import annotations

import asyncio
import io
import threading
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed

from makilab.exception_handlers import MCP_PATH, THROTTLED_MESSAGE, api_error
from makilab.throttling import refused_caller_wait
from memory.api.permissions import BearerTokenAuthentication, is_owner
from memory.mcp.transport_errors import body_refusal, french_answer

TOKEN_REQUIRED_MESSAGE = (
    "Jeton d'API requis : en-tête « Authorization: Bearer <jeton> » (ou « Token <jeton> »). "
    "Créez-le avec `python manage.py agent_token <utilisateur>`."
)
OWNER_TOKEN_MESSAGE = (
    "Ce serveur MCP écrit au nom de l'agent : le jeton du propriétaire n'y ouvre pas "
    "(ce qu'un client MCP y écrirait serait réécrit par l'agent). Utilisez le jeton de "
    "l'agent (`python manage.py agent_token <utilisateur>`) ; vos propres écritures "
    "passent par /memory, l'admin ou l'API avec votre jeton."
)
POST_ONLY_MESSAGE = "Ce serveur MCP est sans état : envoyez chaque message JSON-RPC en POST."
# Response headers the WSGI server sets itself.
_HOP_HEADERS = {"content-length", "connection", "transfer-encoding", "keep-alive"}


def _authenticated(request: HttpRequest) -> tuple[Any, str]:
    """(the token's user, "") for a valid token of an active user; else (None, the French
    reason)."""
    for authentication in (BearerTokenAuthentication(), TokenAuthentication()):
        try:
            found = authentication.authenticate(request)
        except AuthenticationFailed as exc:
            return None, str(exc.detail)
        if found is not None:
            return found[0], ""
    return None, TOKEN_REQUIRED_MESSAGE


class _ManagedApp:
    """The transport's ASGI app with its session manager running.

    a2wsgi runs no ASGI lifespan, so the manager's ``run()`` (the task group that
    serves requests) is entered on the first request, in a2wsgi's event loop, and
    kept open for the life of the process.
    """

    def __init__(self, app, manager) -> None:
        self.app, self.manager = app, manager
        self._ready: asyncio.Event | None = None
        self._error: BaseException | None = None

    async def __call__(self, scope, receive, send) -> None:
        if self._ready is None:  # one event loop: no race between requests here
            self._ready = asyncio.Event()
            asyncio.get_running_loop().create_task(self._run())
        await self._ready.wait()
        if self._error is not None:
            raise RuntimeError("the MCP session manager did not start") from self._error
        await self.app(scope, receive, send)

    async def _run(self) -> None:
        try:
            async with self.manager.run():
                self._ready.set()
                await asyncio.Event().wait()  # until the process ends
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            raise


_bridge = None
_bridge_lock = threading.Lock()


def _wsgi_bridge():
    """The MCP server as a WSGI app, built on first use (the SDK is imported only then)."""
    global _bridge
    with _bridge_lock:
        if _bridge is None:
            from a2wsgi import ASGIMiddleware
            from mcp.server.transport_security import TransportSecuritySettings

            from memory.mcp.server import build_server

            server = build_server(release_vector_store=False)
            app = server.streamable_http_app(
                streamable_http_path=MCP_PATH,
                json_response=True,
                stateless_http=True,
                max_request_body_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
                # Django has already checked the Host header against ALLOWED_HOSTS,
                # and nothing answers without a token: the SDK's localhost-only
                # DNS-rebinding check would only refuse a LAN host name.
                transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            )
            _bridge = ASGIMiddleware(_ManagedApp(app, server.session_manager))
    return _bridge


@csrf_exempt
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    """Authenticate, then hand the request to the MCP transport and return its answer."""
    user, reason = _authenticated(request)
    if user is None:
        wait = refused_caller_wait(request)  # counted as the API counts a refused caller
        if wait is not None:
            response = api_error(THROTTLED_MESSAGE.format(wait=wait), status=429)
            response["Retry-After"] = str(wait)
            return response
        response = api_error(reason, status=401)
        response["WWW-Authenticate"] = 'Bearer realm="makilab"'
        return response
    if is_owner(user):
        # Every tool writes as the agent (memory.mcp.tools): the owner's writes through it
        # would be the agent's, which the agent's next statement overwrites.
        return api_error(OWNER_TOKEN_MESSAGE, status=403)
    if request.method != "POST":
        response = api_error(POST_ONLY_MESSAGE, status=405)
        response["Allow"] = "POST"
        return response

    try:
        body = request.body
    except RequestDataTooBig:
        body = None  # unread: the transport refuses it (its 413, said in French below)
    refusal = body_refusal(body) if body is not None else None
    if refusal is not None:
        return HttpResponse(refusal, status=400, content_type="application/json")

    environ = {**request.environ, "SCRIPT_NAME": "", "PATH_INFO": MCP_PATH}
    if body is not None:
        environ["wsgi.input"] = io.BytesIO(body)  # Django read it: the transport reads a copy
    started: dict = {}

    def start_response(status: str, headers: list, exc_info=None):
        started["status"], started["headers"] = status, headers

    # JSON mode: one short body per POST, read whole before answering.
    answer = b"".join(_wsgi_bridge()(environ, start_response))
    status = int(started["status"].split()[0])
    french = french_answer(status, answer, limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    if french is not None:
        return HttpResponse(french, status=status, content_type="application/json")
    response = HttpResponse(answer, status=status)
    for name, value in started["headers"]:
        if name.lower() not in _HOP_HEADERS:
            response[name] = value
    return response
