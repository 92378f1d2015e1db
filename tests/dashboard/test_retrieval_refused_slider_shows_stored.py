"""A slider refused over a value changed since the page opened is put back to the stored
value, so moving another slider afterwards does not save the refused one's old position.

QA: the page showed min_score 0.5, the API set 0.7, the owner moved it to 0.6: 422, and
only the hidden initial-min_score became 0.7; the slider still said 0.6. Moving « Nombre
maximum de souvenirs » then posted min_score=0.6 over initial 0.7, which saved 0.6.
"""

import re

import pytest

from memory.models import MemorySettings
from memory.services.settings import memory_settings_update
from tests.dashboard.conftest import HTMX
from tests.html_forms import form_post_data

pytestmark = pytest.mark.django_db

SETTINGS = "/memory/retrieval/settings/"


def _page(staff_client) -> dict[str, str]:
    page = staff_client.get("/memory/?section=auto-retrieval").content.decode()
    return form_post_data(page, "retrieval-settings")


def _swapped(posted: dict[str, str], response) -> dict[str, str]:
    """The form after htmx swapped the answer's out-of-band inputs into the page."""
    html = response.content.decode()
    assert 'hx-swap-oob="true"' in html
    return {**posted, **form_post_data(f'<form id="swapped">{html}</form>', "swapped")}


def _refused(staff_client) -> tuple[dict[str, str], object]:
    posted = _page(staff_client)
    assert posted["min_score"] == posted["initial-min_score"] == "0.5"
    memory_settings_update(changes={"min_score": 0.7})  # the API, meanwhile
    posted["min_score"] = "0.6"
    refused = staff_client.post(SETTINGS, posted, **HTMX)
    assert refused.status_code == 422
    assert MemorySettings.load().min_score == 0.7
    return posted, refused


def test_the_refused_slider_shows_the_stored_value_and_its_number(staff_client):
    posted, refused = _refused(staff_client)

    html = refused.content.decode()
    slider = re.search(r'<input type="range" name="min_score"[^>]*>', html)
    assert slider, "the refused slider is not in the answer"
    assert 'value="0.7"' in slider.group(0) and 'hx-swap-oob="true"' in slider.group(0)
    shown = re.search(r'<output id="min_score_value"[^>]*>([^<]*)</output>', html)
    assert shown and shown.group(1) == "0,70" and "hx-swap-oob" in shown.group(0)
    page = _swapped(posted, refused)
    assert page["min_score"] == page["initial-min_score"] == "0.7"
    # The sliders the server did not refuse are left as the owner put them.
    assert 'name="max_results"' not in html.replace('name="initial-max_results"', "")


def test_moving_another_slider_after_the_refusal_leaves_the_stored_value(staff_client):
    posted, refused = _refused(staff_client)
    page = _swapped(posted, refused)
    page["max_results"] = str(int(page["max_results"]) + 1)

    saved = staff_client.post(SETTINGS, page, **HTMX)

    assert saved.status_code == 200
    stored = MemorySettings.load()
    assert stored.min_score == 0.7 and stored.max_results == int(page["max_results"])


def test_moving_the_refused_slider_again_saves_the_owners_value(staff_client):
    posted, refused = _refused(staff_client)
    page = _swapped(posted, refused)
    page["min_score"] = "0.6"

    assert staff_client.post(SETTINGS, page, **HTMX).status_code == 200
    assert MemorySettings.load().min_score == 0.6


def test_without_javascript_the_refusal_page_shows_the_stored_value(staff_client):
    posted = _page(staff_client)
    memory_settings_update(changes={"min_score": 0.7})
    posted["min_score"] = "0.6"

    refused = staff_client.post(SETTINGS, posted)

    assert refused.status_code == 422
    page = form_post_data(refused.content.decode(), "retrieval-settings")
    assert page["min_score"] == page["initial-min_score"] == "0.7"
    page["max_results"] = str(int(page["max_results"]) + 1)
    assert staff_client.post(SETTINGS, page).status_code == 302
    assert MemorySettings.load().min_score == 0.7
