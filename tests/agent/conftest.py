"""Fixtures of the agent tests: the fake Anthropic server, and a world to answer in."""

import pytest

from tests.fakes.anthropic import fake_anthropic  # noqa: F401


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, settings, tmp_path):  # noqa: F811
    """The agent answering at once (no coalescing), its notes an empty vault of its own;
    the fake Anthropic server to script."""
    settings.AGENT_COALESCE_SECONDS = 0
    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path / "vault"
    (tmp_path / "vault").mkdir()
    return fake_anthropic
