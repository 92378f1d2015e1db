"""What the SDK's MCP transport refuses, said in French in JSON-RPC's shape (memory.mcp.http).

The transport answers a body that is not JSON, not a JSON-RPC message, a wrong
Accept or Content-Type header and a body too large before any of our code runs,
in English (pydantic's validation report and a link to its documentation among
them), two of them as plain text. An unknown method is answered in English too, and a
message that is no JSON-RPC request is answered -32602 (invalid params), where JSON-RPC
says -32600 (invalid request), as stdio answers the same line.
``french_answer`` rewrites those answers: same status and id, -32600 for a message
that is no request, a French message.

Some messages the SDK misreads, on both transports, so ``message_refusal`` answers
them before it reads them: a request whose id is of no JSON-RPC type is taken for a
notification (nothing runs, the client waits for an answer that never comes); over
stdio, bytes that are not UTF-8 are read with replacement characters and stored
(« caf\ufffd »); a lone UTF-16 surrogate (``"\\ud800"``) is a parse error that does not
say why; a key given twice kept its last value (the REST API refuses it: which value
would be the memory's?). Over stdio a line that is no message got no answer at all
(``stdio_refusal``).

The 2026-07-28 transport's check that a request's Mcp-* headers repeat its body
(-32020) is said in French too. Any other answer to a request the transport could read
(it carries the request's id) comes from our server (tool errors, invalid params, unknown resources: memory.mcp.server),
French already, and is left as it is.
"""

from __future__ import annotations

import json
from typing import Any

from memory.api.parsers import (
    JSON_BAD_ENCODING_REASON,
    JSON_DUPLICATE_KEY_REASON,
    JSON_INVALID_MESSAGE,
)
from memory.error_reasons import DuplicateKey, object_without_duplicates
from memory.services.portability_validate import LONE_SURROGATE, holds_lone_surrogate

NOT_JSON_MESSAGE = "Corps JSON invalide : le message JSON-RPC n'a pas pu être lu."
NOT_JSON_RPC_MESSAGE = (
    "Message JSON-RPC invalide : un objet est attendu, avec « jsonrpc » (« 2.0 »), "
    "« method » et, pour une requête, « id » ; « params », s'il est donné, est un objet."
)
NOT_ACCEPTABLE_MESSAGE = (
    "Format de réponse refusé : l'en-tête Accept doit accepter application/json "
    "(et text/event-stream)."
)
BAD_CONTENT_TYPE_MESSAGE = "Type de contenu invalide : envoyez « Content-Type: application/json »."
TOO_LARGE_MESSAGE = "Corps de requête trop volumineux : {limit} octets au plus."
UNKNOWN_METHOD_MESSAGE = "Méthode JSON-RPC inconnue : « {method} »."
BAD_ID_MESSAGE = (
    "Message JSON-RPC invalide : « id » doit être un texte ou un nombre entier "
    "(sans « id », le message est une notification, sans réponse)."
)

NOT_UTF8_MESSAGE = JSON_INVALID_MESSAGE.format(
    reason=JSON_BAD_ENCODING_REASON.format(encoding="utf-8")
)
LONE_SURROGATE_MESSAGE = JSON_INVALID_MESSAGE.format(reason=LONE_SURROGATE)
HEADER_MISMATCH_MESSAGE = (
    "En-tête {header} absent ou différent du corps de la requête : les en-têtes MCP "
    "d'une requête (version du protocole, méthode, nom) répètent ce que dit son corps."
)

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
HEADER_MISMATCH = -32020  # the 2026-07-28 transport's check of the Mcp-* headers


def french_answer(status: int, body: bytes, *, limit: int) -> bytes | None:
    """The French body for the transport's answer, or None to keep it as it is.

    ``limit``: the largest body accepted (what a 413 says)."""
    if status == 413:
        return _error(None, INVALID_REQUEST, TOO_LARGE_MESSAGE.format(limit=limit))
    try:
        answer = json.loads(body) if body else None
    except ValueError:
        answer = None
    error = answer.get("error") if isinstance(answer, dict) else None
    if not isinstance(error, dict):
        if status == 400 and body.strip().startswith(b"Invalid Content-Type"):
            return _error(None, INVALID_REQUEST, BAD_CONTENT_TYPE_MESSAGE)
        return None
    code, request_id = error.get("code"), answer.get("id")
    if code == METHOD_NOT_FOUND:
        return _error(request_id, code, UNKNOWN_METHOD_MESSAGE.format(method=error.get("data", "")))
    if code == HEADER_MISMATCH:
        # The transport's check of the headers, before the server (QA 6: said in English).
        header = str(error.get("message", "")).split(" ", 1)[0].title() or "MCP"
        return _error(request_id, code, HEADER_MISMATCH_MESSAGE.format(header=header))
    if request_id is not None:  # the server's own answer: French already (memory.mcp.server)
        return None
    if code == PARSE_ERROR:
        return _error(request_id, code, NOT_JSON_MESSAGE)
    if status == 406:
        return _error(request_id, code, NOT_ACCEPTABLE_MESSAGE)
    if code in (INVALID_REQUEST, INVALID_PARAMS):  # the envelope, not a method's params
        return _error(request_id, INVALID_REQUEST, NOT_JSON_RPC_MESSAGE)
    return None


def message_refusal(raw: bytes) -> tuple[int, str] | None:
    """(JSON-RPC code, French message) for a message the SDK would misread, or None.

    Bytes that are not UTF-8, a lone surrogate and a key given twice (as the REST API
    says it: memory.api.parsers) are parse errors that say so; an
    « id » that is neither a string nor an integer (MCP: never null) is an invalid
    request. Anything else the SDK reads itself (its parse error: ``french_answer``)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return PARSE_ERROR, NOT_UTF8_MESSAGE
    try:
        message = json.loads(text, object_pairs_hook=object_without_duplicates)
    except DuplicateKey as exc:
        reason = JSON_DUPLICATE_KEY_REASON.format(key=exc.key)
        return PARSE_ERROR, JSON_INVALID_MESSAGE.format(reason=reason)
    except (ValueError, RecursionError):
        return None  # the transport's parse error
    try:
        surrogate = "\\u" in text and holds_lone_surrogate(message)  # only an escape writes one
    except RecursionError:
        surrogate = False  # the SDK's own reader refuses such a nesting
    if surrogate:
        return PARSE_ERROR, LONE_SURROGATE_MESSAGE
    if not isinstance(message, dict) or "id" not in message:
        return None
    request_id = message["id"]
    if isinstance(request_id, str) or (
        isinstance(request_id, int) and not isinstance(request_id, bool)
    ):
        return None
    return INVALID_REQUEST, BAD_ID_MESSAGE


def body_refusal(body: bytes) -> bytes | None:
    """The JSON-RPC error body (null id) of ``message_refusal`` for an HTTP body, or None."""
    found = message_refusal(body)
    return _error(None, *found) if found is not None else None


def line_refusal(raw: bytes) -> Any:
    """The JSON-RPC error (null id) of ``message_refusal`` for a stdio line, or None."""
    found = message_refusal(raw)
    if found is None:
        return None
    from mcp.types import ErrorData, JSONRPCError

    code, message = found
    return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=code, message=message))


def _error(request_id, code: int, message: str) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}},
        ensure_ascii=False,
    ).encode()


def stdio_refusal(exc: Exception) -> Any:
    """The JSON-RPC error (null id) for a stdio line the SDK could not read as a message:
    its reader hands the exception to the server, which answered nothing."""
    from mcp.types import ErrorData, JSONRPCError

    errors = exc.errors() if hasattr(exc, "errors") else []
    if errors and errors[0].get("type") == "json_invalid":
        error = ErrorData(code=PARSE_ERROR, message=NOT_JSON_MESSAGE)
    else:
        error = ErrorData(code=INVALID_REQUEST, message=NOT_JSON_RPC_MESSAGE)
    return JSONRPCError(jsonrpc="2.0", id=None, error=error)
