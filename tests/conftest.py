"""The shared test world: real SQLite (with FTS5) through Django, users, clients."""

from __future__ import annotations

import pytest


@pytest.fixture
def staff_user(django_user_model):
    return django_user_model.objects.create_user(
        username="owner", password="mot-de-passe-solide", is_staff=True, is_superuser=True
    )


@pytest.fixture
def staff_client(client, staff_user):
    client.force_login(staff_user)
    return client
