"""Fixtures of the agent tests: the fake Anthropic server."""

from tests.fakes.anthropic import fake_anthropic  # noqa: F401
