"""QA: the admin names a forget with its raw English state.

The admin's page of a forget (/admin/memory/forgetting/<id>/change/) has for title,
breadcrumb and heading « docteur Bernard (active) » — after an undo « (restored) »,
after an erasure « [sujet effacé] (purged) » — while its list shows the French
state (« Oublié (annulable) », « Restauré », « Effacé définitivement »). The same
string names the forgets on the admin's confirmation pages and in its history.
"""

import pytest

from memory.services.facts import fact_store
from tests.dashboard.conftest import forget_confirmed

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_llm(settings):
    settings.ANTHROPIC_API_KEY = ""


def test_a_forget_s_admin_page_names_its_state_in_french(staff_client):
    from memory.models import Forgetting

    fact_store(key="medecin", value="Le docteur Bernard est le médecin traitant")
    forget_confirmed(staff_client, "docteur Bernard")
    forgetting = Forgetting.objects.get()

    page = staff_client.get(f"/admin/memory/forgetting/{forgetting.pk}/change/")

    assert page.status_code == 200
    text = page.content.decode()
    assert "(active)" not in text
    assert f"docteur Bernard ({forgetting.get_state_display()})" in text or "Oublié" in text
