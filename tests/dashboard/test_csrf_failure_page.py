"""A refused CSRF check answers a French page, title included (Django's says "403 Forbidden")."""

from __future__ import annotations

import re

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_the_csrf_failure_page_is_french_from_its_title(staff_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff_user)
    response = client.post("/memory/facts/", {"key": "k", "value": "v", "memory_type": "fact"})
    assert response.status_code == 403
    page = response.content.decode()
    title = re.search(r"<title>(.*?)</title>", page, re.S).group(1)
    assert "Forbidden" not in title and "Accès refusé" in title
    assert '<html lang="fr">' in page
    assert "Forbidden" not in page and "CSRF verification failed" not in page
