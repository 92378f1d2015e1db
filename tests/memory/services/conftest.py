"""Fixtures of the service tests."""

import pytest


@pytest.fixture
def slow_machine_ok(settings):
    """Every retrieval source's time limit raised: a cold model on a shared machine must
    not look like a gate decision."""
    settings.RETRIEVAL_TIMEOUTS_MS = dict.fromkeys(settings.RETRIEVAL_TIMEOUTS_MS, 60000)
