"""The maintenance channel of serve: opened by its local secret only, runs report progress."""

from __future__ import annotations

import time

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from memory.api.maintenance import LOCAL_ONLY_MESSAGE
from memory.services import serve_link
from memory.services.facts import fact_store
from memory.services.serve_link import SECRET_HEADER

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "un-secret-de-test-assez-long"


@pytest.fixture
def serving_secret(monkeypatch):
    monkeypatch.setattr(serve_link, "_secret", SECRET)
    return SECRET


def _wait(client: Client, run_id: str) -> dict:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        run = client.get(
            f"/api/memory/maintenance/runs/{run_id}", headers={SECRET_HEADER: SECRET}
        ).json()
        if run["state"] != "running":
            return run
        time.sleep(0.1)
    pytest.fail("the run never ended")


def test_a_reindex_run_reports_its_steps_and_lines(serving_secret, vector_store, local_embedder):
    for i in range(3):
        fact_store(key=f"fait_{i}", value=f"Le fait numéro {i}")
    client = Client()
    started = client.post(
        "/api/memory/maintenance/reindex",
        {"collection": "knowledge", "batch_size": 2},
        content_type="application/json",
        headers={SECRET_HEADER: SECRET},
    )
    assert started.status_code == 202, started.content
    run = _wait(client, started.json()["id"])
    assert run["state"] == "done", run
    assert run["lines"] == ["Réindexation terminée : 3 points écrits, 0 retirés, 0 en échec."]
    assert {"kind": "fact", "done": 3, "total": 3} in run["steps"]
    assert vector_store.count("knowledge") == 3


def test_a_failed_run_carries_the_stores_french_message(serving_secret, settings):
    from memory.stores.vectors import vector_store_reset

    vector_store_reset()
    settings.QDRANT_URL = "http://127.0.0.1:9"
    settings.QDRANT_TIMEOUT_S = 1
    client = Client()
    try:
        started = client.post(
            "/api/memory/maintenance/doctor",
            {},
            content_type="application/json",
            headers={SECRET_HEADER: SECRET},
        )
        run = _wait(client, started.json()["id"])
    finally:
        vector_store_reset()
    assert run["state"] == "failed"
    assert "Qdrant" in run["error"] and not run["ok"]


@pytest.mark.parametrize(
    "headers",
    [{}, {SECRET_HEADER: "mauvais"}, {SECRET_HEADER: ""}],
    ids=["none", "wrong", "empty"],
)
def test_without_the_secret_nothing_starts(serving_secret, headers):
    response = Client().post("/api/memory/maintenance/purge-expired", {}, headers=headers)
    assert response.status_code == 403
    assert response.json()["message"] == LOCAL_ONLY_MESSAGE


def test_no_token_or_session_opens_it_even_the_owners(staff_user, serving_secret):
    token = Token.objects.create(user=staff_user).key
    by_token = Client(HTTP_AUTHORIZATION=f"Token {token}")
    assert by_token.post("/api/memory/maintenance/reindex").status_code == 403
    session = Client()
    session.force_login(staff_user)
    assert session.post("/api/memory/maintenance/reindex").status_code == 403


def test_outside_serve_there_is_no_secret_to_match():
    """A process that is not serving has no secret: even an empty header matches nothing."""
    assert serve_link._secret is None
    assert not serve_link.secret_matches("")
    assert not serve_link.secret_matches(None)


def test_bad_options_and_unknown_operations_are_french_4xx(serving_secret):
    client = Client()
    bad = client.post(
        "/api/memory/maintenance/reindex",
        {"batch_size": 0},
        content_type="application/json",
        headers={SECRET_HEADER: SECRET},
    )
    assert bad.status_code == 400
    assert set(bad.json()["extra"]["fields"]) == {"batch_size"}
    typo = client.post(
        "/api/memory/maintenance/doctor",
        {"fixe": True},
        content_type="application/json",
        headers={SECRET_HEADER: SECRET},
    )
    assert typo.status_code == 400, typo.content
    unknown = client.post("/api/memory/maintenance/vider-tout", headers={SECRET_HEADER: SECRET})
    assert unknown.status_code == 404
    assert unknown.json()["message"] == "Opération de maintenance inconnue : vider-tout."
    missing = client.get("/api/memory/maintenance/runs/inconnu", headers={SECRET_HEADER: SECRET})
    assert missing.status_code == 404
