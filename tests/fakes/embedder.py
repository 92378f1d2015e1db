"""A fast deterministic embedder implementing memory.stores.embedders.Embedder.

Each word of a text is hashed to a few coordinates (a bag of words), so texts
sharing words are close and a unique word finds its text: enough for search to
mean something, a million times faster than a model. It records every call and
can run a hook inside ``embed_documents`` (the slow part of a real worker), so a
test can make something happen *while* a task embeds. ``install`` makes it the
process-wide embedder, the cached instance ``get_embedder`` returns.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable

WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    name = "test:hash-bag-of-words"
    near_duplicate_threshold = 0.99
    candidate_threshold = 0.7
    score_low = 0.0
    score_high = 1.0
    gate_margin = 0.0
    forget_candidate_score = 0.4
    same_topic_threshold = 0.95
    cross_language_bonus = 0.0
    cross_language_margin_bonus = 0.0

    def __init__(self, dimension: int = 64) -> None:
        self.dimension = dimension
        # One entry per embed_documents call: the texts it was given.
        self.document_calls: list[list[str]] = []
        # Called with the texts at the start of the next embed_documents call(s).
        self.hook: Callable[[list[str]], None] | None = None
        self.error: BaseException | None = None

    def vector(self, text: str) -> list[float]:
        values = [0.0] * self.dimension
        for word in WORD.findall(text.lower()) or [""]:
            digest = hashlib.sha256(word.encode()).digest()
            for i in range(0, 6, 2):
                values[digest[i] % self.dimension] += 1.0 if digest[i + 1] % 2 else -1.0
        if not any(values):
            values[0] = 1.0
        norm = math.sqrt(sum(v * v for v in values))
        return [v / norm for v in values]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.document_calls.append(list(texts))
        hook, self.hook = self.hook, None
        if hook is not None:
            hook(list(texts))
        if self.error is not None:
            raise self.error
        return [self.vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vector(text)

    @property
    def embedded_texts(self) -> list[str]:
        return [t for call in self.document_calls for t in call]


def install(monkeypatch, embedder) -> None:
    """Make ``embedder`` the process-wide embedder for one test."""
    from memory.stores import embedders

    monkeypatch.setattr(embedders, "_embedder", embedder)
