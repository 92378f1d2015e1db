"""The /memory toggle and sliders save only the control the owner moved: a knob changed
elsewhere (the API, the admin) since the page opened keeps its new value."""

import re

import pytest

from memory.models import MemorySettings
from tests.dashboard.conftest import HTMX
from tests.html_forms import form_post_data
from tests.memory.api.conftest import owner_api  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db

SETTINGS = "/memory/retrieval/settings/"


def _opened(staff_client) -> dict[str, str]:
    """What the section's form posts as the page was opened, hidden inputs included."""
    page = staff_client.get("/memory/?section=auto-retrieval").content.decode()
    return form_post_data(page, "retrieval-settings")


def test_moving_one_slider_keeps_a_knob_the_api_changed_meanwhile(staff_client, owner_api):  # noqa: F811
    posted = _opened(staff_client)
    assert (
        owner_api.patch("/api/memory/settings", {"min_score": 0.7}, format="json").status_code
        == 200
    )
    posted["max_results"] = "6"
    response = staff_client.post(SETTINGS, posted, **HTMX)
    assert response.status_code == 200
    row = MemorySettings.load()
    assert (row.max_results, row.min_score) == (6, 0.7)
    assert "score ≥ 0,70" in response.content.decode()  # the status tells what is stored


def test_moving_a_slider_keeps_the_toggle_the_api_turned_off_meanwhile(staff_client, owner_api):  # noqa: F811
    posted = _opened(staff_client)
    assert posted["auto_retrieve_enabled"] == "on"
    patch = {"auto_retrieve_enabled": False}
    assert owner_api.patch("/api/memory/settings", patch, format="json").status_code == 200
    posted["live_max_results"] = "3"
    staff_client.post(SETTINGS, posted, **HTMX)
    row = MemorySettings.load()
    assert (row.live_max_results, row.auto_retrieve_enabled) == (3, False)


def test_unchecking_the_toggle_saves_it_and_nothing_else(staff_client, owner_api):  # noqa: F811
    posted = _opened(staff_client)
    assert (
        owner_api.patch("/api/memory/settings", {"max_results": 9}, format="json").status_code
        == 200
    )
    del posted["auto_retrieve_enabled"]  # an unchecked box is not posted
    staff_client.post(SETTINGS, posted, **HTMX)
    row = MemorySettings.load()
    assert (row.auto_retrieve_enabled, row.max_results) == (False, 9)


def test_a_slider_moved_back_to_where_the_page_opened_is_saved(staff_client):
    """After a save the page's opening values become what it shows (an out-of-band swap)."""
    posted = _opened(staff_client)
    posted["max_results"] = "6"
    status = staff_client.post(SETTINGS, posted, **HTMX).content.decode()
    assert 'id="retrieval-initial" hx-swap-oob="true"' in status
    posted.update(re.findall(r'name="(initial-[a-z_]+)" value="([^"]*)"', status))
    assert posted["initial-max_results"] == "6"
    posted["max_results"] = "4"
    staff_client.post(SETTINGS, posted, **HTMX)
    assert MemorySettings.load().max_results == 4


def test_a_refused_value_gives_the_page_no_new_opening_values(staff_client):
    posted = _opened(staff_client)
    posted["max_results"] = "11"
    response = staff_client.post(SETTINGS, posted, **HTMX)
    assert response.status_code == 422
    assert "retrieval-initial" not in response.content.decode()
    assert MemorySettings.load().max_results == 4


@pytest.mark.parametrize("said", ["maybe", "yes", "2"])
def test_a_toggle_word_the_forms_do_not_know_is_refused_in_french(staff_client, said):
    """QA: « auto_retrieve_enabled=maybe » answered 200 and saved it switched on."""
    MemorySettings.load()  # the row, then its toggle off
    MemorySettings.objects.update(auto_retrieve_enabled=False)
    posted = _opened(staff_client)
    posted["auto_retrieve_enabled"] = said

    response = staff_client.post(SETTINGS, posted, **HTMX)

    assert response.status_code == 422
    assert "Un booléen est attendu" in response.content.decode()
    assert MemorySettings.load().auto_retrieve_enabled is False


@pytest.mark.parametrize(("said", "stored"), [("on", True), ("true", True), ("0", False)])
def test_the_toggles_words_are_read(staff_client, said, stored):
    MemorySettings.load()
    MemorySettings.objects.update(auto_retrieve_enabled=not stored)
    posted = _opened(staff_client)
    posted["auto_retrieve_enabled"] = said

    assert staff_client.post(SETTINGS, posted, **HTMX).status_code == 200
    assert MemorySettings.load().auto_retrieve_enabled is stored
