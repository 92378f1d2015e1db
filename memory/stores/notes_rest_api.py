"""Obsidian's Local REST API plugin as the notes source (OBSIDIAN_API_URL, OBSIDIAN_API_KEY).

HTTPS with the plugin's own certificate (OBSIDIAN_CA_CERT) or none checked
(OBSIDIAN_TLS_VERIFY); tagged notes found with a JsonLogic search. The body of an
answer is read within OBSIDIAN_TIMEOUT_S in all and only as far as it is used; an
answer other than 2xx (a redirect included) is an error.
"""

from __future__ import annotations

import json
import logging
import re
import ssl
import time
from dataclasses import replace
from typing import NamedTuple
from urllib.parse import quote

import httpx

from memory.exceptions import NoteNotFound, StoreUnavailable, UnsafeNotePath
from memory.stores.notes import (
    MAX_NOTE_BYTES,
    MSG_BAD_RESPONSE,
    MSG_CA_UNREADABLE,
    MSG_HTTP_ERROR,
    MSG_NOT_FOUND,
    MSG_TIMEOUT,
    MSG_TLS_REFUSED,
    MSG_UNAUTHORIZED,
    MSG_UNREACHABLE,
    NOTE_SUFFIX,
    Note,
    note_build,
    note_path_normalize,
    tag_normalize,
)

logger = logging.getLogger(__name__)

JSONLOGIC_CONTENT_TYPE = "application/vnd.olrapi.jsonlogic+json"
# A search answer lists paths; one this big is not the plugin's (cut, it fails to parse).
MAX_SEARCH_BYTES = 4 * 1024 * 1024


class _Reply(NamedTuple):
    status: int
    body: bytes


def _tls_context(ca_cert: str | None, verify: bool) -> ssl.SSLContext | bool:
    if ca_cert:
        # Pinning: trust the plugin's certificate (or its CA) and nothing else.
        try:
            return ssl.create_default_context(cafile=ca_cert)
        except (OSError, ssl.SSLError):
            raise StoreUnavailable(MSG_CA_UNREADABLE.format(path=ca_cert)) from None
    if not verify:
        logger.warning(
            "OBSIDIAN_TLS_VERIFY=false: the Obsidian API certificate is NOT checked. "
            "This is unsafe; set OBSIDIAN_CA_CERT to the plugin's certificate instead."
        )
        return False
    return ssl.create_default_context()


def _is_tls_refusal(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ssl.SSLError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return "CERTIFICATE_VERIFY_FAILED" in str(exc)


def _js_case_insensitive(tag: str) -> str:
    """A JavaScript-compatible pattern matching tag in any case ([mM][aA]...)."""
    out = []
    for char in tag:
        lower, upper = char.lower(), char.upper()
        if lower != upper and len(lower) == 1 and len(upper) == 1:
            out.append(f"[{lower}{upper}]")
        elif char.isalnum() or char in "_-/":
            # Plain in both dialects outside a class; no escape needed.
            out.append(char)
        else:
            out.append(re.escape(char))
    return "".join(out)


def tag_search_query(tag: str) -> dict:
    """The JsonLogic body of POST /search/ finding notes tagged `tag` (nested included).

    The plugin evaluates it per note against {tags, frontmatter, path, content,
    stat}; `tags` holds inline tags and array front-matter tags without '#',
    and `frontmatter.tags` adds the string form ("tags: makilab"). The filter
    result is the list of matching tags, truthy when not empty.
    """
    pattern = f"(?:^|[\\s,])#?{_js_case_insensitive(tag)}(?:$|[\\s,/])"
    return {
        "filter": [
            {"merge": [{"var": "tags"}, {"var": "frontmatter.tags"}]},
            {"regexp": [pattern, {"var": ""}]},
        ]
    }


class LocalRestApiProvider:
    """Notes read through Obsidian's Local REST API plugin (HTTPS, bearer key)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        ca_cert: str | None = None,
        verify: bool = True,
        timeout: float = 2.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._client = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {api_key}"},
            verify=_tls_context(ca_cert, verify),
            timeout=httpx.Timeout(timeout),
            follow_redirects=False,
            # A loopback service: proxies and SSL_* variables must not reroute it.
            trust_env=False,
        )

    def close(self) -> None:
        self._client.close()

    def read(self, path: str) -> Note:
        rel = note_path_normalize(path)
        url = "/vault/" + "/".join(quote(part, safe="") for part in rel.split("/"))
        reply = self._request("GET", url, limit=MAX_NOTE_BYTES, headers={"Accept": "text/markdown"})
        if reply.status == 404:
            raise NoteNotFound(MSG_NOT_FOUND.format(path=rel))
        self._raise_for_status(reply)
        text = reply.body.decode("utf-8", errors="replace")
        return note_build(path=rel, text=text, source="fixed")

    def find_tagged(self, tag: str, *, limit: int | None = None) -> list[Note]:
        wanted = tag_normalize(tag)
        if not wanted:
            return []
        reply = self._request(
            "POST",
            "/search/",
            limit=MAX_SEARCH_BYTES,
            content=json.dumps(tag_search_query(wanted)).encode(),
            headers={"Content-Type": JSONLOGIC_CONTENT_TYPE, "Accept": "application/json"},
        )
        self._raise_for_status(reply)
        try:
            items = json.loads(reply.body)
            paths = sorted(
                {
                    item["filename"]
                    for item in items
                    if isinstance(item.get("filename"), str)
                    and item["filename"].lower().endswith(NOTE_SUFFIX)
                }
            )
        except (ValueError, TypeError, AttributeError, KeyError):
            raise StoreUnavailable(MSG_BAD_RESPONSE) from None
        notes: list[Note] = []
        for path in paths:
            if limit is not None and len(notes) >= limit:
                break
            try:
                notes.append(replace(self.read(path), source="tag"))
            except (NoteNotFound, UnsafeNotePath):
                continue  # deleted since the search, or a name we refuse
        return notes

    def _request(self, method: str, url: str, *, limit: int, **kwargs) -> _Reply:
        """The status and the first `limit` bytes of the body, within one deadline.

        httpx's timeout bounds each read, not the answer: a server sending a byte
        every second would hold a 2 s-timeout read for as long as it likes.
        """
        deadline = time.monotonic() + self.timeout
        try:
            with self._client.stream(method, url, **kwargs) as response:
                if response.status_code in (401, 403):
                    raise StoreUnavailable(MSG_UNAUTHORIZED.format(status=response.status_code))
                return _Reply(response.status_code, self._body_read(response, deadline, limit))
        except httpx.TimeoutException:
            raise StoreUnavailable(MSG_TIMEOUT.format(seconds=self.timeout)) from None
        except httpx.HTTPError as exc:
            if _is_tls_refusal(exc):
                raise StoreUnavailable(MSG_TLS_REFUSED) from None
            raise StoreUnavailable(MSG_UNREACHABLE.format(detail=type(exc).__name__)) from None

    def _body_read(self, response: httpx.Response, deadline: float, limit: int) -> bytes:
        """The body up to `limit` bytes (the rest is never downloaded), or MSG_TIMEOUT
        once the deadline has passed."""
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size >= limit:
                break
            if time.monotonic() > deadline:
                raise StoreUnavailable(MSG_TIMEOUT.format(seconds=self.timeout))
        return b"".join(chunks)[:limit]

    @staticmethod
    def _raise_for_status(reply: _Reply) -> None:
        # follow_redirects is off: a redirect's body is not the note.
        if not 200 <= reply.status < 300:
            raise StoreUnavailable(MSG_HTTP_ERROR.format(status=reply.status))
