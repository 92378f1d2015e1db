"""A topic forget that leaves a fact and takes lines of its history leaves no copy of those
lines' words: not in the line's note, not in the retrieval log, not in the admin's history
of actions (QA: each kept the topic after the forget and its purge); and a fact about the
topic by its subjects alone is taken whole, not just its history."""

from __future__ import annotations

import json
from datetime import timedelta
from html import unescape

import pytest
from django.contrib.admin.models import LogEntry
from django.urls import reverse
from django.utils import timezone

from agent.tools import ToolContext, tool_run
from memory.models import Actor, Fact, FactRevision, MemoryRetrieval
from memory.services.facts import fact_restore, fact_store, fact_update
from memory.services.forgetting import forgettings_purge, topic_forget
from memory.services.portability import export_lines
from memory.services.retrieval import auto_retrieve
from tests.memory.api.conftest import agent_api, agent_token, agent_user  # noqa: F401
from tests.memory.test_admin import _fact_form
from tests.memory.world import exchange_save, index_everything

pytestmark = pytest.mark.django_db

SECRET = "Zanzibar"
TRIP = f"Voyage à {SECRET} en août avec Sophie"
NEW_TRIP = "Voyage à Lisbonne en août avec Sophie"


def _forget_then_purge(topic: str) -> dict:
    """Forget ``topic``, then purge it as its retention's end would."""
    result = topic_forget(topic=topic, actor=Actor.USER)
    forgettings_purge(now=timezone.now() + timedelta(days=365))
    return dict(result.counts)


def test_a_topic_forget_takes_the_delete_reason_that_names_it(
    staff_client,
    agent_api,  # noqa: F811
):
    kine = fact_store(key="kine", value="Le kiné s'appelle Hélène, cabinet rue Victor Hugo.")[0]
    fact_store(key="velo", value="Le vélo de route est au garage.")
    # The agent relays the owner: « oublie le kiné, je déménage à Zanzibar en août ».
    outcome = tool_run(
        name="memory__delete_fact",
        tool_input={"key": "kine", "reason": f"Mickael déménage à {SECRET} en août"},
        context=ToolContext(channel="mission_control"),
    )
    assert json.loads(outcome.content)["deleted"] is True
    fact_restore(fact=kine, actor=Actor.USER)  # the owner keeps the kiné after all

    topic_forget(topic=SECRET, actor=Actor.USER)

    seen = {
        "revisions (agent)": agent_api.get("/api/memory/facts/kine/revisions").content.decode(),
        "revisions (owner)": staff_client.get("/api/memory/facts/kine/revisions").content.decode(),
        "export": "".join(export_lines()),
        "/memory history": staff_client.get("/memory/facts/kine/history/").content.decode(),
    }
    leaks = [path for path, text in seen.items() if SECRET in text]
    assert leaks == [], f"the forgotten topic is still read through {leaks}"


def test_a_forgotten_old_value_leaves_the_admin_history(staff_client):
    fact, _ = fact_store(key="voyage_ete", value="Voyage en août avec Sophie")
    url = reverse("admin:memory_fact_change", args=[fact.pk])
    for value in (TRIP, NEW_TRIP):  # a browser follows the redirect (its message shown)
        form = _fact_form(Fact.objects.get(pk=fact.pk), value=value)
        assert staff_client.post(url, form, follow=True).status_code == 200

    counts = _forget_then_purge(f"le voyage à {SECRET}")

    assert counts["history"] >= 1 and counts["facts"] == 0
    assert not FactRevision.all_objects.filter(new_value__contains=SECRET).exists()
    seen = {
        "admin index": unescape(staff_client.get(reverse("admin:index")).content.decode()),
        "django_admin_log": " ".join(LogEntry.objects.values_list("object_repr", flat=True)),
    }
    leaks = [name for name, text in seen.items() if SECRET in text]
    assert leaks == [], f"the forgotten old value is still named on {leaks}"
    # The line naming the fact by the value it still holds stays as it was.
    assert LogEntry.objects.filter(object_repr=f"voyage_ete = {NEW_TRIP}").exists()


def test_a_forgotten_old_value_leaves_the_retrieval_log(
    vector_store, local_embedder, settings, tmp_path, staff_client
):
    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path / "vault"
    (tmp_path / "vault").mkdir()
    fact, _ = fact_store(key="voyage_ete", value=TRIP)
    fact_store(key="velo", value="Le vélo de route est au garage")
    exchange_save("whatsapp", "Le vélo est au garage pour le dérailleur", "D'accord.")
    index_everything()
    auto_retrieve(message="Quand part le voyage en août avec Sophie ?", channel="whatsapp")
    assert SECRET in str(list(MemoryRetrieval.objects.values_list("memories", flat=True)))

    fact_update(fact=fact, actor="user", value=NEW_TRIP)
    index_everything()
    counts = _forget_then_purge(f"le voyage à {SECRET}")

    assert counts["history"] >= 1 and counts["facts"] == 0
    log = staff_client.get("/api/memory/retrievals").content.decode()
    assert SECRET not in log, "the owner's log still shows the forgotten old value"


def test_a_fact_about_the_topic_by_its_subjects_is_forgotten(
    vector_store,
    local_embedder,
    agent_api,  # noqa: F811
):
    """QA: facts_fts holds key and value: a fact about the topic by its subjects alone was
    no candidate; the forget took its creation line (its changes hold the subjects) and
    left the fact, subjects included, on every read path."""
    fact_store(
        key="hotel",
        value="Réserver l'hôtel pour le 3 août, chambre double.",
        subjects=[SECRET, "vacances"],
    )
    fact_store(key="velo", value="Le vélo de route est au garage.")
    exchange_save("whatsapp", "Le vélo est au garage pour le dérailleur", "D'accord.")
    index_everything()

    result = topic_forget(topic=SECRET, actor=Actor.USER)
    index_everything()

    seen = {
        "facts api": agent_api.get("/api/memory/facts").content.decode(),
        "search by subject": agent_api.get(
            "/api/memory/search",
            {"q": "réserver l'hôtel en août", "mode": "semantic", "subjects": SECRET.lower()},
        ).content.decode(),
        "export": "".join(export_lines()),
    }
    leaks = [path for path, text in seen.items() if SECRET.lower() in text.lower()]
    assert leaks == [], (
        f"the forget took {result.counts} and left the fact naming the topic on {leaks}"
    )


def test_a_forget_that_took_old_values_only_says_what_it_took():
    """QA: the agent and the API were told « Rien à oublier sur ce sujet. » of a forget
    that took lines of history only, though it was recorded and can be undone."""
    fact, _ = fact_store(key="voyage_ete", value=TRIP)
    fact_update(fact=fact, actor=Actor.USER, value=NEW_TRIP)

    result = topic_forget(topic=f"le voyage à {SECRET}", actor=Actor.USER)

    assert result.forgetting_id is not None and not result.empty
    assert "Rien à oublier" not in result.as_text()
    assert "2 ligne(s) d'historique" in result.as_text()  # its creation and its edit


def test_a_forgotten_old_key_leaves_the_admin_history(staff_client):
    """Review: a rename is now a line of the history; a forget that took it left the
    admin naming the fact by its forgotten key (only old values were redacted)."""
    fact, _ = fact_store(key="voyage_zanzibar", value="Hôtel réservé pour août avec Sophie")
    url = reverse("admin:memory_fact_change", args=[fact.pk])
    form = _fact_form(Fact.objects.get(pk=fact.pk), importance="0.9")
    assert staff_client.post(url, form, follow=True).status_code == 200
    form = _fact_form(Fact.objects.get(pk=fact.pk), key="voyage_ete")  # the owner's rename
    assert staff_client.post(url, form, follow=True).status_code == 200
    assert Fact.objects.get(pk=fact.pk).key == "voyage_ete"

    result = topic_forget(topic="Zanzibar", actor=Actor.USER)
    forgettings_purge(now=timezone.now() + timedelta(days=365))

    assert result.counts["history"] >= 1, result.counts  # the rename's line was taken
    assert not FactRevision.all_objects.filter(changes__icontains="zanzibar").exists()
    seen = {
        "admin index": unescape(staff_client.get(reverse("admin:index")).content.decode()),
        "django_admin_log": " ".join(LogEntry.objects.values_list("object_repr", flat=True)),
    }
    leaks = [name for name, text in seen.items() if "zanzibar" in text.lower()]
    assert leaks == [], f"the forgotten old key is still named on {leaks}"
