"""An edit refused over a change made since its form opened shows that change, and the
save that follows writes only what the owner changed: the other client's change stays.

QA: « livre » opened (« Dune », 0.5, no subjects); another client set the importance to
0.9 and the subject « sf »; the owner changed only the value. The 422 named the value
(unchanged) and the form came back with 0.5 and no subjects: saving again wrote them,
and the other client's change was gone without a word.
"""

import html as html_lib
import re

import pytest

from memory.models import Actor, Fact
from memory.services.facts import fact_forget, fact_store, fact_update
from tests.dashboard.conftest import HTMX
from tests.html_forms import form_post_data

pytestmark = pytest.mark.django_db

EDIT = "/memory/facts/livre/edit/"


def _posted(response) -> dict[str, str]:
    """What the edit form of this fragment posts, as a browser sends it."""
    html = response.content.decode().replace("<form ", '<form id="fact-edit" ', 1)
    return form_post_data(html, "fact-edit")


def _alert(response) -> str:
    """The refusal's text, as the owner reads it above the form."""
    found = re.search(
        r'<div class="alert" role="alert">(.*?)</div>', response.content.decode(), re.S
    )
    return html_lib.unescape(re.sub(r"<[^>]+>", "", found.group(1))) if found else ""


@pytest.fixture
def livre():
    return fact_store(key="livre", value="Dune", importance=0.5)[0]


def test_the_refusal_shows_what_changed_since_and_the_next_save_keeps_it(staff_client, livre):
    posted = _posted(staff_client.get(EDIT, **HTMX))
    fact_update(fact=livre, actor=Actor.USER, importance=0.9, subjects=["sf"])  # meanwhile
    posted["value"] = "Fondation"

    refused = staff_client.post(EDIT, posted, **HTMX)

    assert refused.status_code == 422
    said = _alert(refused)
    assert "a changé depuis que vous l" in said
    assert "Importance : « 0,9 »" in said and "Sujets : « sf »" in said
    assert "Valeur" not in said and "Dune" not in said  # the value did not change
    stored = Fact.objects.get(key="livre")
    assert (stored.value, stored.importance, stored.subjects) == ("Dune", 0.9, ["sf"])
    again = _posted(refused)
    # What the owner typed stays; the fields they left show the values stored now.
    assert (again["value"], again["importance"], again["subjects"]) == ("Fondation", "0.9", "sf")

    saved = staff_client.post(EDIT, again, **HTMX)

    assert saved.status_code == 200 and "Enregistré." in saved.content.decode()
    stored = Fact.objects.get(key="livre")
    assert (stored.value, stored.importance, stored.subjects) == ("Fondation", 0.9, ["sf"])


def test_a_field_both_changed_keeps_the_owners_value_once_seen(staff_client, livre):
    posted = _posted(staff_client.get(EDIT, **HTMX))
    fact_update(fact=livre, actor=Actor.USER, importance=0.9)
    posted["importance"] = "0.7"

    refused = staff_client.post(EDIT, posted, **HTMX)

    assert refused.status_code == 422 and "Importance : « 0,9 »" in _alert(refused)
    again = _posted(refused)
    assert again["importance"] == "0.7" and again["initial-importance"] == "0.9"
    assert staff_client.post(EDIT, again, **HTMX).status_code == 200
    assert Fact.objects.get(key="livre").importance == 0.7


def test_a_save_writes_only_the_fields_the_owner_changed(staff_client, livre):
    """Without a version to check (a page from before ``opened``), the fields left as
    the form showed them are not written over the row as it is now."""
    posted = _posted(staff_client.get(EDIT, **HTMX))
    del posted["opened"]
    fact_update(fact=livre, actor=Actor.USER, importance=0.9, subjects=["sf"])
    posted["value"] = "Fondation"

    saved = staff_client.post(EDIT, posted, **HTMX)

    assert saved.status_code == 200
    stored = Fact.objects.get(key="livre")
    assert (stored.value, stored.importance, stored.subjects) == ("Fondation", 0.9, ["sf"])


def test_nothing_changed_meanwhile_saves_as_before(staff_client, livre):
    posted = _posted(staff_client.get(EDIT, **HTMX))
    posted.update(value="Fondation", subjects="sf, Asimov", ttl="7d")

    saved = staff_client.post(EDIT, posted, **HTMX)

    assert saved.status_code == 200
    stored = Fact.objects.get(key="livre")
    assert (stored.value, stored.importance, stored.subjects) == (
        "Fondation",
        0.5,
        ["sf", "asimov"],
    )
    assert stored.expires_at is not None
    # Emptied subjects and « Sans expiration » are changes too.
    posted = _posted(staff_client.get(EDIT, **HTMX))
    posted.update(subjects="", no_expiry="on")
    assert staff_client.post(EDIT, posted, **HTMX).status_code == 200
    stored = Fact.objects.get(key="livre")
    assert stored.subjects == [] and stored.expires_at is None


def test_a_fact_forgotten_since_is_said_forgotten_and_saving_again_restores_it(staff_client, livre):
    """The refusal said « changed, but not in this form's fields (its expiry?) »: the
    owner could not tell that saving again would bring back a fact forgotten meanwhile."""
    posted = _posted(staff_client.get(EDIT, **HTMX))
    fact_forget(fact=livre, actor=Actor.USER)  # another tab
    posted["importance"] = "0.9"

    refused = staff_client.post(EDIT, posted, **HTMX)

    assert refused.status_code == 422
    assert "a été oublié depuis que vous l" in _alert(refused)
    assert Fact.all_objects.get(pk=livre.pk).forgotten
    assert staff_client.post(EDIT, _posted(refused), **HTMX).status_code == 200
    stored = Fact.all_objects.get(pk=livre.pk)
    assert (stored.forgotten, stored.importance) == (False, 0.9)
