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


@pytest.fixture
def lobby(vector_store, local_embedder, fake_anthropic, eager_tasks, settings):  # noqa: F811
    """The observed room "lobby" the digest reads, the real embedder and vector store, tasks
    run inline; the fake Anthropic server (no retries) to script."""
    from memory.services.channels import channel_settings_set

    settings.ANTHROPIC_MAX_RETRIES = 0
    channel_settings_set(channel="lobby", observed=True)
    return fake_anthropic
