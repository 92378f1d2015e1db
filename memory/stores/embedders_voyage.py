"""Voyage AI embeddings through the official ``voyageai`` client (``VOYAGE_API_KEY``).

Our own retry loop around the SDK's request call (``voyageai.Embedding.create``,
which keeps each vector's "index"; ``Client.embed`` drops it): backoff on 429
(honouring Retry-After), 5xx, timeouts and connection errors; no retry on
400/401/403/422. Only 400 and 422 (the request itself) are ``EmbeddingInvalid``;
401, 403 (Voyage: the caller's IP is blocked) and any other refusal leave the row
pending (``EmbeddingError``). The pre-hook's query takes one attempt within its
own limit (``embed_query_once``). Requests stay inside Voyage's count and token
limits (``voyage_batches``). The SDK is imported inside functions only.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections.abc import Sequence
from typing import Any

from memory.exceptions import EmbeddingError, EmbeddingInvalid
from memory.stores.embedders import (
    EMBEDDING_INVALID_MESSAGE,
    EMBEDDING_UNAVAILABLE_MESSAGE,
    VOYAGE_CANDIDATE_THRESHOLD,
    VOYAGE_FORGET_CANDIDATE_SCORE,
    VOYAGE_GATE_MARGIN,
    VOYAGE_NEAR_DUPLICATE_THRESHOLD,
    VOYAGE_SAME_TOPIC_THRESHOLD,
    VOYAGE_SCORE_HIGH,
    VOYAGE_SCORE_LOW,
    cached_query,
    validate_vectors,
)

logger = logging.getLogger(__name__)

# --- Voyage limits --------------------------------------------------------------
# https://docs.voyageai.com/docs/embeddings: at most 1,000 texts and 120K tokens
# (voyage-3) per request. We stay well inside: 128 texts and an estimated budget,
# since the SDK's tokenizer downloads its vocabulary at run time (unavailable
# offline). One token per 3 UTF-8 bytes over-estimates French and English text.
VOYAGE_MAX_BATCH = 128
VOYAGE_MAX_BATCH_TOKENS = 100_000
VOYAGE_BYTES_PER_TOKEN = 3
VOYAGE_MODEL_DIMENSIONS = {
    "voyage-3": 1024,
    "voyage-3-large": 1024,
    "voyage-3.5": 1024,
    "voyage-3.5-lite": 1024,
    "voyage-3-lite": 512,
    "voyage-multilingual-2": 1024,
    "voyage-large-2": 1536,
    "voyage-2": 1024,
}
VOYAGE_BACKOFF_BASE_S = 1.0
VOYAGE_BACKOFF_MAX_S = 30.0
# A Retry-After longer than this is not waited for inside a request: the caller
# (a Celery task, the periodic sweep) retries later instead.
VOYAGE_RETRY_AFTER_MAX_S = 60.0

VOYAGE_AUTH_MESSAGE = (
    "Voyage AI a refusé la clé d'API (HTTP 401) : vérifiez VOYAGE_API_KEY. {detail}"
)
VOYAGE_FORBIDDEN_MESSAGE = "Voyage AI refuse l'accès (HTTP 403) : adresse IP bloquée ? {detail}"
VOYAGE_REFUSED_MESSAGE = "Voyage AI refuse la requête (HTTP {status}) : {detail}"
VOYAGE_UNKNOWN_MODEL_MESSAGE = (
    "Dimension inconnue pour le modèle Voyage {model!r} : modèles connus {known}."
)
VOYAGE_INDEXES_MESSAGE = "indices {indexes} au lieu de 0..{last}"
# Statuses worth another attempt inside the request (besides timeouts and resets).
VOYAGE_TRANSIENT_STATUSES = frozenset({408, 429})
# The only refusals about the request itself: retrying the same text cannot help.
VOYAGE_INVALID_STATUSES = frozenset({400, 422})


def _retry_after_seconds(headers: Any) -> float | None:
    """The delay a 429's Retry-After header asks for (seconds or an HTTP date)."""
    if not headers:
        return None
    value = headers.get("retry-after") or headers.get("Retry-After")
    if value is None:
        return None
    value = str(value).strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_detail(exc: Any) -> str:
    """What Voyage said, from its ``{"detail": ...}`` body (else the body), never the
    response headers the SDK folds into some messages."""
    body = getattr(exc, "json_body", None)
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        return body["detail"][:200]
    raw = getattr(exc, "http_body", None)
    return str(raw)[:200] if raw else ""


def voyage_batches(
    texts: Sequence[str],
    *,
    max_texts: int = VOYAGE_MAX_BATCH,
    max_tokens: int = VOYAGE_MAX_BATCH_TOKENS,
) -> list[list[str]]:
    """Split ``texts`` (order kept) into requests within Voyage's count and token limits.

    A single text over the token budget goes alone: Voyage truncates it
    (``truncation=True``) rather than refusing it.
    """
    batches: list[list[str]] = []
    current: list[str] = []
    tokens = 0
    for text in texts:
        estimate = len(text.encode("utf-8")) // VOYAGE_BYTES_PER_TOKEN + 1
        if current and (len(current) >= max_texts or tokens + estimate > max_tokens):
            batches.append(current)
            current, tokens = [], 0
        current.append(text)
        tokens += estimate
    if current:
        batches.append(current)
    return batches


class VoyageEmbedder:
    """Voyage AI embeddings (``voyage-3``: 1024 dims) through the ``voyageai`` SDK."""

    near_duplicate_threshold = VOYAGE_NEAR_DUPLICATE_THRESHOLD
    candidate_threshold = VOYAGE_CANDIDATE_THRESHOLD
    score_low = VOYAGE_SCORE_LOW
    score_high = VOYAGE_SCORE_HIGH
    gate_margin = VOYAGE_GATE_MARGIN
    forget_candidate_score = VOYAGE_FORGET_CANDIDATE_SCORE
    same_topic_threshold = VOYAGE_SAME_TOPIC_THRESHOLD
    # Not measured across languages with Voyage (no network here): no correction.
    cross_language_bonus = 0.0
    cross_language_margin_bonus = 0.0

    def __init__(
        self,
        *,
        api_key: str,
        model: str = "voyage-3",
        base_url: str = "",
        timeout_s: float = 20.0,
        max_retries: int = 4,
        dimension: int | None = None,
        backoff_base_s: float = VOYAGE_BACKOFF_BASE_S,
        backoff_max_s: float = VOYAGE_BACKOFF_MAX_S,
        retry_after_max_s: float = VOYAGE_RETRY_AFTER_MAX_S,
    ) -> None:
        if dimension is None:
            if model not in VOYAGE_MODEL_DIMENSIONS:
                raise ValueError(
                    VOYAGE_UNKNOWN_MODEL_MESSAGE.format(
                        model=model, known=", ".join(sorted(VOYAGE_MODEL_DIMENSIONS))
                    )
                )
            dimension = VOYAGE_MODEL_DIMENSIONS[model]
        self.name = f"voyage:{model}"
        self.model = model
        self.dimension = dimension
        self.api_key = api_key
        self.base_url = base_url.rstrip("/") if base_url else ""
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.retry_after_max_s = retry_after_max_s

    def __repr__(self) -> str:
        return f"<VoyageEmbedder {self.name} base_url={self.base_url or 'default'}>"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for batch in voyage_batches(texts):
            vectors.extend(self._embed(batch, input_type="document"))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return cached_query(self.name, text, lambda t: self._embed([t], input_type="query")[0])

    def embed_query_once(self, text: str, *, timeout_s: float) -> list[float]:
        """The pre-hook's query: one attempt within ``timeout_s``, no retry, no Retry-After
        wait. The pre-hook stops waiting at its own limit anyway: a request running on
        past it (the indexing policy: 20 s, retries, waits up to a minute) only holds a
        thread of its pool, and a few slow messages left none for the next ones."""
        return cached_query(
            self.name,
            text,
            lambda t: self._embed([t], input_type="query", timeout_s=timeout_s, max_retries=0)[0],
        )

    def _request(self, texts: list[str], *, input_type: str, timeout_s: float) -> Any:
        """One POST /embeddings; the answer with each vector's "index" (base64 decoded)."""
        import voyageai
        from voyageai.util import get_default_base_url

        # The SDK's request call, as Client.embed makes it, minus the client's retries
        # (it retries 429/502-504/timeouts without honouring Retry-After and never a
        # 500; our loop does both) and minus EmbeddingsObject, which drops "index".
        # The SDK keeps one requests session per thread; the timeout is per call.
        return voyageai.Embedding.create(
            input=texts,
            model=self.model,
            input_type=input_type,
            truncation=True,
            output_dtype=None,
            output_dimension=None,
            api_key=self.api_key,
            base_url=self.base_url or get_default_base_url(self.api_key),
            request_timeout=timeout_s,
        )

    def _in_index_order(self, data: Any, count: int) -> list[Any]:
        """The embeddings of ``data`` ordered by their "index": exactly 0..count-1, else
        ``EmbeddingInvalid`` (a vector is never matched to a text by its position)."""
        items = list(data)
        indexes = [item["index"] for item in items]
        if len(items) != count:
            raise self._invalid(f"{len(items)} vecteurs reçus pour {count} textes")
        if any(type(i) is not int for i in indexes) or sorted(indexes) != list(range(count)):
            raise self._invalid(VOYAGE_INDEXES_MESSAGE.format(indexes=indexes[:10], last=count - 1))
        by_index = [None] * count
        for index, item in zip(indexes, items, strict=True):
            by_index[index] = item["embedding"]
        return by_index

    def _backoff(self, attempt: int) -> float:
        delay = min(self.backoff_max_s, self.backoff_base_s * (2**attempt))
        return delay * random.uniform(0.5, 1.0)  # jitter: concurrent workers spread out

    def _embed(
        self,
        texts: list[str],
        *,
        input_type: str,
        timeout_s: float | None = None,
        max_retries: int | None = None,
    ) -> list[list[float]]:
        from voyageai import error as voyage_error

        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        max_retries = self.max_retries if max_retries is None else max_retries
        attempt = 0
        while True:
            try:
                response = self._request(texts, input_type=input_type, timeout_s=timeout_s)
                embeddings = self._in_index_order(response.data, len(texts))
            except voyage_error.RateLimitError as exc:
                delay = _retry_after_seconds(exc.headers)
                if delay is not None and delay > self.retry_after_max_s:
                    raise self._unavailable(f"HTTP 429, Retry-After {delay:.0f} s") from exc
                failure: Exception = exc
                detail = "HTTP 429 (trop de requêtes)"
                delay = self._backoff(attempt) if delay is None else delay
            except voyage_error.AuthenticationError as exc:
                raise EmbeddingError(VOYAGE_AUTH_MESSAGE.format(detail=exc.user_message)) from exc
            except (
                voyage_error.InvalidRequestError,
                voyage_error.MalformedRequestError,
            ) as exc:
                raise self._invalid(
                    f"requête refusée (HTTP {exc.http_status}) : {exc.user_message}"
                ) from exc
            except (
                voyage_error.ServerError,
                voyage_error.ServiceUnavailableError,
                voyage_error.Timeout,
                voyage_error.APIConnectionError,
                voyage_error.TryAgain,
            ) as exc:
                failure = exc
                status = exc.http_status
                detail = f"HTTP {status}" if status else type(exc).__name__
                delay = self._backoff(attempt)
            except voyage_error.VoyageError as exc:
                # The SDK raises a bare APIError (headers dropped) for a status it does not
                # name (403, 404, ...) or a body that is not Voyage's {"detail": ...}; its
                # message carries the raw response headers, never stored (_error_detail).
                status = exc.http_status
                if status is not None and (status in VOYAGE_TRANSIENT_STATUSES or status >= 500):
                    failure, detail, delay = exc, f"HTTP {status}", self._backoff(attempt)
                elif status == 401:
                    raise EmbeddingError(
                        VOYAGE_AUTH_MESSAGE.format(detail=_error_detail(exc))
                    ) from exc
                elif status == 403:
                    # Voyage's 403: the caller's IP is blocked. Not the text: the row stays
                    # pending and is retried later (from elsewhere, or once unblocked).
                    raise EmbeddingError(
                        VOYAGE_FORBIDDEN_MESSAGE.format(detail=_error_detail(exc))
                    ) from exc
                elif status is not None and status >= 400 and status not in VOYAGE_INVALID_STATUSES:
                    # A refusal that is not about the text (404: a wrong VOYAGE_BASE_URL).
                    raise EmbeddingError(
                        VOYAGE_REFUSED_MESSAGE.format(status=status, detail=_error_detail(exc))
                    ) from exc
                else:
                    # A 200 whose body is not JSON, or a 400/422 whose body is not Voyage's.
                    raise self._invalid(f"HTTP {status} : {_error_detail(exc)}") from exc
            except (AttributeError, KeyError, TypeError, ValueError) as exc:
                # A JSON body without the fields we read (data, index, embedding).
                raise self._invalid(f"corps inattendu ({type(exc).__name__}: {exc})") from exc
            else:
                return validate_vectors(
                    embeddings, count=len(texts), dimension=self.dimension, name=self.name
                )
            if attempt >= max_retries:
                raise self._unavailable(f"{detail} après {attempt + 1} tentative(s)") from failure
            logger.warning(
                "Voyage embeddings: %s, retry %d/%d in %.2f s",
                detail,
                attempt + 1,
                max_retries,
                delay,
            )
            time.sleep(delay)
            attempt += 1

    def _invalid(self, detail: str) -> EmbeddingInvalid:
        return EmbeddingInvalid(EMBEDDING_INVALID_MESSAGE.format(name=self.name, detail=detail))

    def _unavailable(self, detail: str) -> EmbeddingError:
        return EmbeddingError(EMBEDDING_UNAVAILABLE_MESSAGE.format(name=self.name, detail=detail))
