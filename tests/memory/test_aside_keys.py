"""The key a forget sets a fact aside under ("<key> (oubli n° N)", "<key> (fait oublié
n° N)", memory.services.forgetting_restated) is the forget's alone: no writer may choose
it (the key rule, memory.models.validate_fact_key), and a fact that keeps one (restored
beside a newer fact under its key) is edited, renamed, exported and imported back.

Audit 9: the agent's token wrote a fact under the key the owner's fact waited under; the
owner's undo then gave the owner's fact that key instead of its own and deleted the
agent's fact silently.
"""

from __future__ import annotations

import json
from html import unescape

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from memory.models import FACT_KEY_RESERVED_MESSAGE, Actor, Fact, validate_fact_key
from memory.services.facts import fact_forget, fact_restore, fact_store, fact_update
from memory.services.forgetting import forgetting_restore, topic_forget
from memory.services.forgetting_restated import ASIDE_KEY, FACT_ASIDE_KEY, aside_key
from memory.services.portability import export_lines
from memory.services.portability_import import ImportLineError, memory_import_lines
from tests.memory.test_admin import _fact_form

pytestmark = pytest.mark.django_db

FACTS = "/api/v1/memory/facts"
RESERVED = "finit comme celle d'un fait mis de côté par un oubli"


def test_an_agent_write_under_a_reserved_aside_key_does_not_keep_the_owner_from_its_key(
    agent_api, owner_api
):
    fact_store(key="voyage_ete", value="Voyage à Zanzibar en août", actor="user")
    forgot = agent_api.post("/api/v1/memory/forget", {"topic": "Zanzibar"}, format="json")
    assert forgot.status_code == 201, forgot.content
    forgetting_id = forgot.json()["id"]
    # The agent states the key again (normal), and tries the key the owner's fact waits under.
    agent_api.post(FACTS, {"key": "voyage_ete", "value": "Pas de voyage"}, format="json")
    reserved = agent_api.post(
        FACTS, {"key": f"voyage_ete (oubli n° {forgetting_id})", "value": "x"}, format="json"
    )
    assert reserved.status_code == 400, reserved.content
    assert RESERVED in reserved.json()["extra"]["fields"]["key"][0]

    undo = owner_api.post(f"/api/v1/memory/forgettings/{forgetting_id}/restore")
    assert undo.status_code == 200, undo.content

    # The owner's fact is back under its own key, with the owner's words.
    assert Fact.objects.get(key="voyage_ete").value == "Voyage à Zanzibar en août"
    assert list(Fact.all_objects.values_list("key", flat=True)) == ["voyage_ete"]


@pytest.mark.parametrize("template", [ASIDE_KEY, FACT_ASIDE_KEY])
def test_every_key_a_forget_sets_aside_is_refused_to_every_writer_in_french(template):
    """The rule of the model: the API, the forms, the admin, the tools, MCP, the extraction
    and the import all apply it (fact_store checks a new fact with it)."""
    key = aside_key("velo", 12, template)

    with pytest.raises(ValidationError) as refused:
        validate_fact_key(key)
    assert refused.value.messages == [FACT_KEY_RESERVED_MESSAGE.format(key=key)]
    with pytest.raises(ValidationError, match=RESERVED):
        fact_store(key=key, value="Vélo rouge", actor=Actor.AGENT)
    assert not Fact.all_objects.exists()
    # Only the end of a key is reserved, and only that form.
    for free in ("velo (oubli n° 12) bis", "oubli n° 12", "velo (oubli)", "taux_oubli_n_2"):
        validate_fact_key(free)


@pytest.mark.parametrize(
    "key",
    [
        "allergie \uff08fait oublié n° 10\uff09",
        "allergie (fait oublie n° 10)",
        "allergie (FAIT OUBLIÉ N° 10)",
        "ab\uff08oubli n° 3\uff09",
        "allergie (fait  oublié n°10)",
    ],
    ids=["wide-parentheses", "unaccented", "capitals", "wide-short", "spaced-otherwise"],
)
def test_a_reserved_key_that_only_looks_alike_is_refused_too(agent_api, key):
    """Black-box QA: « allergie （fait oublié n° 10） » (wide parentheses) or without its
    accent passed the rule, then folded onto the fact set aside under the real key: two
    live facts the agent's statements fold onto alike once the owner restored it."""
    response = agent_api.post(FACTS, {"key": key, "value": "x"}, format="json")

    assert response.status_code == 400, response.content
    assert RESERVED in response.json()["extra"]["fields"]["key"][0]
    assert not Fact.all_objects.exists()


def test_the_owner_is_refused_a_reserved_key_by_the_api_the_dashboard_and_the_admin(
    owner_api, staff_client
):
    key = "velo (oubli n° 3)"

    response = owner_api.post(FACTS, {"key": key, "value": "v"}, format="json")
    assert response.status_code == 400 and RESERVED in response.json()["extra"]["fields"]["key"][0]
    response = staff_client.post("/memory/facts/", {"key": key, "value": "v"})
    assert response.status_code == 422 and RESERVED in unescape(response.content.decode())
    new = Fact(key=key, value="v", memory_type="fact", importance=0.5, source="manual")
    response = staff_client.post(reverse("admin:memory_fact_add"), _fact_form(new))
    assert response.status_code == 200 and RESERVED in unescape(response.content.decode())
    assert not Fact.all_objects.exists()


@pytest.fixture(params=["topic_forget", "forgotten_alone"])
def kept_aside(request) -> Fact:
    """A fact restored beside a newer fact under its key: it keeps the key it waited under."""
    if request.param == "topic_forget":
        fact_store(key="voyage_ete", value="Voyage à Zanzibar en août", actor="user")
        forgetting_id = topic_forget(topic="Zanzibar", actor=Actor.AGENT).forgetting_id
        fact_store(key="voyage_ete", value="Voyage au Japon", actor="user")
        forgetting_restore(forgetting_id=forgetting_id, actor=Actor.USER)
    else:
        fact, _ = fact_store(key="voyage_ete", value="Voyage à Zanzibar en août", actor="user")
        fact_forget(fact=fact, actor="user")
        fact_store(key="voyage_ete", value="Voyage au Japon", actor=Actor.AGENT)
        fact_restore(fact=Fact.all_objects.get(pk=fact.pk), actor=Actor.USER)
    kept = Fact.objects.exclude(key="voyage_ete").get()
    assert kept.key.startswith("voyage_ete (") and kept.value == "Voyage à Zanzibar en août"
    return kept


def test_a_fact_kept_under_an_aside_key_is_edited_and_renamed(kept_aside, staff_client):
    fact_update(fact=kept_aside, actor=Actor.USER, value="Voyage à Zanzibar en septembre")
    response = staff_client.post(
        reverse("admin:memory_fact_change", args=[kept_aside.pk]),
        _fact_form(Fact.objects.get(pk=kept_aside.pk), value="Voyage à Zanzibar en octobre"),
    )
    assert response.status_code == 302, unescape(response.content.decode())[:2000]
    assert Fact.objects.get(key=kept_aside.key).value == "Voyage à Zanzibar en octobre"

    fact_update(fact=Fact.objects.get(pk=kept_aside.pk), actor=Actor.USER, key="voyage_zanzibar")
    assert Fact.objects.get(pk=kept_aside.pk).key == "voyage_zanzibar"


def test_a_fact_kept_under_an_aside_key_is_exported_and_imported_back(kept_aside):
    lines = list(export_lines())
    rows = sorted(Fact.objects.values_list("key", "value"))

    again = memory_import_lines(lines)  # into the same memory: nothing to do
    assert again.created == {} and again.unchanged["fact"] == 2 and again.conflicts == []
    Fact.all_objects.all().delete()
    report = memory_import_lines(lines)  # into an empty one
    assert report.created["fact"] == 2 and report.conflicts == []
    assert sorted(Fact.objects.values_list("key", "value")) == rows

    # The rest of the key rule still applies to such a key.
    index = next(i for i, line in enumerate(lines) if kept_aside.key in line)
    record = json.loads(lines[index])
    Fact.all_objects.all().delete()
    broken = [
        *lines[:index],
        json.dumps(record | {"key": f"a/{record['key']}"}),
        *lines[index + 1 :],
    ]
    with pytest.raises(ImportLineError, match=rf"^ligne {index + 1} : champ « key » : La clé"):
        memory_import_lines(broken)


def test_a_key_stored_before_invisible_characters_were_refused_is_exported_and_imported_back():
    """Keys holding a zero-width or control character are refused since validate_fact_key
    checks for them; one this memory already holds still goes out in an export and comes
    back from it (what memory_export writes, memory_import reads)."""
    fact, _ = fact_store(key="ville", value="Nantes", actor=Actor.USER)
    Fact.all_objects.filter(pk=fact.pk).update(key="vi\u200blle")
    lines = list(export_lines())

    Fact.all_objects.all().delete()
    report = memory_import_lines(lines)

    assert report.created["fact"] == 1 and report.conflicts == []
    assert Fact.objects.get().key == "vi\u200blle"


def test_the_admin_edits_a_fact_whose_old_key_holds_an_invisible_character(staff_client):
    """The key, stored before invisible characters were refused, is kept as it is (its
    shape checked), as fact_update keeps it: the admin refused the edit (review)."""
    fact, _ = fact_store(key="ville", value="Nantes", actor=Actor.USER)
    Fact.all_objects.filter(pk=fact.pk).update(key="vi\u200blle")
    fact.refresh_from_db()

    response = staff_client.post(
        reverse("admin:memory_fact_change", args=[fact.pk]), _fact_form(fact, value="Rennes")
    )

    assert response.status_code == 302, unescape(response.content.decode())[:2000]
    assert Fact.objects.get(pk=fact.pk).value == "Rennes"


def test_a_key_typed_with_its_accent_apart_is_imported_composed():
    """An export from before keys were composed holds « e » and a combining accent: it
    comes back as the composed key every writer stores, and meets this memory's fact."""
    fact, _ = fact_store(key="école", value="Jules Ferry", actor=Actor.USER)
    Fact.all_objects.filter(pk=fact.pk).update(key="e\u0301cole")
    lines = list(export_lines())

    Fact.all_objects.all().delete()
    fact_store(key="école", value="Jules Ferry", actor=Actor.USER)
    report = memory_import_lines(lines)

    assert report.created.get("fact", 0) == 0 and report.conflicts == []
    assert list(Fact.objects.values_list("key", flat=True)) == ["école"]


def test_the_migration_composes_the_stored_keys_it_can():
    """Migration 0027: a key typed apart is composed, unless a fact holds that key."""
    from importlib import import_module

    from django.apps import apps

    migration = import_module("memory.migrations.0027_fact_keys_composed")
    alone, _ = fact_store(key="ete", value="v", actor=Actor.USER)
    fact_store(key="café", value="w", actor=Actor.USER)
    twin, _ = fact_store(key="twin", value="v", actor=Actor.USER)  # a look-alike is refused now
    Fact.all_objects.filter(pk=alone.pk).update(key="e\u0301te\u0301")
    Fact.all_objects.filter(pk=twin.pk).update(key="cafe\u0301")

    migration.keys_compose(apps, None)

    assert Fact.all_objects.get(pk=alone.pk).key == "été"
    assert Fact.all_objects.get(pk=twin.pk).key == "cafe\u0301"
    assert Fact.objects.filter(key="café").count() == 1


def test_a_twin_migration_0027_kept_goes_out_and_comes_back_and_is_edited_in_the_admin(
    staff_client,
):
    """0027 keeps a key typed apart when its composed twin is another fact's: the export
    holds both, and the import refused it (« apparaît deux fois »), the whole file; the
    admin refused an edit of its value (« déjà prise »). Review of the change."""
    from tests.memory.admin_forms import fact_admin_form

    fact_store(key="café", value="Le Procope", actor=Actor.USER)
    twin, _ = fact_store(key="twin", value="Le Flore", actor=Actor.USER)  # stored before 0027
    Fact.all_objects.filter(pk=twin.pk).update(key="cafe\u0301")

    response = staff_client.post(
        f"/admin/memory/fact/{twin.pk}/change/",
        fact_admin_form(key="cafe\u0301", value="Les Deux Magots"),
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    assert Fact.objects.get(pk=twin.pk).value == "Les Deux Magots"

    lines = list(export_lines())
    Fact.all_objects.all().delete()
    memory_import_lines(lines)
    assert sorted(Fact.objects.values_list("key", "value")) == [
        ("cafe\u0301", "Les Deux Magots"),
        ("café", "Le Procope"),
    ]


def test_a_look_alike_of_a_reserved_key_stored_before_the_rule_is_exported_and_imported_back():
    """Review: an export holding a key the look-alike rule now refuses (stored before it)
    could not be imported at all (all or nothing): it comes back under it, as an aside
    key or an invisible character kept from before does."""
    fact_store(key="velo", value="Le vélo est gris")
    legacy = "allergie \uff08fait oublié n° 10\uff09"
    Fact.objects.filter(key="velo").update(key=legacy)  # as stored before the rule
    lines = list(export_lines())
    Fact.all_objects.all().delete()

    memory_import_lines(lines)

    assert Fact.objects.get().key == legacy


@pytest.mark.parametrize("key", ["bad\x01key", "bad\tkey"])
def test_a_key_holding_a_control_character_is_told_so(key):
    """QA: « bad\\x01key » was refused for « / », « \\ », a line break, being empty or
    spaces around it: none of which it held."""
    from django.core.exceptions import ValidationError

    from memory.models import validate_fact_key

    with pytest.raises(ValidationError, match="caractère de contrôle"):
        validate_fact_key(key)
