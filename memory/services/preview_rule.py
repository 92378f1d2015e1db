"""Which logged message previews a forget redacts (memory.services.removal).

A retrieval log row keeps a preview of the message it answered: the message's
start (memory.services.retrieval.log.PREVIEW_CHARS), or the start of several
messages answered together, joined. A forget redacts the previews that hold
every word of its topic, and those of the messages it took or excluded (the
request to forget): a preview that is one of them, or that is made of them one
after the other (the last one maybe cut). A preview that only opens like a
taken message, or holds a short one among other words, is somebody else's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

REDACTED = "[oublié]"
# Taken texts are looked up by their first characters (a preview's part starts with one).
HEAD_CHARS = 12
CUT_MARK = "…"  # what formatting.clean_text puts where it cut a text


@dataclass
class PreviewRule:
    term_sets: list[list[str]]
    texts: set[str]  # the taken messages, whole, cleaned as a preview is
    by_head: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, *, terms: Iterable[Iterable[str]] = (), texts: Iterable[str] = ()) -> PreviewRule:
        from memory.services.formatting import clean_text

        whole = {clean_text(t, max_chars=10**9) for t in texts}
        whole.discard("")
        by_head: dict[str, list[str]] = {}
        for text in whole:
            head = text[:HEAD_CHARS] if len(text) >= HEAD_CHARS else ""
            by_head.setdefault(head, []).append(text)
        return cls(term_sets=[list(t) for t in terms if t], texts=whole, by_head=by_head)

    def __bool__(self) -> bool:
        return bool(self.term_sets or self.texts)

    def hits(self, preview: str) -> bool:
        from memory.services.forgetting_select import contains_all

        return preview != REDACTED and (
            self._made_of_taken(preview) or any(contains_all(preview, t) for t in self.term_sets)
        )

    def _made_of_taken(self, rest: str) -> bool:
        """Whether ``rest`` is taken texts one after the other, the last one maybe cut."""
        cut = rest.endswith(CUT_MARK)
        body = rest[: -len(CUT_MARK)] if cut else rest
        short = self.by_head.get("", ())  # texts shorter than a head: few, all tried
        candidates = [*self.by_head.get(body[:HEAD_CHARS], ()), *short]
        for text in candidates:
            if body == text or (cut and text.startswith(body)):
                return True
            if body.startswith(text + " ") and self._made_of_taken(rest[len(text) + 1 :]):
                return True
        if cut and len(body) < HEAD_CHARS:  # cut inside its first characters
            return any(text.startswith(body) for text in self.texts)
        return False
