"""A range refusal says its limit the way the owner reads numbers: « 0,8 », not « 0.8 ».

The models' range validators are the one home of the rule (memory.models.rules); the
/memory forms and the admin show their messages. The API keeps DRF's own message and
JSON's decimal point (tests/memory/api/test_settings_api.py).
"""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from memory.models import MemorySettings
from tests.dashboard.conftest import HTMX
from tests.html_forms import form_post_data

pytestmark = pytest.mark.django_db

ABOVE = "Assurez-vous que cette valeur est inférieure ou égale à {}."
BELOW = "Assurez-vous que cette valeur est supérieure ou égale à {}."


def test_the_model_refuses_a_setting_with_its_limit_in_french():
    settings = MemorySettings.load()
    settings.min_score = 0.9
    with pytest.raises(ValidationError) as refused:
        settings.full_clean()
    assert refused.value.message_dict["min_score"] == [ABOVE.format("0,8")]


def test_the_admin_says_the_settings_limits_with_a_decimal_comma(staff_client):
    url = reverse("admin:memory_memorysettings_change", args=[MemorySettings.load().pk])
    data = form_post_data(staff_client.get(url).content.decode(), "memorysettings_form")
    data.update(min_score="0.1", search_min_score="1.5")
    response = staff_client.post(url, data)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["min_score"] == [BELOW.format("0,3")]
    # A whole limit reads as one: « 1 », not « 1,0 ».
    assert errors["search_min_score"] == [ABOVE.format("1")]


@pytest.mark.parametrize("url", ["/memory/facts/", "/memory/facts/k/edit/"])
def test_a_facts_importance_is_refused_with_its_limit_as_the_owner_reads_it(staff_client, url):
    from memory.services.facts import fact_store

    fact_store(key="k", value="v")
    response = staff_client.post(
        url, {"key": "k2", "value": "v", "memory_type": "fact", "importance": "1.5"}, **HTMX
    )
    assert response.status_code == 422
    assert f"<li>{ABOVE.format('1')}</li>" in response.content.decode()
