"""Keys that differ by their symbols are different facts, to the agent too (QA).

The agent's key folds onto the fact whose key looks like it (fact_keys.key_as_stored):
case, accents, letters' width and the separators between words (fact_key_folded). The
fold dropped every character that is not a letter or a digit, so « niveau_c++ » and
« niveau_c# » were one key, every key of symbols alone (« 🎂 », « 💊 ») the empty one:
the agent's second statement overwrote an unrelated fact, its DELETE of a key never
stored forgot another, and the owner's new key was refused as a look-alike of a key it
shares nothing with.
"""

from __future__ import annotations

import pytest

from memory.models import Actor, ErasedMark, Fact, fact_key_folded
from memory.selectors import facts_active
from memory.services.erased_marks import fact_erased_since
from memory.services.erasing import fact_erase
from memory.services.fact_keys import key_as_stored

pytestmark = pytest.mark.django_db

FACTS = "/api/v1/memory/facts"


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (("niveau_c++", "Marie est experte en C++ (10 ans)"), ("niveau_c#", "Marie débute en C#")),
        (("🎂", "Anniversaire de Marie le 12 mars"), ("💊", "Prendre le Levothyrox le matin")),
        (("taux_%", "Taux d'épargne de 12 %"), ("taux_€", "Taux de change de l'euro")),
        ((":)", "Marie aime les smileys"), (":(", "Marie déteste les lundis")),
    ],
)
def test_the_agents_key_differing_by_its_symbols_is_another_fact(agent_api, first, second):
    for key, value in (first, second):
        answer = agent_api.post(FACTS, {"key": key, "value": value}, format="json")
        assert answer.status_code == 201, answer.content
        assert answer.json()["key"] == key
    assert set(facts_active().values_list("key", "value")) == {first, second}


def test_the_agents_delete_of_a_key_never_stored_forgets_nothing(agent_api):
    created = agent_api.post(FACTS, {"key": "note_++", "value": "Chez Lulu : bien"}, format="json")
    assert created.status_code == 201, created.content

    assert agent_api.delete(f"{FACTS}/note_--").status_code == 404
    assert not Fact.all_objects.get(key="note_++").forgotten


def test_the_owners_new_key_of_symbols_is_not_a_look_alike_of_another(owner_api):
    assert (
        owner_api.post(FACTS, {"key": "🎂", "value": "12 mars"}, format="json").status_code == 201
    )
    answer = owner_api.post(FACTS, {"key": "☕", "value": "Sans sucre"}, format="json")
    assert answer.status_code == 201, answer.content


@pytest.mark.parametrize(
    ("typed", "stored"),
    [
        ("User Job", "user_job"),
        ("user-job", "user_job"),
        ("L'Utilisateur", "l_utilisateur"),
        ("ＵＳＥＲ＿ＪＯＢ", "user_job"),
        ("École.x", "ecole_x"),
        ("Niveau C++", "niveau_c++"),
        ("prenom_soeur", "prénom_sœur"),  # QA: ligatures as the text fold has them
        ("Coeur De Metier", "cœur_de_métier"),
        ("CURRICULUM_VITAE", "curriculum_vitæ"),
    ],
)
def test_case_accents_width_and_separators_still_fold(typed, stored):
    """What the fold is for: the same words, written otherwise (the agent's « User Job »
    is the owner's « user_job »)."""
    Fact.objects.create(key=stored, value="x")
    assert fact_key_folded(typed) == fact_key_folded(stored)
    assert key_as_stored(typed, Actor.AGENT) == stored


def test_a_key_of_separators_only_folds_to_itself():
    assert fact_key_folded("..") != fact_key_folded("--")
    assert fact_key_folded("..") and fact_key_folded("--")


def test_a_mark_left_by_the_fold_before_still_recognises_the_erased_key():
    """An erasure made before symbols counted left the mark of « niveau_c » for
    « niveau_c++ »: the agent restating « niveau_c++ » from a message written before it is
    still recognised (erased_marks keep both folds)."""
    fact = Fact.objects.create(key="niveau_c++", value="Marie est experte en C++")
    before = fact.created_at
    fact_erase(fact=fact, actor=Actor.USER)
    assert fact_erased_since(key="niveau_c++", value="autre texte", moment=before)
    # The mark the older fold left, alone (as an erasure before this change left it).
    legacy = {m.digest for m in ErasedMark.objects.all()}
    ErasedMark.objects.all().delete()
    from memory.services.erased_marks import _mark

    ErasedMark.objects.create(digest=_mark("fact-key-folded", "niveau_c"), erased_at=before)
    assert legacy  # the erasure did leave marks
    assert fact_erased_since(key="niveau_c++", value="autre texte", moment=None)


def test_an_erasure_today_is_read_with_todays_fold_only():
    """Review: the marks of an erasure made today were read with the older fold too, so
    erasing « niveau_c » kept a late statement of « niveau_c++ », another fact, out."""
    fact = Fact.objects.create(key="niveau_c", value="Marie débute en C")
    before = fact.created_at
    fact_erase(fact=fact, actor=Actor.USER)

    assert fact_erased_since(key="niveau_c", value="autre", moment=before)
    assert not fact_erased_since(key="niveau_c++", value="Marie est experte en C++", moment=before)


def test_the_owners_written_out_key_beside_a_ligature_key_is_refused():
    """QA: « coeur_de_metier » was taken beside « cœur_de_métier », both in the prompt."""
    from memory.exceptions import FactKeyLookAlike
    from memory.services.facts import fact_store

    fact_store(key="cœur_de_métier", value="La menuiserie", actor=Actor.USER)
    with pytest.raises(FactKeyLookAlike):
        fact_store(key="coeur_de_metier", value="La charpente", actor=Actor.USER)


def test_the_agents_written_out_key_lands_on_the_owners_ligature_key():
    from memory.services.dedup import fact_remember
    from memory.services.facts import fact_store

    fact_store(key="prénom_sœur", value="Marie", actor=Actor.USER)
    result = fact_remember(key="prenom_soeur", value="Julie", actor=Actor.AGENT)
    assert list(Fact.objects.values_list("key", "value")) == [("prénom_sœur", "Marie")]
    assert result.fact.key == "prénom_sœur"


def test_a_mark_left_before_ligatures_were_written_out_still_recognises_the_key():
    """An erasure made before this fold left « prenom_sœur »'s mark: the agent restating
    the key, from a message written before the erasure, is still recognised."""
    from memory.services.erased_marks import _mark

    moment = Fact.objects.create(key="x", value="y").created_at
    ErasedMark.objects.create(
        digest=_mark("fact-key-folded/symbols", "prenom_sœur"), erased_at=moment
    )
    assert fact_erased_since(key="Prénom_Sœur", value="autre texte", moment=None)
