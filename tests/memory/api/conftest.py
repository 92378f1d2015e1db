"""Clients of the memory API: the owner's session and the agent's token."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient


@pytest.fixture
def agent_user(django_user_model):
    # The agent is a plain account: its token, not staff rights, lets it in.
    return django_user_model.objects.create_user(username="agent", password=None)


@pytest.fixture
def agent_token(agent_user):
    return Token.objects.create(user=agent_user)


@pytest.fixture
def agent_api(agent_token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {agent_token.key}")
    return client


@pytest.fixture
def owner_api(staff_user):
    """The owner's own API token (a staff account's): the owner's scope."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=staff_user).key}")
    return client


@pytest.fixture
def staff_api(staff_user):
    client = APIClient()
    client.force_login(staff_user)
    return client


@pytest.fixture
def anonymous_api():
    return APIClient()
