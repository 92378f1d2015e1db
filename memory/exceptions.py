"""Domain errors of the memory. Never shadow the builtin MemoryError."""


class MemoryServiceError(Exception):
    """A request the memory refuses: the message is shown to the user as is."""


class InvalidTTL(MemoryServiceError):
    """A TTL string that is not one of the accepted forms."""


class FactNotFound(MemoryServiceError):
    """No fact with that key."""


class StoreUnavailable(MemoryServiceError):
    """A derived store (Qdrant, the embedder, the notes) cannot be reached."""


class DimensionMismatch(MemoryServiceError):
    """A Qdrant collection's vector size differs from the embedder's."""
