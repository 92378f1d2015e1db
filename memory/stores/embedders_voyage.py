"""Voyage AI embeddings through the official ``voyageai`` client (``VOYAGE_API_KEY``).

Our own retry loop (the SDK's retries are disabled): backoff on 429 (honouring
Retry-After), 5xx, timeouts and connection errors; no retry on 400/401/422.
Requests stay inside Voyage's count and token limits (``voyage_batches``). The
SDK is imported inside functions only.
"""

from __future__ import annotations

import email.utils
import logging
import random
import threading
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
VOYAGE_UNKNOWN_MODEL_MESSAGE = (
    "Dimension inconnue pour le modèle Voyage {model!r} : modèles connus {known}."
)


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
        self._client: Any = None
        self._client_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<VoyageEmbedder {self.name} base_url={self.base_url or 'default'}>"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for batch in voyage_batches(texts):
            vectors.extend(self._embed(batch, input_type="document"))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return cached_query(self.name, text, lambda t: self._embed([t], input_type="query")[0])

    def _get_client(self) -> Any:
        with self._client_lock:
            if self._client is None:
                import voyageai

                # max_retries=0: the SDK retries 429/502-504/timeouts without honouring
                # Retry-After and never retries a 500; our loop below does both.
                self._client = voyageai.Client(
                    api_key=self.api_key,
                    max_retries=0,
                    timeout=self.timeout_s,
                    base_url=self.base_url or None,
                )
            return self._client

    def _backoff(self, attempt: int) -> float:
        delay = min(self.backoff_max_s, self.backoff_base_s * (2**attempt))
        return delay * random.uniform(0.5, 1.0)  # jitter: concurrent workers spread out

    def _embed(self, texts: list[str], *, input_type: str) -> list[list[float]]:
        from voyageai import error as voyage_error

        client = self._get_client()
        attempt = 0
        while True:
            try:
                result = client.embed(
                    texts, model=self.model, input_type=input_type, truncation=True
                )
                embeddings = result.embeddings
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
                raise EmbeddingInvalid(
                    EMBEDDING_INVALID_MESSAGE.format(
                        name=self.name,
                        detail=f"requête refusée (HTTP {exc.http_status}) : {exc.user_message}",
                    )
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
                status = exc.http_status
                if status is not None and (status == 429 or status >= 500):
                    # The SDK raises a bare APIError (headers dropped) when a 429/5xx
                    # body is not Voyage's {"detail": ...}: still transient.
                    failure, detail, delay = exc, f"HTTP {status}", self._backoff(attempt)
                else:
                    # A 200 whose body is not JSON, or a 4xx whose body is not Voyage's.
                    raise EmbeddingInvalid(
                        EMBEDDING_INVALID_MESSAGE.format(
                            name=self.name, detail=f"HTTP {status} : {str(exc)[:200]}"
                        )
                    ) from exc
            except (AttributeError, KeyError, TypeError, ValueError) as exc:
                # A JSON body without the fields the SDK reads (data, embedding, usage).
                raise EmbeddingInvalid(
                    EMBEDDING_INVALID_MESSAGE.format(
                        name=self.name, detail=f"corps inattendu ({type(exc).__name__}: {exc})"
                    )
                ) from exc
            else:
                return validate_vectors(
                    embeddings, count=len(texts), dimension=self.dimension, name=self.name
                )
            if attempt >= self.max_retries:
                raise self._unavailable(f"{detail} après {attempt + 1} tentative(s)") from failure
            logger.warning(
                "Voyage embeddings: %s, retry %d/%d in %.2f s",
                detail,
                attempt + 1,
                self.max_retries,
                delay,
            )
            time.sleep(delay)
            attempt += 1

    def _unavailable(self, detail: str) -> EmbeddingError:
        return EmbeddingError(EMBEDDING_UNAVAILABLE_MESSAGE.format(name=self.name, detail=detail))
