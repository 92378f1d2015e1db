"""A yes-or-no of the API is JSON true or false (or the words "true" / "false" / "1" / "0"
of a query string or a form): DRF's BooleanField also read "yes", "on" and the JSON
numbers 1 and 0, so `"memory_excluded": "yes"` stored a message excluded where "maybe"
was refused."""

from __future__ import annotations

import pytest

from memory.api.fields import BOOLEAN_EXPECTED
from memory.models import MemorySettings, Message

pytestmark = pytest.mark.django_db


def _message_posted(agent_api, excluded):
    """POST /messages of one message, its ``memory_excluded`` as given, in a JSON body."""
    return agent_api.post(
        "/api/memory/messages",
        {"channel": "whatsapp", "content": "Bonjour", "memory_excluded": excluded},
        format="json",
    )


@pytest.mark.parametrize("value", ["yes", "on", "oui", "2", 1, 0])
def test_a_message_flag_that_is_not_a_boolean_is_refused(agent_api, value):
    response = _message_posted(agent_api, value)

    assert response.status_code == 400, response.content
    assert response.json()["extra"]["fields"]["memory_excluded"] == [BOOLEAN_EXPECTED]
    assert not Message.all_objects.exists()


@pytest.mark.parametrize("value", ["yes", "off", 1])
def test_a_setting_that_is_not_a_boolean_is_refused(owner_api, value):
    response = owner_api.patch(
        "/api/memory/settings", {"auto_retrieve_enabled": value}, format="json"
    )

    assert response.status_code == 400, response.content
    assert response.json()["extra"]["fields"]["auto_retrieve_enabled"] == [BOOLEAN_EXPECTED]
    assert MemorySettings.load().auto_retrieve_enabled is True


def test_a_query_flag_that_is_not_a_boolean_is_refused(owner_api):
    response = owner_api.get("/api/memory/facts?include_forgotten=yes")

    assert response.status_code == 400, response.content
    assert response.json()["extra"]["fields"]["include_forgotten"] == [BOOLEAN_EXPECTED]


@pytest.mark.parametrize("value", [True, False])
def test_json_booleans_still_pass(agent_api, value):
    response = _message_posted(agent_api, value)

    assert response.status_code == 201, response.content
    assert Message.all_objects.get().memory_excluded is value


@pytest.mark.parametrize("value", ["true", "false", "1"])
def test_a_json_body_says_a_boolean_as_a_boolean(agent_api, value):
    """QA: in a JSON body the text « true » or « 1 » passed where the number 1 did not: a
    JSON body has its own true and false; the words are a query string's and a form's."""
    response = _message_posted(agent_api, value)

    assert response.status_code == 400, response.content
    assert response.json()["extra"]["fields"]["memory_excluded"] == [BOOLEAN_EXPECTED]


@pytest.mark.parametrize("value", ["true", "False", "1", "0", "TRUE"])
def test_a_query_strings_words_still_pass(owner_api, value):
    assert owner_api.get(f"/api/memory/facts?include_forgotten={value}").status_code == 200


def test_a_form_checkbox_still_passes(owner_api):
    response = owner_api.patch(
        "/api/memory/settings",
        "auto_retrieve_enabled=false",
        content_type="application/x-www-form-urlencoded",
    )

    assert response.status_code == 200, response.content
    assert MemorySettings.load().auto_retrieve_enabled is False


@pytest.mark.parametrize("value", ["yes", "on", 1, "oui"])
def test_a_channels_observed_switch_that_is_not_a_boolean_is_refused(owner_api, value):
    """QA and review: PUT /channels/<c> took « yes » and 1 (its serializer was a plain
    ModelSerializer): the switch that silences the agent in a room."""
    from memory.models import ChannelSettings

    response = owner_api.put("/api/v1/memory/channels/whatsapp", {"observed": value}, format="json")

    assert response.status_code == 400, response.content
    assert response.json()["extra"]["fields"]["observed"] == [BOOLEAN_EXPECTED]
    assert not ChannelSettings.objects.filter(observed=True).exists()


def test_no_serializer_of_the_api_reads_a_loose_boolean():
    """Every yes-or-no a client writes, on every input serializer of the API, is strict."""
    from rest_framework import serializers

    from memory.api.fields import StrictBooleanField
    from tests.memory.api.input_fields import input_fields, input_serializer_count

    loose = [
        name
        for name, field in input_fields()
        if isinstance(field, serializers.BooleanField) and not isinstance(field, StrictBooleanField)
    ]
    assert loose == [], loose
    assert input_serializer_count() > 10  # the input serializers were read


def test_an_empty_form_value_is_no_false(owner_api):
    """QA: a form's `dry_run=` (empty) was read as false, and the forget was real."""
    from memory.models import Fact
    from memory.services.facts import fact_store

    fact_store(key="velo", value="Le vélo turquoise")

    response = owner_api.post(
        "/api/v1/memory/forget",
        "topic=vélo turquoise&dry_run=",
        content_type="application/x-www-form-urlencoded",
    )
    listed = owner_api.get("/api/v1/memory/facts?include_expired=")

    assert response.status_code == 400, response.content
    assert response.json()["extra"]["fields"]["dry_run"] == [BOOLEAN_EXPECTED]
    assert Fact.objects.filter(key="velo", forgotten=False).exists()
    assert listed.status_code == 400, listed.content
