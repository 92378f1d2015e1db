"""A slider moved over a value changed since the page opened (the API, the admin, another
tab) is refused with the value stored now, then taken when moved again.

QA: the slider kept showing the old value, and moving it saved over the API's change
unseen. The fact edit form does the same with its hidden ``opened`` (fact_version).
"""

import re

import pytest

from memory.models import MemorySettings
from memory.services.settings import memory_settings_update
from tests.dashboard.conftest import HTMX
from tests.html_forms import form_post_data

pytestmark = pytest.mark.django_db

SETTINGS = "/memory/retrieval/settings/"


def _opened(staff_client) -> dict[str, str]:
    page = staff_client.get("/memory/?section=auto-retrieval").content.decode()
    return form_post_data(page, "retrieval-settings")


def test_moving_a_slider_the_api_changed_since_is_refused_then_taken(staff_client):
    posted = _opened(staff_client)
    assert posted["initial-min_score"] == "0.5"
    memory_settings_update(changes={"min_score": 0.7})  # the API, meanwhile
    posted["min_score"] = "0.55"

    refused = staff_client.post(SETTINGS, posted, **HTMX)

    html = refused.content.decode()
    assert refused.status_code == 422
    assert "Score minimum" in html and "a changé depuis" in html and "0,70" in html
    assert MemorySettings.load().min_score == 0.7
    # The page now holds the stored value as its opening one: moving again takes it.
    posted.update(re.findall(r'name="(initial-[a-z_]+)" value="([^"]*)"', html))
    assert posted["initial-min_score"] == "0.7"
    again = staff_client.post(SETTINGS, posted, **HTMX)
    assert again.status_code == 200
    assert MemorySettings.load().min_score == 0.55


def test_a_slider_moved_to_the_value_stored_meanwhile_is_no_conflict(staff_client):
    posted = _opened(staff_client)
    memory_settings_update(changes={"max_results": 6})
    posted["max_results"] = "6"
    assert staff_client.post(SETTINGS, posted, **HTMX).status_code == 200


def test_the_check_is_made_in_the_service_on_the_row_it_saves():
    from memory.services.settings import SettingsChanged

    MemorySettings.load()
    memory_settings_update(changes={"min_score": 0.7})
    with pytest.raises(SettingsChanged) as refused:
        memory_settings_update(changes={"min_score": 0.4}, opened={"min_score": 0.5})
    assert refused.value.stored == {"min_score": 0.7}
    assert MemorySettings.load().min_score == 0.7
    memory_settings_update(changes={"min_score": 0.4}, opened={"min_score": 0.7})
    assert MemorySettings.load().min_score == 0.4
