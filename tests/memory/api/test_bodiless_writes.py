"""A write that reads no body refuses one, as every other write refuses an unknown field.

Black-box QA: `POST /facts/<key>/erase` with `{"dry_run": true, "confirm": false}` erased
the fact for good, and `POST /forgettings/<id>/erase` with `{"dry_run": true}` erased a
whole topic forget; restores ran whatever their body said. A client believing it asked
for a preview lost the owner's data, with no way back."""

from __future__ import annotations

import pytest
from django.urls import get_resolver
from rest_framework.views import APIView

from memory.api.serializers import UNKNOWN_FIELD_MESSAGE
from memory.models import Actor, Fact, Forgetting
from memory.services.facts import fact_forget, fact_store
from memory.services.forgetting import topic_forget

pytestmark = pytest.mark.django_db


def _forgotten_topic() -> Forgetting:
    fact_store(key="banque", value="Mon conseiller à la banque est M. Rami")
    return Forgetting.objects.get(pk=topic_forget(topic="banque", actor=Actor.USER).forgetting_id)


def _refused(response, *names: str) -> None:
    assert response.status_code == 400, response.content
    fields = response.json()["extra"]["fields"]
    assert fields == {name: [UNKNOWN_FIELD_MESSAGE] for name in names}, fields


def test_a_fact_erase_with_a_body_erases_nothing(owner_api):
    fact, _ = fact_store(key="jetable", value="à effacer")
    fact_forget(fact=fact, actor=Actor.USER)

    response = owner_api.post(
        "/api/v1/memory/facts/jetable/erase", {"dry_run": True, "confirm": False}, format="json"
    )

    _refused(response, "confirm", "dry_run")
    assert Fact.all_objects.filter(pk=fact.pk).exists()


def test_a_forgetting_erase_with_a_body_erases_nothing(owner_api):
    forgetting = _forgotten_topic()

    response = owner_api.post(
        f"/api/v1/memory/forgettings/{forgetting.pk}/erase", {"dry_run": True}, format="json"
    )

    _refused(response, "dry_run")
    forgetting.refresh_from_db()
    assert forgetting.state != "purged"


def test_restores_with_a_body_restore_nothing(owner_api):
    forgetting = _forgotten_topic()
    fact, _ = fact_store(key="velo", value="Le vélo est gris")
    fact_forget(fact=fact, actor=Actor.USER)

    _refused(
        owner_api.post(
            f"/api/v1/memory/forgettings/{forgetting.pk}/restore", {"x": 1}, format="json"
        ),
        "x",
    )
    _refused(
        owner_api.post("/api/v1/memory/facts/velo/restore", {"bogus": 1}, format="json"), "bogus"
    )

    forgetting.refresh_from_db()
    assert forgetting.state != "restored"
    assert Fact.all_objects.get(pk=fact.pk).forgotten


def test_a_forget_by_delete_with_a_body_forgets_nothing(owner_api):
    fact_store(key="velo", value="Le vélo est gris")

    _refused(owner_api.delete("/api/v1/memory/facts/velo", {"hard": True}, format="json"), "hard")

    assert Fact.objects.filter(key="velo", forgotten=False).exists()


@pytest.mark.parametrize("body", [[1], [], False, 0, ""])
def test_a_body_that_is_no_object_is_refused_in_french(owner_api, body):
    fact, _ = fact_store(key="jetable", value="à effacer")
    fact_forget(fact=fact, actor=Actor.USER)

    response = owner_api.post("/api/v1/memory/facts/jetable/erase", body, format="json")

    assert response.status_code == 400, response.content
    assert "ne lit aucun corps" in response.content.decode(), response.content
    assert Fact.all_objects.filter(pk=fact.pk).exists()


def test_an_empty_body_still_does_the_write(owner_api):
    fact, _ = fact_store(key="velo", value="Le vélo est gris")
    fact_forget(fact=fact, actor=Actor.USER)

    assert owner_api.post("/api/v1/memory/facts/velo/restore", {}, format="json").status_code == 200
    assert owner_api.post("/api/v1/memory/facts/velo/restore").status_code == 200
    assert owner_api.delete("/api/v1/memory/facts/velo").status_code == 204


def _write_handlers():
    def walk(patterns, prefix=""):
        for pattern in patterns:
            if hasattr(pattern, "url_patterns"):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            else:
                yield prefix + str(pattern.pattern), pattern.callback

    for route, callback in walk(get_resolver().url_patterns):
        view = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
        if route.startswith("api/v1/") and view is not None and issubclass(view, APIView):
            for method in ("post", "put", "patch", "delete"):
                if hasattr(view, method):
                    yield route, method


WRITE_HANDLERS = sorted(set(_write_handlers()))


def test_the_walk_finds_the_writes_without_a_body():
    assert ("api/v1/memory/facts/<str:key>/erase", "post") in WRITE_HANDLERS
    assert len(WRITE_HANDLERS) >= 15


@pytest.mark.parametrize(("route", "method"), WRITE_HANDLERS)
def test_every_write_refuses_a_body_field_it_does_not_read(owner_api, monkeypatch, route, method):
    """Whatever the write, an unknown body field is a 400 naming it, before anything is
    looked up or done (a bodiless write read no body at all). The maintenance channel
    is opened by serve's local secret."""
    from memory.services import serve_link

    monkeypatch.setattr(serve_link, "_secret", "un-secret-de-test-assez-long")
    fact_store(key="velo", value="Le vélo est gris")
    url = "/" + (
        route.replace("<str:key>", "velo")
        .replace("<int:forgetting_id>", "1")
        .replace("<str:channel>", "whatsapp")
        .replace("<str:operation>", "reindex")
    )

    response = getattr(owner_api, method)(
        url,
        {"zz_champ_inconnu": 1},
        format="json",
        headers={serve_link.SECRET_HEADER: "un-secret-de-test-assez-long"},
    )

    assert response.status_code == 400, (url, response.content)
    assert "zz_champ_inconnu" in response.json()["extra"]["fields"], response.content
