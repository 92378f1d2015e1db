"""Errors of the agent. All are MemoryServiceError: their message is shown as is."""

from memory.exceptions import MemoryServiceError


class LlmError(MemoryServiceError):
    """An LLM call that did not give a usable answer."""

    # The user messages already saved when the error happened (set by the agent loop).
    message_ids: tuple[int, ...] = ()


class LlmUnavailable(LlmError):
    """No LLM now: no key, or Anthropic down/overloaded/timing out after the retries."""


class LlmAnswerCut(LlmUnavailable):
    """The answer stopped at the output cap (``stop_reason`` « max_tokens »): what it did not
    say is missing, so it is not taken as complete; a job tries again (nothing is marked
    done from it), then fails visibly."""


class LlmNotConfigured(LlmUnavailable):
    """ANTHROPIC_API_KEY is not set."""


class LlmRequestRejected(LlmError):
    """Anthropic refused the request itself (400, 404, 413...): retrying will not help."""


class LlmAnswerUnusable(LlmError):
    """The LLM answered, but nothing a job can use (not the JSON shape asked for, or cut at
    the output cap even on the smallest request): not an outage, so the job counts an
    attempt and, after its last, fails visibly; what the answer was about is kept."""


class LlmInvalidJson(LlmError):
    """The LLM was asked for JSON and answered something else."""


class ChatStillAnswering(MemoryServiceError):
    """A chat request sent again with its idempotency key while the first is answered."""


class ChatAnswerGone(MemoryServiceError):
    """A chat request sent again with its idempotency key whose message or answer the owner
    forgot or erased since: no retry gives it back."""
