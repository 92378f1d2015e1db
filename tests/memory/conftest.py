"""Fixtures shared by the memory tests: the API clients and the fake Anthropic (for those
outside api/), a fake Voyage server, and facts the owner forgot about a topic (the forget
previews' tests)."""

import pytest

from memory.services.facts import fact_forget, fact_store
from memory.stores.embedders import embedder_reset
from tests.fakes.anthropic import fake_anthropic  # noqa: F401
from tests.fakes.voyage import FakeVoyage
from tests.memory.api.conftest import agent_api, agent_token, agent_user, owner_api  # noqa: F401


@pytest.fixture
def fake_voyage():
    """A fake Voyage API on 127.0.0.1, with no process-wide embedder kept across it."""
    embedder_reset()
    with FakeVoyage() as fake:
        yield fake
    embedder_reset()


@pytest.fixture
def forgotten_with_old_value():
    """The owner's doctor was in Lisbon; the owner edited that away, then forgot the fact."""
    fact, _ = fact_store(
        key="medecin_traitant", value="Dr Pereira, clinique de Lisbonne", actor="user"
    )
    fact_store(key="medecin_traitant", value="Dr Pereira", actor="user")
    return fact_forget(fact=fact, actor="user")


@pytest.fixture
def forgotten_about_topic():
    fact, _ = fact_store(
        key="dette_lisbonne", value="Je dois 4000 euros à Paulo de Lisbonne", actor="user"
    )
    return fact_forget(fact=fact, actor="user")
