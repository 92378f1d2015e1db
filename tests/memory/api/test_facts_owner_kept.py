"""The agent's token writing a value the owner set is told the owner's value stays.

The owner's value always won, but the API answered the agent's PATCH or POST 200 with
the fact as if its write had gone through: an agent reading only the status would tell
the owner its value was noted. The API answers as the MCP ``remember`` tool and our
agent's ``memory__store_fact`` do (memory.services.fact_ownership.owner_kept_answer).
"""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact
from memory.services.fact_ownership import OWNER_KEPT_MESSAGE
from memory.services.facts import fact_store

pytestmark = pytest.mark.django_db

FACTS = "/api/v1/memory/facts"
OWNERS_JOB = "Ingénieur logiciel chez Makilab"


@pytest.fixture
def owners_job():
    fact, _ = fact_store(key="user_job", value=OWNERS_JOB, actor=Actor.USER)
    return fact


def _assert_owner_kept(response) -> None:
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["owner_kept"] is True
    assert body["message"] == OWNER_KEPT_MESSAGE.format(key="user_job", value=OWNERS_JOB)
    assert body["value"] == OWNERS_JOB
    assert Fact.objects.get(key="user_job").value == OWNERS_JOB


def test_the_agents_patch_of_the_owners_value_says_it_was_not_applied(agent_api, owners_job):
    response = agent_api.patch(
        f"{FACTS}/user_job", {"value": "Stagiaire chez Makilab"}, format="json"
    )

    _assert_owner_kept(response)


def test_the_agents_post_restating_the_owners_key_says_it_was_not_applied(agent_api, owners_job):
    response = agent_api.post(
        FACTS, {"key": "user_job", "value": "Stagiaire chez Makilab"}, format="json"
    )

    _assert_owner_kept(response)


def test_the_agent_restating_the_owners_own_value_is_no_conflict(agent_api, owners_job):
    response = agent_api.patch(f"{FACTS}/user_job", {"value": OWNERS_JOB}, format="json")

    assert response.status_code == 200
    assert "owner_kept" not in response.json()


def test_a_patch_without_a_value_is_no_conflict(agent_api, owners_job):
    response = agent_api.patch(f"{FACTS}/user_job", {"subjects": ["travail"]}, format="json")

    assert response.status_code == 200
    assert "owner_kept" not in response.json()
    assert response.json()["subjects"] == ["travail"]


def test_the_owner_changing_their_own_value_is_no_conflict(owner_api, owners_job):
    response = owner_api.patch(
        f"{FACTS}/user_job", {"value": "Architecte chez Makilab"}, format="json"
    )

    assert response.status_code == 200
    assert "owner_kept" not in response.json()
    assert Fact.objects.get(key="user_job").value == "Architecte chez Makilab"


def test_a_value_the_owner_never_set_is_applied_as_before(agent_api):
    fact_store(key="user_city", value="Lyon", actor=Actor.AGENT)
    response = agent_api.patch(f"{FACTS}/user_city", {"value": "Bordeaux"}, format="json")

    assert response.status_code == 200
    assert "owner_kept" not in response.json()
    assert Fact.objects.get(key="user_city").value == "Bordeaux"


def test_the_schema_documents_the_owner_kept_answer(owner_api):
    schema = owner_api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    facts = schema["paths"]["/api/v1/memory/facts"]["post"]["responses"]["200"]
    fact = schema["paths"]["/api/v1/memory/facts/{key}"]["patch"]["responses"]["200"]

    for response in (facts, fact):
        ref = response["content"]["application/json"]["schema"]["$ref"]
        component = schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]
        assert {"owner_kept", "message"} <= set(component["properties"])
        assert not {"owner_kept", "message"} & set(component.get("required", []))


@pytest.mark.parametrize(
    "key",
    [
        "User_Job",
        "USER_JOB",
        "user_job ",
        "\uff35\uff33\uff25\uff32_\uff2a\uff2f\uff22",  # fullwidth letters
        "user job",
        "user-job",
        "User Job",
        "user__job",
        "user - job",
    ],
)
def test_the_agent_restating_the_owners_key_in_other_letters_meets_the_owners_value(
    agent_api, owners_job, key
):
    """Keys were matched letter for letter: the agent's "User_Job" started a second fact
    beside the owner's, and both went into the prompt. The agent's key is the owner's fact
    whatever its letter case, its letters' width, or the separators between its words
    (the prompt shows "user_job" as "user job"), and the owner's value stays."""
    response = agent_api.post(FACTS, {"key": key, "value": "Stagiaire chez Makilab"}, format="json")

    _assert_owner_kept(response)
    assert Fact.objects.count() == 1


@pytest.mark.parametrize(
    "key",
    ["user\u200bjob", "\u2060user_job", "user_job\ufeff", "user\u202ejob", "user\u0085job"],
    ids=["zero-width-space", "word-joiner", "byte-order-mark", "bidi-override", "next-line"],
)
def test_a_key_with_an_invisible_character_is_refused_in_french(agent_api, owners_job, key):
    """A key holding a zero-width or control character looked exactly like the owner's
    on the pages and in the prompt, and held the agent's value beside it."""
    response = agent_api.post(FACTS, {"key": key, "value": "Stagiaire chez Makilab"}, format="json")

    assert response.status_code == 400, response.content
    assert "invisible" in response.content.decode()
    assert Fact.objects.count() == 1


def test_the_agents_patch_of_fields_the_owner_set_says_they_were_not_applied(agent_api):
    """The owner set the importance and the type; the agent's PATCH of both answered a
    bare 200, as if applied (black-box QA): it now says what the owner's are."""
    from memory.services.facts import fact_update

    fact, _ = fact_store(key="chien", value="Le chien s'appelle Rex", actor=Actor.AGENT)
    fact_update(fact=fact, actor=Actor.USER, importance=0.8, memory_type="event")

    response = agent_api.patch(
        f"{FACTS}/chien", {"importance": 0.2, "memory_type": "fact"}, format="json"
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["owner_kept"] is True
    assert body["message"] == (
        "Fixé par le propriétaire, conservé pour chien : importance 0,8 ; "
        "type « Événement ». Votre changement n'a pas été enregistré."
    )
    assert (body["importance"], body["memory_type"]) == (0.8, "event")


def test_the_agents_patch_of_fields_the_owner_never_set_is_applied_without_a_word(agent_api):
    fact_store(key="chat", value="Le chat s'appelle Tom", actor=Actor.AGENT)

    response = agent_api.patch(f"{FACTS}/chat", {"importance": 0.2}, format="json")

    assert response.status_code == 200
    assert "owner_kept" not in response.json() and response.json()["importance"] == 0.2


def test_the_owners_importance_restated_within_float_noise_is_no_conflict(agent_api):
    from memory.services.facts import fact_update

    fact, _ = fact_store(key="poisson", value="Le poisson s'appelle Bulle", actor=Actor.AGENT)
    fact_update(fact=fact, actor=Actor.USER, importance=0.3)

    response = agent_api.patch(
        f"{FACTS}/poisson", {"importance": 0.30000000000000004}, format="json"
    )

    assert response.status_code == 200
    assert "owner_kept" not in response.json()


@pytest.mark.parametrize(
    "key",
    ["user_job\ufe0f", "user\u034fjob", "user_job\u3164", "user\u2800job", "user\u00a0job"],
    ids=["variation-selector", "grapheme-joiner", "hangul-filler", "blank-braille", "nbsp"],
)
def test_a_key_with_a_look_alike_blank_is_refused_too(agent_api, owners_job, key):
    response = agent_api.post(FACTS, {"key": key, "value": "Stagiaire chez Makilab"}, format="json")

    assert response.status_code == 400, response.content
    assert Fact.objects.count() == 1


@pytest.mark.parametrize(
    "key",
    [
        "famille_👨\u200d👩\u200d👧",
        "coeur_❤\ufe0f",
        "drapeau_🏴\U000e0067\U000e0062\U000e007f",
        "نامه\u200cها",
    ],
    ids=["family-emoji", "heart-emoji", "flag-tags", "persian-zwnj"],
)
def test_a_key_with_an_emoji_sequence_or_a_persian_joiner_is_taken(agent_api, key):
    response = agent_api.post(FACTS, {"key": key, "value": "Une valeur"}, format="json")

    assert response.status_code == 201, response.content
    assert Fact.objects.get().key == key


@pytest.fixture
def owners_school():
    fact, _ = fact_store(key="école_des_enfants", value="École Jules Ferry", actor=Actor.USER)
    return fact


@pytest.mark.parametrize(
    "key",
    [
        "École_des_enfants",
        "ÉCOLE_DES_ENFANTS",
        "e\u0301cole_des_enfants",
        "E\u0301cole_des_enfants",
        "ecole_des_enfants",
        "Ecole des enfants",
    ],
    ids=[
        "capital-accented",
        "all-capitals",
        "decomposed",
        "capital-decomposed",
        "extraction-ascii",
        "unaccented-spaced",
    ],
)
def test_the_agents_key_in_other_accented_letters_or_composed_otherwise_is_the_owners(
    agent_api, owners_school, key
):
    """Only ASCII letters were folded: the agent's « École_des_enfants » (or the same key
    with its accent typed apart, which looks exactly alike) started a second fact beside
    the owner's « école_des_enfants », and both went into the prompt."""
    response = agent_api.post(FACTS, {"key": key, "value": "École Victor Hugo"}, format="json")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["owner_kept"] is True
    assert body["key"] == "école_des_enfants"
    assert Fact.objects.count() == 1
    assert Fact.objects.get().value == "École Jules Ferry"


def test_a_key_with_its_accent_typed_apart_is_stored_composed(owner_api):
    """The owner's key typed with a combining accent is the key a composed « é » reads:
    found again by either spelling (the page's link, the agent's restatement)."""
    response = owner_api.post(
        FACTS, {"key": "cafe\u0301_pre\u0301fe\u0301re\u0301", "value": "Le Procope"}, format="json"
    )

    assert response.status_code == 201, response.content
    assert Fact.objects.get().key == "café_préféré"
    assert owner_api.get(f"{FACTS}/cafe\u0301_pre\u0301fe\u0301re\u0301").status_code == 200
    assert owner_api.get(f"{FACTS}/café_préféré").status_code == 200


def test_the_agents_plain_key_meets_a_stored_key_in_wide_letters():
    """The fold works both ways: a key stored in wide letters is met by the agent's ASCII."""
    from memory.services.fact_keys import key_as_stored

    wide = "\uff35\uff33\uff25\uff32_\uff2a\uff2f\uff22"
    fact_store(key=wide, value="v", actor=Actor.USER)

    assert key_as_stored("user_job", Actor.AGENT) == wide
    assert key_as_stored("user_job", Actor.USER) == "user_job"  # the owner's keys are exact


@pytest.mark.parametrize("key", ["ecole_des_enfants", "École_des_enfants", "ECOLE DES ENFANTS"])
def test_the_agent_reads_edits_and_forgets_by_the_key_its_statements_fold_onto(
    agent_api, owner_api, owners_school, key
):
    """The agent's POST of « ecole_des_enfants » met the owner's « école_des_enfants »
    (owner_kept), and then its GET, PATCH, history and DELETE of that same key answered 404:
    the key the agent writes under is the key it reads under (fact_keys.key_as_stored)."""
    read = agent_api.get(f"{FACTS}/{key}")
    assert read.status_code == 200, read.content
    assert read.json()["key"] == "école_des_enfants"
    assert agent_api.get(f"{FACTS}/{key}/revisions").status_code == 200

    patched = agent_api.patch(f"{FACTS}/{key}", {"value": "École Victor Hugo"}, format="json")
    assert patched.status_code == 200, patched.content
    assert patched.json()["owner_kept"] is True
    assert Fact.objects.get().value == "École Jules Ferry"

    assert agent_api.delete(f"{FACTS}/{key}").status_code == 204
    assert Fact.all_objects.get().forgotten
    # Forgotten, it is a key never stored to the agent, in any spelling.
    assert agent_api.get(f"{FACTS}/{key}").status_code == 404


def test_the_owners_keys_are_read_as_typed(owner_api, owners_school):
    """The fold is the agent's rule (its statements): the owner may keep « Ecole » and
    « école » apart, and reads each by its own key."""
    assert owner_api.get(f"{FACTS}/ecole_des_enfants").status_code == 404
    assert owner_api.get(f"{FACTS}/école_des_enfants").status_code == 200
