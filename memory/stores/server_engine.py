"""How the Qdrant server store (memory.stores.vectors_server) configures and asks the
server: the int8 copy every collection keeps, the search parameters and filters,
the parts of a QDRANT_URL no message may show, and qdrant-client's errors told as
ours. qdrant-client is imported inside functions only.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

from memory.exceptions import StoreUnavailable
from memory.stores.vectors import INT8_OVERSAMPLING, INT8_QUANTILE, Filters

SERVER_UNREACHABLE_MESSAGE = "Serveur Qdrant injoignable ({url}) : {detail}"
SERVER_ERROR_MESSAGE = "Le serveur Qdrant ({url}) a répondu une erreur : {detail}"


class CollectionGone(Exception):
    """The server no longer has a collection this process knew: dropped elsewhere
    (e.g. `reindex --recreate` run from another process)."""


def url_secrets(url: str) -> list[str]:
    """The user info of ``url`` as it may appear in a text (raw and percent-decoded)."""
    from urllib.parse import unquote, urlsplit

    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        return []
    userinfo = netloc.rpartition("@")[0]
    if not userinfo:
        return []
    password = userinfo.partition(":")[2]
    found = {userinfo, unquote(userinfo), password, unquote(password)}
    # Longest first, so "user:pw" goes before "pw" alone.
    return sorted((s for s in found if s), key=len, reverse=True)


def int8_copy() -> Any:
    """The int8 copy every collection keeps (vectors.INT8_QUANTILE), as on Qdrant Edge."""
    from qdrant_client import models

    return models.ScalarQuantization(
        scalar=models.ScalarQuantizationConfig(
            type=models.ScalarType.INT8, quantile=INT8_QUANTILE, always_ram=True
        )
    )


@functools.lru_cache(maxsize=1)
def search_params() -> Any:
    """Every search walks the copy and ranks INT8_OVERSAMPLING times the hits asked again
    on the stored vectors: the scores are the exact cosines."""
    from qdrant_client import models

    return models.SearchParams(
        quantization=models.QuantizationSearchParams(rescore=True, oversampling=INT8_OVERSAMPLING)
    )


def search_filter(filters: Filters | None) -> Any:
    """The server's filter for ``filters`` (every condition must hold)."""
    if not filters:
        return None
    from qdrant_client import models

    conditions = []
    for key, value in filters.items():
        if isinstance(value, (list, tuple, set)):
            match: Any = models.MatchAny(any=list(value))
        else:
            match = models.MatchValue(value=value)
        conditions.append(models.FieldCondition(key=key, match=match))
    return models.Filter(must=conditions)


@contextlib.contextmanager
def client_errors(url: str, secrets: list[str], name: str | None = None) -> Iterator[None]:
    """Map qdrant-client's errors to ours, told with ``url`` and without ``secrets``
    (url_secrets). With ``name``, a missing collection raises ``CollectionGone``."""
    import httpx
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    try:
        yield
    except ResponseHandlingException as exc:
        raise StoreUnavailable(
            SERVER_UNREACHABLE_MESSAGE.format(url=url, detail=scrubbed(exc.source or exc, secrets))
        ) from exc
    except (httpx.TransportError, ConnectionError, TimeoutError) as exc:
        raise StoreUnavailable(
            SERVER_UNREACHABLE_MESSAGE.format(url=url, detail=scrubbed(exc, secrets))
        ) from exc
    except UnexpectedResponse as exc:
        if name is not None and exc.status_code == 404:
            raise CollectionGone(name) from exc
        detail = scrubbed(f"HTTP {exc.status_code} {exc.content[:200]!r}", secrets)
        raise StoreUnavailable(SERVER_ERROR_MESSAGE.format(url=url, detail=detail)) from exc
    except ValueError as exc:  # qdrant-client's local mode says it this way
        if name is not None and "not found" in str(exc):
            raise CollectionGone(name) from exc
        raise


def scrubbed(detail: object, secrets: list[str]) -> str:
    """An error's text without the URL's user info (an httpx error may quote the URL)."""
    text = str(detail)
    for secret in secrets:
        text = text.replace(secret, "***")
    return text
