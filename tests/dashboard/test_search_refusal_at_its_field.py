"""QA: a refused search filter is reported away from its field.

/memory › Recherche › Filtres › Depuis le 05/12/2026, Avant le 01/11/2026 ›
« Chercher »: 422 and « Avant le : La fin doit être après le début. » in an alert
under the whole form (after « Chercher »), while the « Avant le » date input is
neither marked invalid (no aria-invalid) nor described by the message — unlike the
facts form, whose refused field gets aria-invalid and its message right under it.
"""

import re

import pytest

from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_llm(settings):
    settings.ANTHROPIC_API_KEY = ""


def test_the_refused_until_date_is_marked_and_described_at_its_field(staff_client):
    response = staff_client.get(
        "/memory/search/",
        {"q": "Lisbonne", "mode": "text", "since": "2026-12-05", "until": "2026-11-01"},
        **HTMX,
    )

    assert response.status_code == 422
    page = response.content.decode()
    assert "La fin doit être après le début" in page
    until_input = re.search(r"<input[^>]*id=\"id_search_until\"[^>]*>", page).group(0)
    assert 'aria-invalid="true"' in until_input
    assert "aria-describedby" in until_input
