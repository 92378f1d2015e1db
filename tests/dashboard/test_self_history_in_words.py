"""QA: the history of an agent's item on /memory shows raw codes.

« Moi & objectifs » › an item › « Historique » shows
« Historique de « self_je_ne_peux_pas_chercher_sur_35e126584b » » — the item's
internal slug key, which the rest of the section (and the forget preview, on
purpose) never shows — and its category as the stored code, « catégorie : — →
limitation », where the card says « Limite ».
"""

import html
import re

import pytest

from memory.models import FactKind
from memory.services.self_memory import agent_item_store
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_llm(settings):
    settings.ANTHROPIC_API_KEY = ""


def _text(response) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode()))


@pytest.fixture
def item():
    return agent_item_store(
        kind=FactKind.SELF, category="limitation", content="Je ne peux pas chercher sur le web."
    ).item


def test_the_history_names_the_category_in_french(staff_client, item):
    text = _text(staff_client.get(f"/memory/self/{item.pk}/history/", **HTMX))

    assert "Limite" in text
    assert "limitation" not in text


def test_the_history_does_not_show_the_internal_slug_key(staff_client, item):
    text = _text(staff_client.get(f"/memory/self/{item.pk}/history/", **HTMX))

    assert item.key not in text
