"""Domain errors of the memory. Never shadow the builtin MemoryError."""


class MemoryServiceError(Exception):
    """A request the memory refuses: the message is shown to the user as is."""


class InvalidTTL(MemoryServiceError):
    """A TTL string that is not one of the accepted forms."""


class FactNotFound(MemoryServiceError):
    """No fact with that key."""


class FactChanged(MemoryServiceError):
    """The fact changed since the caller read the version it edits (fact_update's ``opened``)."""


class StoreUnavailable(MemoryServiceError):
    """A derived store (Qdrant, the embedder, the notes) cannot be reached."""


class DimensionMismatch(MemoryServiceError):
    """A Qdrant collection's vector size differs from the embedder's."""


class EmbedderMismatch(DimensionMismatch):
    """A Qdrant collection was filled by another embedder than the one in use, of the
    same vector size (voyage-3 → voyage-3.5): its points and the new vectors live in
    different spaces. Handled wherever a dimension change is."""


class EmbeddingError(StoreUnavailable):
    """The embedder cannot answer now (network, timeout, 429/5xx after retries, bad key).

    Transient for the caller: keep the row pending and try again later.
    """


class EmbeddingInvalid(MemoryServiceError):
    """The embedder answered with something unusable (malformed body, NaN, wrong
    dimension or count) or refused the request (400). Retrying the same input will
    not help: mark the row failed, never store the vector."""


class NoteNotFound(MemoryServiceError):
    """No note at that path in the vault."""


class UnsafeNotePath(MemoryServiceError):
    """A note path that is absolute, climbs out of the vault or is not a note."""


class FactErased(MemoryServiceError):
    """An agent statement drawn from a message older than the owner's erasure of that fact."""


class SourceForgotten(MemoryServiceError):
    """An agent statement drawn from a message the owner forgot (or left out) meanwhile."""


class FactKeyLookAlike(MemoryServiceError):
    """The owner's new key only looks like a live fact's (case, accents, spacing): it would
    start a second fact beside it."""
