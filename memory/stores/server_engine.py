"""How the Qdrant server store (memory.stores.vectors_server) configures and asks the
server: the int8 copy every collection keeps, the search parameters and filters,
and the parts of a QDRANT_URL no message may show. qdrant-client is imported
inside functions only.
"""

from __future__ import annotations

import functools
from typing import Any

from memory.stores.vectors import INT8_OVERSAMPLING, INT8_QUANTILE, Filters


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
