"""QA: the admin's list of facts has an empty link and English alternative texts.

/admin/memory/fact/ › filter « Par canal »: besides « Tout », a link
``<a href="?channel="></a>`` with no text at all (the value of the facts that have
no channel, the owner's own facts). A screen reader announces an unnamed link and
the filter shows an empty line.

The « Oublié » column is Django's boolean icon, ``<img alt="False">`` /
``alt="True"``: a screen reader reads English « False » for every fact.
"""

import re

import pytest

from memory.services.facts import fact_store

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_llm(settings):
    settings.ANTHROPIC_API_KEY = ""


@pytest.fixture
def facts():
    fact_store(key="ville", value="Mickael habite à Lyon")


def test_every_channel_filter_link_has_a_text(staff_client, facts):
    page = staff_client.get("/admin/memory/fact/").content.decode()

    filters = page[page.index('id="changelist-filter"') :]
    empty_links = re.findall(r"<a [^>]*>\s*</a>", filters)
    assert empty_links == []


def test_the_forgotten_column_is_not_read_as_english(staff_client, facts):
    page = staff_client.get("/admin/memory/fact/").content.decode()

    assert 'alt="False"' not in page
    assert 'alt="True"' not in page


def test_the_channel_filter_still_filters(staff_client):
    fact_store(key="ville", value="Mickael habite à Lyon")
    fact_store(key="sport", value="Escalade le mardi", channel="whatsapp")
    page = staff_client.get("/admin/memory/fact/", {"channel": "whatsapp"}).content.decode()
    assert "sport" in page and ">ville<" not in page
    page = staff_client.get("/admin/memory/fact/", {"channel": "__aucun__"}).content.decode()
    assert ">ville<" in page and ">sport<" not in page
    assert "Aucun (tous les canaux)" in page


def test_each_admin_column_keeps_its_own_french_name(staff_client):
    """Review: the forgotten column was inserted under the source message's decorator, so
    it was headed « Message d'origine » and that field fell back to Django's English."""
    from memory.admin import FactAdmin

    assert FactAdmin.forgotten_said.short_description == "oublié"
    assert FactAdmin.source_message_shown.short_description == "message d'origine"
    fact_store(key="ville", value="Mickael habite à Lyon")
    page = staff_client.get("/admin/memory/fact/").content.decode()
    head = page[page.index("column-forgotten_said") :][:400]
    assert "ublié" in head and "essage d" not in head, head
