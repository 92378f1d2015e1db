"""Fixtures shared by the memory tests outside api/: the API clients and the fake Anthropic."""

from tests.fakes.anthropic import fake_anthropic  # noqa: F401
from tests.memory.api.conftest import agent_api, agent_token, agent_user, owner_api  # noqa: F401
