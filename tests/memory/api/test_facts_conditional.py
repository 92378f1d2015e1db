"""GET/PATCH/DELETE /facts/<key> with HTTP conditional requests (RFC 9110): ETag, If-Match, 412.

QA: a client that read a fact, then PATCHed it after the agent (or another tab) changed
it, silently overwrote that change; only the /memory page's form carried the fact's
version. The API now sends the version as an ETag and refuses a write made on a stale one
(If-Match) with 412, the check made by the service under the fact's lock.
"""

from __future__ import annotations

import pytest

from memory.api.conditional import IF_MATCH_MALFORMED_MESSAGE
from memory.models import Actor, Fact, FactRevision
from memory.services.fact_revisions import FACT_CHANGED_FORGET_MESSAGE, FACT_CHANGED_MESSAGE
from memory.services.facts import fact_store, fact_update

pytestmark = pytest.mark.django_db

FACTS = "/api/memory/facts"
CITY = f"{FACTS}/ville"


@pytest.fixture
def ville():
    fact, _ = fact_store(key="ville", value="Lyon", subjects=["paul"], actor=Actor.USER)
    return fact


def _tag(response) -> str:
    tag = response.headers.get("ETag")
    assert tag, dict(response.headers)
    return tag


def _agent_writes(fact: Fact) -> None:
    """The agent's write through the service, as the digest or a tool makes it."""
    fact_update(fact=Fact.objects.get(pk=fact.pk), actor=Actor.AGENT, subjects=["lyon"])


def _state(key: str = "ville") -> tuple:
    fact = Fact.all_objects.get(key=key)
    return fact.value, fact.forgotten, fact.subjects, FactRevision.objects.filter(fact=fact).count()


def test_get_sends_a_strong_etag_and_the_version(owner_api, ville):
    response = owner_api.get(CITY)

    assert response.status_code == 200
    tag = _tag(response)
    assert tag.startswith('"') and tag.endswith('"') and not tag.startswith("W/")
    assert response.json()["version"] == tag[1:-1]
    assert _tag(owner_api.get(CITY)) == tag  # stable while nothing changes


def test_the_etag_changes_when_the_fact_changes(owner_api, ville):
    before = _tag(owner_api.get(CITY))
    _agent_writes(ville)
    assert _tag(owner_api.get(CITY)) != before


def test_patch_with_the_current_tag_is_taken_and_answers_the_new_tag(owner_api, ville):
    tag = _tag(owner_api.get(CITY))

    response = owner_api.patch(CITY, {"value": "Paris"}, format="json", HTTP_IF_MATCH=tag)

    assert response.status_code == 200, response.content
    assert Fact.objects.get(key="ville").value == "Paris"
    new = _tag(response)
    assert new != tag
    assert new == _tag(owner_api.get(CITY))
    assert response.json()["version"] == new[1:-1]


def test_patch_with_a_stale_tag_is_412_and_writes_nothing(owner_api, ville):
    tag = _tag(owner_api.get(CITY))
    _agent_writes(ville)
    before = _state()

    response = owner_api.patch(CITY, {"value": "Paris"}, format="json", HTTP_IF_MATCH=tag)

    assert response.status_code == 412, response.content
    assert response.json() == {
        "message": FACT_CHANGED_MESSAGE.format(value="Lyon"),
        "extra": {},
    }
    assert "a changé" in response.json()["message"]
    assert _state() == before
    assert before[2] == ["paul", "lyon"]  # the agent's change stays


def test_the_check_is_made_under_the_lock_not_in_the_view(owner_api, ville, monkeypatch):
    """A write landing after the view read the fact and before the service locks it is
    seen: the version is compared by fact_update on the row it locks."""
    import memory.api.facts as facts_api

    read = facts_api.fact_or_404

    def read_then_the_agent_writes(key, *, actor):
        fact = read(key, actor=actor)
        _agent_writes(fact)  # lands between the view's read and the service's lock
        return fact

    tag = _tag(owner_api.get(CITY))
    monkeypatch.setattr(facts_api, "fact_or_404", read_then_the_agent_writes)

    response = owner_api.patch(CITY, {"value": "Paris"}, format="json", HTTP_IF_MATCH=tag)

    assert response.status_code == 412, response.content
    assert Fact.objects.get(key="ville").value == "Lyon"


def test_a_topic_forget_between_the_read_and_the_lock_is_seen(owner_api, ville, monkeypatch):
    """QA: a topic forget leaves the fact's version (its update moment) as it was, so an
    edit read before it was written onto the forgotten row and answered 200."""
    import memory.api.facts as facts_api
    from memory.services.forgetting import topic_forget

    read = facts_api.fact_or_404

    def read_then_a_forget(key, *, actor):
        fact = read(key, actor=actor)
        topic_forget(topic="Lyon", actor=Actor.USER)  # between the read and the lock
        return fact

    tag = _tag(owner_api.get(CITY))
    monkeypatch.setattr(facts_api, "fact_or_404", read_then_a_forget)

    response = owner_api.patch(CITY, {"value": "Paris"}, format="json", HTTP_IF_MATCH=tag)

    assert response.status_code == 412, response.content
    assert "oublié entre-temps" in response.json()["message"]
    assert "Lyon" not in response.json()["message"]
    assert Fact.all_objects.get(key="ville").value == "Lyon"


def test_a_list_of_tags_matches_when_one_is_current(owner_api, ville):
    tag = _tag(owner_api.get(CITY))
    header = f'"ancienne", W/{tag}, {tag}'

    response = owner_api.patch(CITY, {"value": "Paris"}, format="json", HTTP_IF_MATCH=header)

    assert response.status_code == 200, response.content
    assert Fact.objects.get(key="ville").value == "Paris"


def test_a_weak_tag_never_matches(owner_api, ville):
    tag = _tag(owner_api.get(CITY))

    response = owner_api.patch(CITY, {"value": "Paris"}, format="json", HTTP_IF_MATCH=f"W/{tag}")

    assert response.status_code == 412, response.content
    assert Fact.objects.get(key="ville").value == "Lyon"


def test_if_match_star_matches_any_existing_fact(owner_api, agent_api, ville):
    _agent_writes(ville)

    response = owner_api.patch(CITY, {"value": "Paris"}, format="json", HTTP_IF_MATCH="*")

    assert response.status_code == 200, response.content
    assert Fact.objects.get(key="ville").value == "Paris"
    missing = agent_api.patch(f"{FACTS}/nope", {"value": "x"}, format="json", HTTP_IF_MATCH="*")
    assert missing.status_code == 404


@pytest.mark.parametrize(
    "header",
    ["2026-01-01T10:00:00+00:00", '"sans fin', "W/", '"a" "b"', '"a",, b', "**", '"a", *'],
)
def test_a_malformed_if_match_is_a_400_in_french(owner_api, ville, header):
    before = _state()

    response = owner_api.patch(CITY, {"value": "Paris"}, format="json", HTTP_IF_MATCH=header)

    assert response.status_code == 400, response.content
    assert response.json() == {"message": IF_MATCH_MALFORMED_MESSAGE, "extra": {}}
    assert _state() == before
    assert owner_api.delete(CITY, HTTP_IF_MATCH=header).status_code == 400
    assert _state() == before


def test_without_if_match_a_write_is_taken_as_before(owner_api, ville):
    _agent_writes(ville)

    response = owner_api.patch(CITY, {"value": "Paris"}, format="json")

    assert response.status_code == 200, response.content
    assert Fact.objects.get(key="ville").value == "Paris"
    assert owner_api.delete(CITY).status_code == 204
    assert Fact.all_objects.get(key="ville").forgotten


def test_the_agent_token_is_held_to_the_same_rule(agent_api, ville):
    fact, _ = fact_store(key="velo", value="un vélo bleu", actor=Actor.AGENT)
    tag = _tag(agent_api.get(f"{FACTS}/velo"))
    fact_update(fact=fact, actor=Actor.USER, value="un vélo rouge")

    response = agent_api.patch(
        f"{FACTS}/velo", {"value": "un vélo vert"}, format="json", HTTP_IF_MATCH=tag
    )

    assert response.status_code == 412, response.content
    assert Fact.objects.get(key="velo").value == "un vélo rouge"


def test_post_answers_the_etag_of_the_fact_it_wrote(agent_api):
    response = agent_api.post(FACTS, {"key": "chat", "value": "un chat roux"}, format="json")

    assert response.status_code == 201
    assert _tag(response) == _tag(agent_api.get(f"{FACTS}/chat"))


def test_delete_with_the_current_tag_forgets(owner_api, ville):
    tag = _tag(owner_api.get(CITY))

    assert owner_api.delete(CITY, HTTP_IF_MATCH=tag).status_code == 204
    assert Fact.all_objects.get(key="ville").forgotten


def test_delete_with_a_stale_tag_is_412_and_forgets_nothing(owner_api, ville):
    tag = _tag(owner_api.get(CITY))
    _agent_writes(ville)
    before = _state()

    response = owner_api.delete(CITY, HTTP_IF_MATCH=tag)

    assert response.status_code == 412, response.content
    assert response.json() == {
        "message": FACT_CHANGED_FORGET_MESSAGE.format(value="Lyon"),
        "extra": {},
    }
    assert _state() == before
    assert before[1] is False


def test_the_schema_documents_the_etag_if_match_and_412(agent_api):
    schema = agent_api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    fact = schema["paths"]["/api/v1/memory/facts/{key}"]
    for method in ("patch", "delete"):
        assert "412" in fact[method]["responses"]
        assert "If-Match" in {p["name"] for p in fact[method]["parameters"]}
    assert "ETag" in fact["get"]["responses"]["200"]["headers"]
    assert "ETag" in fact["patch"]["responses"]["200"]["headers"]
    properties = schema["components"]["schemas"]["FactOutput"]["properties"]
    assert properties["version"]["readOnly"] is True


def test_head_sends_the_etag_too(owner_api, ville):
    response = owner_api.head(CITY)

    assert response.status_code == 200
    assert _tag(response) == _tag(owner_api.get(CITY))


def test_a_forget_already_made_stays_a_204_whatever_the_tag(owner_api, ville):
    tag = _tag(owner_api.get(CITY))
    assert owner_api.delete(CITY).status_code == 204
    before = _state()

    assert owner_api.delete(CITY, HTTP_IF_MATCH=tag).status_code == 204
    assert _state() == before


def test_a_patch_retried_after_its_answer_was_lost_is_no_conflict(owner_api, ville):
    """The same PATCH again with the If-Match it was sent with (the client lost the first
    answer): the fact holds what it asks, so it is answered as applied (RFC 9110 13.1.1),
    not 412 over its own change (QA 3)."""
    tag = _tag(owner_api.get(CITY))
    body = {"value": "Lyon, 69003"}
    first = owner_api.patch(CITY, body, format="json", HTTP_IF_MATCH=tag)
    assert first.status_code == 200

    again = owner_api.patch(CITY, body, format="json", HTTP_IF_MATCH=tag)

    assert again.status_code == 200, again.json()
    assert again.json()["value"] == "Lyon, 69003"
    assert FactRevision.objects.filter(fact=ville).count() == 2  # created, edited once


def test_a_stale_patch_of_another_value_is_still_refused(owner_api, ville):
    tag = _tag(owner_api.get(CITY))
    owner_api.patch(CITY, {"value": "Lyon, 69003"}, format="json", HTTP_IF_MATCH=tag)

    stale = owner_api.patch(CITY, {"value": "Lyon 7e"}, format="json", HTTP_IF_MATCH=tag)

    assert stale.status_code == 412
    assert Fact.objects.get(pk=ville.pk).value == "Lyon, 69003"


def test_an_expired_fact_is_brought_back_by_a_patch_with_its_tag_as_without(owner_api, ville):
    """QA 4: the « same edit twice » shortcut answered it as applied, still expired (the
    next purge took it); without If-Match the same write brought it back."""
    from datetime import timedelta

    from django.utils import timezone

    Fact.all_objects.filter(pk=ville.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    tag = _tag(owner_api.get(CITY))

    response = owner_api.patch(CITY, {"value": "Lyon"}, format="json", HTTP_IF_MATCH=tag)

    assert response.status_code == 200
    assert not Fact.all_objects.get(pk=ville.pk).is_expired


def test_the_same_patch_with_a_duration_retried_with_its_tag_is_taken(owner_api, ville):
    """QA 9b: a PATCH with a TTL, retried with its If-Match after a lost answer, was a 412
    (a duration counts from now, so the row never « held » it)."""
    tag = _tag(owner_api.get(CITY))
    body = {"value": "Paris", "ttl": "7d"}

    first = owner_api.patch(CITY, body, format="json", HTTP_IF_MATCH=tag)
    again = owner_api.patch(CITY, body, format="json", HTTP_IF_MATCH=tag)

    assert first.status_code == 200, first.content
    assert again.status_code == 200, again.content
    assert again.headers["ETag"] == first.headers["ETag"]
