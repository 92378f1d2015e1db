"""The admin site guards every model it shows, ours and the installed apps' (auth,
authtoken, axes), against what only a hand-made request sends: an action posted with a
selected value that is no row id changes nothing and says, in French, that no row was
selected; a date drill-down past the calendar is refused as any wrong lookup."""

from __future__ import annotations

from html import unescape

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, User
from django.urls import reverse

pytestmark = pytest.mark.django_db

NO_ROW_SELECTED = "Des éléments doivent être sélectionnés"
NOT_ROW_IDS = [["abc"], ["1.5"], ["9" * 30]]


@pytest.fixture
def admin_client(staff_client):
    staff_client.raise_request_exception = False
    return staff_client


def _changelist(model) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


def _actions(client, model) -> list[str]:
    """The actions the superuser sees on the model's changelist."""
    request = client.get(reverse("admin:index")).wsgi_request
    return list(admin.site._registry[model].get_actions(request))


@pytest.mark.parametrize("model", list(admin.site._registry), ids=lambda m: m.__name__)
def test_every_action_of_every_admin_on_values_that_are_no_row_ids_changes_nothing(
    admin_client, model
):
    actions = _actions(admin_client, model)
    for action in actions or ["delete_selected"]:  # an admin without actions must not 500 either
        for selected in NOT_ROW_IDS:
            response = admin_client.post(
                _changelist(model),
                {"action": action, "_selected_action": selected, "index": "0"},
                follow=True,
            )
            assert response.status_code == 200, (action, selected)
            if actions:
                assert NO_ROW_SELECTED in unescape(response.content.decode()), (action, selected)


def test_the_auth_admins_have_actions_to_guard(admin_client):
    """The walk above is not vacuous: Django's own admins offer delete_selected."""
    assert "delete_selected" in _actions(admin_client, User)
    assert "delete_selected" in _actions(admin_client, Group)


@pytest.mark.parametrize("selected", [["abc"], ["abc", "owner"]])
def test_a_delete_of_users_on_a_value_that_is_no_row_id_deletes_no_one(
    admin_client, staff_user, selected
):
    selected = [str(staff_user.pk) if s == "owner" else s for s in selected]
    response = admin_client.post(
        _changelist(User),
        {"action": "delete_selected", "_selected_action": selected, "index": "0"},
        follow=True,
    )
    assert response.status_code == 200
    assert NO_ROW_SELECTED in unescape(response.content.decode())
    assert User.objects.filter(pk=staff_user.pk).exists()


def _date_browsed():
    return [m for m, model_admin in admin.site._registry.items() if model_admin.date_hierarchy]


@pytest.mark.parametrize("model", _date_browsed(), ids=lambda m: m.__name__)
@pytest.mark.parametrize("year", ["99999999999999999999", "٢٠٢٦", "-1"])
def test_a_date_drill_down_past_the_calendar_is_refused_on_every_admin(admin_client, model, year):
    field = admin.site._registry[model].date_hierarchy
    response = admin_client.get(_changelist(model), {f"{field}__year": year})
    assert response.status_code == 302 and response.url.endswith("?e=1")
    assert admin_client.get(_changelist(model), {f"{field}__year": "2026"}).status_code == 200


def test_the_installed_apps_have_date_drill_downs_to_guard():
    """The walk above reaches beyond our logs: axes browses its attempts by date."""
    assert {m._meta.app_label for m in _date_browsed()} >= {"memory", "axes"}


def _date_fields(model):
    return [f.name for f in model._meta.get_fields() if f.get_internal_type() == "DateTimeField"]


@pytest.mark.parametrize(
    "model",
    # The settings' list opens its single row: no lookup reaches it.
    [m for m in admin.site._registry if _date_fields(m) and m.__name__ != "MemorySettings"],
    ids=lambda m: m.__name__,
)
@pytest.mark.parametrize("year", ["99999", "99999999999999999999", "٢٠٢٦"])
def test_a_date_lookup_written_by_hand_past_the_calendar_is_refused_on_every_admin(
    admin_client, model, year
):
    """QA: the guard read the drill-down's field only; ``?created_at__year=99999`` on a list
    without one (facts, summaries, forgets, jobs) was a 500."""
    field = _date_fields(model)[0]
    response = admin_client.get(_changelist(model), {f"{field}__year": year})
    assert response.status_code == 302 and response.url.endswith("?e=1")
    assert admin_client.get(_changelist(model), {f"{field}__year": "2026"}).status_code == 200


@pytest.mark.parametrize("lookup", ["value__regex", "value__iregex"])
def test_a_regex_lookup_that_is_no_regex_is_refused(admin_client, lookup):
    """QA: ``?value__regex=(`` reached SQLite's REGEXP and was a 500."""
    from memory.models import Fact

    response = admin_client.get(_changelist(Fact), {lookup: "("})
    assert response.status_code == 302 and response.url.endswith("?e=1")
    assert admin_client.get(_changelist(Fact), {lookup: "^s"}).status_code == 200
