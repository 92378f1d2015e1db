"""The agent's self and goals: kept apart from the owner's facts, deduplicated, seeded."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from memory.models import Fact, FactKind, FactRevision, MemorySettings, RevisionReason
from memory.selectors import fact_list, facts_active, facts_recent, memory_stats_get
from memory.services.dedup import PENDING_CANDIDATES_MAX, fact_candidates
from memory.services.facts import fact_store
from memory.services.indexing import KIND_FACT, index_rows
from memory.services.portability import exportable_facts
from memory.services.retrieval.sources import t1_context
from memory.services.search import memory_search
from memory.services.self_memory import (
    agent_item_delete,
    agent_item_forget,
    agent_item_store,
)
from memory.services.self_memory_reads import agent_item_recall, agent_item_search
from memory.services.self_memory_validate import agent_item_key
from tests.fakes.anthropic import text_message
from tests.fakes.embedder import HashEmbedder, install

pytestmark = pytest.mark.django_db

SELF_TEXT = "Je peux lire le Lobby et les messages de Mickael"
GOAL_TEXT = "J'aimerais comprendre le Lobby de Mickael"


@pytest.fixture
def no_llm(settings):
    settings.ANTHROPIC_API_KEY = ""


@pytest.fixture
def mixed(vector_store, local_embedder, no_llm):
    """One owner fact and one self item and one goal about the same words, all indexed."""
    owner, _ = fact_store(
        key="lobby_mickael", value="Mickael lit le Lobby tous les matins", memory_type="identity"
    )
    selves = agent_item_store(kind=FactKind.SELF, category="capability", content=SELF_TEXT).item
    goal = agent_item_store(kind=FactKind.GOAL, category="understanding", content=GOAL_TEXT).item
    index_rows(KIND_FACT, [owner.id, selves.id, goal.id])
    return owner, selves, goal


def test_owner_facing_reads_show_owner_facts_only(mixed, staff_client, owner_api):
    owner, selves, goal = mixed
    now = timezone.now()

    assert list(Fact.objects.all()) == [owner]
    assert list(facts_active()) == [owner]
    assert list(fact_list(include_forgotten=True, include_expired=True)) == [owner]
    assert list(facts_recent(limit=10)) == [owner]
    assert list(exportable_facts()) == [owner]
    stats = memory_stats_get(include_vectors=False)
    assert stats["facts"]["total"] == 1
    assert stats["agent_items"] == {
        "self_items": 1,
        "goals": 1,
        "index": {"pending": 0, "indexed": 2, "failed": 0, "skipped": 0},
    }
    t1 = t1_context("whatsapp", MemorySettings.load(), now - timedelta(seconds=1))
    assert t1.core == [owner]
    assert {item for item, _ in t1.ranked} <= {f"fact:{owner.id}"}
    for mode in ("semantic", "text", "hybrid"):
        hits = memory_search(query="le Lobby de Mickael", mode=mode, limit=10)
        facts = {int(h.id) for h in hits if h.kind == "fact"}
        assert facts <= {owner.id}, mode
        assert mode == "hybrid" or facts == {owner.id}, mode

    listed = owner_api.get("/api/v1/memory/facts").json()
    assert [f["key"] for f in listed["results"]] == [owner.key]
    recent = owner_api.get("/api/v1/memory/recent-facts").json()
    assert [f["key"] for f in recent] == [owner.key]
    page = staff_client.get("/memory/facts/", HTTP_HX_REQUEST="true").content.decode()
    assert owner.value in page
    assert SELF_TEXT not in page and GOAL_TEXT not in page
    # By its own filter, or its key, the agent's item is there.
    listed = owner_api.get("/api/v1/memory/facts?kind=self").json()
    assert [(f["key"], f["kind"], f["category"]) for f in listed["results"]] == [
        (selves.key, "self", "capability")
    ]
    assert owner_api.get(f"/api/v1/memory/facts/{selves.key}").json()["value"] == SELF_TEXT


def test_the_self_tools_search_only_their_own_kind(mixed):
    owner, selves, goal = mixed

    hits, how = agent_item_search(kind=FactKind.SELF, query="le Lobby de Mickael")
    assert how == "semantic"
    assert [h.item for h in hits] == [selves]
    hits, _ = agent_item_search(kind=FactKind.GOAL, query="le Lobby de Mickael")
    assert [h.item for h in hits] == [goal]
    hits, _ = agent_item_search(kind=FactKind.SELF, query="le Lobby", category="limitation")
    assert hits == []


def test_restating_a_capability_stores_nothing_new(vector_store, local_embedder, no_llm):
    first = agent_item_store(
        kind="self", category="capability", content="Je peux stocker des mémoires"
    )
    version = Fact.all_objects.get().version
    again = agent_item_store(
        kind="self", category="capability", content="  je peux stocker des Mémoires !"
    )

    assert (first.action, again.action) == ("added", "noop")
    assert again.item.pk == first.item.pk
    assert Fact.all_objects.filter(kind="self").count() == 1
    assert FactRevision.objects.count() == 1
    assert Fact.all_objects.get().version == version  # not even re-embedded


def test_without_an_llm_a_capability_supersedes_the_opposite_limitation(
    vector_store, local_embedder, no_llm
):
    limitation = agent_item_store(
        kind="self", category="limitation", content="Je ne peux pas chercher sur le web"
    ).item
    other = agent_item_store(
        kind="self", category="limitation", content="Je n'ai pas de corps"
    ).item

    result = agent_item_store(
        kind="self", category="capability", content="Je peux chercher sur le web"
    )

    assert result.action == "superseded"
    assert result.item.pk == limitation.pk
    limitation.refresh_from_db()
    assert (limitation.value, limitation.category) == ("Je peux chercher sur le web", "capability")
    revision = limitation.revisions.first()
    assert revision.reason == RevisionReason.SUPERSEDED
    assert revision.old_value == "Je ne peux pas chercher sur le web"
    assert revision.changes["category"] == ["limitation", "capability"]
    assert Fact.all_objects.filter(kind="self").count() == 2
    other.refresh_from_db()
    assert other.category == "limitation"


def test_with_an_llm_the_decision_supersedes_and_sees_only_items_of_its_kind(
    vector_store, local_embedder, fake_anthropic, settings
):
    settings.ANTHROPIC_API_KEY, key = "", settings.ANTHROPIC_API_KEY
    fact_store(key="web_owner", value="Il ne peut pas chercher sur le web au bureau")
    limitation = agent_item_store(
        kind="self", category="limitation", content="Je ne peux pas chercher sur le web"
    ).item
    index_rows(KIND_FACT, list(Fact.all_objects.values_list("id", flat=True)))
    settings.ANTHROPIC_API_KEY = key
    seen = []

    def decide(body):
        prompt = json.loads(body["messages"][0]["content"])
        seen.append(prompt)
        return text_message(json.dumps({"action": "SUPERSEDE", "id": limitation.id}))

    fake_anthropic.handler = decide

    result = agent_item_store(
        kind="self", category="capability", content="Désormais je sais chercher des pages web"
    )

    assert (result.action, result.decided_by, result.item.pk) == (
        "superseded",
        "llm",
        limitation.pk,
    )
    [prompt] = seen
    assert [c["id"] for c in prompt["faits_memorises"]] == [limitation.id]
    assert "capacités" in fake_anthropic.last.system


def test_a_bad_category_is_refused_in_french(no_llm):
    from memory.exceptions import MemoryServiceError

    with pytest.raises(MemoryServiceError, match="Catégorie inconnue pour goal : « limitation »"):
        agent_item_store(kind="goal", category="limitation", content="Voler")


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_seed_command_is_idempotent(tmp_path, no_llm, capsys):
    seed = _write(
        tmp_path / "seed.jsonl",
        [
            json.dumps({"kind": "self", "category": "context", "content": "Je vis dans Organizer"}),
            "",
            json.dumps({"kind": "goal", "category": "connection", "content": "Parler à David"}),
        ],
    )

    call_command("memory_seed_self", str(seed))
    assert "2 ajoutés, 0 déjà présent," in capsys.readouterr().out
    first = {(f.kind, f.category, f.value) for f in Fact.all_objects.all()}
    assert first == {
        ("self", "context", "Je vis dans Organizer"),
        ("goal", "connection", "Parler à David"),
    }
    revisions = FactRevision.objects.count()

    call_command("memory_seed_self", str(seed))
    assert "0 ajouté, 2 déjà présents," in capsys.readouterr().out
    assert {(f.kind, f.category, f.value) for f in Fact.all_objects.all()} == first
    assert FactRevision.objects.count() == revisions
    assert not Fact.objects.exists()  # the owner's facts: none


def test_the_seed_command_names_the_bad_line_and_stores_nothing(tmp_path, no_llm):
    seed = _write(
        tmp_path / "seed.jsonl",
        [
            json.dumps({"kind": "self", "category": "context", "content": "Je vis dans Organizer"}),
            json.dumps({"kind": "self", "category": "superpouvoir", "content": "Je vole"}),
        ],
    )
    with pytest.raises(CommandError) as error:
        call_command("memory_seed_self", str(seed))
    assert str(error.value) == (
        "Rien n'a été chargé. ligne 2 : Catégorie inconnue pour self : « superpouvoir » "
        "(attendu : context, capability, limitation, preference, relation)."
    )
    assert not Fact.all_objects.exists()

    _write(
        seed, ['{"kind": "goal", "category": "connection", "content": "Parler à David"}', "{oups"]
    )
    with pytest.raises(CommandError, match="ligne 2 : JSON invalide"):
        call_command("memory_seed_self", str(seed))
    assert not Fact.all_objects.exists()


def test_the_example_seed_file_loads(no_llm):
    from django.conf import settings

    call_command(
        "memory_seed_self", str(settings.BASE_DIR / "memory/seeds/agent_self.example.jsonl")
    )
    assert Fact.all_objects.filter(kind="self").count() == 5
    assert Fact.all_objects.filter(kind="goal").count() == 2


def test_a_seed_stops_whole_rather_than_add_unchecked_when_the_embedder_is_down(
    tmp_path, no_llm, monkeypatch, vector_store
):
    """A seed can be run again: an outage of the embedder stops it, nothing stored.
    The agent's own statement, which cannot be said again, is kept and compared next
    time."""
    from memory.exceptions import StoreUnavailable
    from tests.fakes.embedder import HashEmbedder, install

    embedder = HashEmbedder()
    install(monkeypatch, embedder)
    seed = _write(
        tmp_path / "seed.jsonl",
        [json.dumps({"kind": "self", "category": "capability", "content": SELF_TEXT})],
    )
    embedder.error = StoreUnavailable("embedder down")
    with pytest.raises(CommandError, match=r"^Rien n'a été chargé\. "):
        call_command("memory_seed_self", str(seed))
    assert not Fact.all_objects.exists()
    kept = agent_item_store(kind=FactKind.SELF, category="capability", content=SELF_TEXT)
    assert kept.action == "added"
    assert Fact.all_objects.get().value == SELF_TEXT


@pytest.mark.parametrize("kind", [FactKind.SELF, FactKind.GOAL])
def test_with_qdrant_out_of_reach_the_agents_items_are_all_compared_on_the_spot(
    tmp_path, no_llm, local_embedder, settings, kind
):
    """Qdrant down (or its folder held by serve while `manage.py mcp` runs): the
    agent's self items or goals, few and not in the keyword index, are all embedded
    and compared here. A restatement is merged, never stored twice, and a seed goes
    on checked instead of stopping."""
    from memory.stores.vectors import vector_store_reset

    category = "capability" if kind == FactKind.SELF else "connection"
    first_text, again_text = (
        (SELF_TEXT, "Je peux lire le Lobby et aussi les messages de Mickael")
        if kind == FactKind.SELF
        else (GOAL_TEXT, "J'aimerais bien comprendre le Lobby de Mickael")
    )
    first = agent_item_store(kind=kind, category=category, content=first_text)
    agent_item_store(kind=kind, category=category, content="Je ne sors jamais du salon vocal")
    vector_store_reset()
    settings.QDRANT_URL = "http://127.0.0.1:9"
    settings.QDRANT_TIMEOUT_S = 1
    seed = _write(
        tmp_path / "seed.jsonl",
        # The restatement again, under its own key (the stored item keeps the first's).
        [json.dumps({"kind": kind, "category": category, "content": again_text})],
    )
    out = io.StringIO()
    try:
        again = agent_item_store(kind=kind, category=category, content=again_text)
        call_command("memory_seed_self", str(seed), stdout=out)
    finally:
        vector_store_reset()
    assert again.action != "added"
    assert again.item.pk == first.item.pk
    # Compared under its own key (not "déjà présent"), and found.
    assert "0 ajouté, 0 déjà présent, 1 fusionné." in out.getvalue(), out.getvalue()
    assert Fact.all_objects.filter(kind=kind, forgotten=False).count() == 2


def test_on_the_spot_the_agents_items_are_embedded_once_until_edited(
    no_llm, local_embedder, settings, monkeypatch
):
    """`manage.py mcp` beside serve compares every agent item on the spot at each
    self_remember: an item's vector is kept from one call to the next (by row and
    text), so only the new statement and an edited item are embedded again."""
    from memory.services import dedup
    from memory.services.dedup import fact_candidates
    from memory.stores.embedders import get_embedder
    from memory.stores.vectors import vector_store_reset

    first = agent_item_store(kind=FactKind.SELF, category="capability", content=SELF_TEXT)
    agent_item_store(kind=FactKind.SELF, category="context", content="Je parle français")
    embedded: list[str] = []
    embedder = get_embedder()
    real = type(embedder).embed_documents

    def counted(self, texts):
        embedded.extend(texts)
        return real(self, texts)

    monkeypatch.setattr(type(embedder), "embed_documents", counted)
    dedup._compared.clear()  # nothing kept from another test
    vector_store_reset()
    settings.QDRANT_URL = "http://127.0.0.1:9"
    settings.QDRANT_TIMEOUT_S = 1
    try:
        found = fact_candidates(key="x", value=SELF_TEXT, kind=FactKind.SELF)
        assert [c.fact.pk for c in found][:1] == [first.item.pk]
        assert len(embedded) == 3  # the statement, then both items
        embedded.clear()
        fact_candidates(key="y", value="Je lis le Lobby", kind=FactKind.SELF)
        assert embedded == ["Je lis le Lobby"]  # the items' vectors were kept
        embedded.clear()
        Fact.all_objects.filter(pk=first.item.pk).update(value="Je peux écrire dans le Lobby")
        fact_candidates(key="y", value="Je lis le Lobby", kind=FactKind.SELF)
        assert len(embedded) == 2 and "Je peux écrire dans le Lobby" in embedded[1]
    finally:
        vector_store_reset()
        dedup._compared.clear()


def test_past_the_cap_the_agents_items_are_not_compared_unchecked(
    no_llm, local_embedder, settings, monkeypatch
):
    """More self items than can be embedded on the spot: the check cannot be made, so
    the statement is kept unchecked as with no vectors (compared next time), and a
    seed would stop."""
    from memory.exceptions import StoreUnavailable
    from memory.services import dedup
    from memory.services.dedup import fact_candidates
    from memory.stores.vectors import vector_store_reset

    agent_item_store(kind=FactKind.SELF, category="capability", content=SELF_TEXT)
    agent_item_store(kind=FactKind.SELF, category="context", content="Je parle français")
    monkeypatch.setattr(dedup, "AGENT_ITEMS_COMPARED_MAX", 1)
    vector_store_reset()
    settings.QDRANT_URL = "http://127.0.0.1:9"
    settings.QDRANT_TIMEOUT_S = 1
    try:
        with pytest.raises(StoreUnavailable):
            fact_candidates(key="x", value=SELF_TEXT, kind=FactKind.SELF)
    finally:
        vector_store_reset()


def test_the_facts_api_stores_the_agents_items_with_dedup(agent_api, no_llm):
    body = {"kind": "goal", "category": "connection", "value": "J'aimerais parler à David"}

    created = agent_api.post("/api/v1/memory/facts", body, format="json")
    again = agent_api.post("/api/v1/memory/facts", body, format="json")

    assert created.status_code == 201, created.json()
    assert again.status_code == 200
    assert created.json()["key"] == again.json()["key"]
    assert (created.json()["kind"], created.json()["category"]) == ("goal", "connection")
    assert Fact.all_objects.filter(kind="goal").count() == 1
    assert not Fact.objects.exists()
    listed = agent_api.get("/api/v1/memory/facts?kind=goal").json()["results"]
    assert [f["value"] for f in listed] == ["J'aimerais parler à David"]


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"kind": "self", "value": "Je vole"}, "category", "Ce champ est obligatoire pour un"),
        (
            {"kind": "goal", "category": "limitation", "value": "x"},
            "category",
            "Catégorie invalide",
        ),
        ({"kind": "self", "category": "context", "value": "x", "key": "k"}, "key", "ne s'applique"),
        ({"key": "ville", "value": "Paris", "category": "context"}, "category", "pas de catégorie"),
        ({"value": "Paris"}, "key", "obligatoire pour un fait du propriétaire"),
    ],
)
def test_the_facts_api_refuses_a_bad_agent_item_in_french(agent_api, body, field, message):
    response = agent_api.post("/api/v1/memory/facts", body, format="json")
    assert response.status_code == 400
    assert message in json.dumps(response.json(), ensure_ascii=False)
    assert field in json.dumps(response.json())
    assert not Fact.all_objects.exists()


def test_forgetting_a_topic_takes_the_agents_items_about_it(vector_store, local_embedder, no_llm):
    from memory.services.forgetting import topic_forget
    from memory.services.retrieval.block import agent_summary_lines

    relation = agent_item_store(
        kind="self", category="relation", content="David me taquine souvent"
    )
    other = agent_item_store(kind="self", category="context", content="Je vis dans Organizer")
    index_rows(KIND_FACT, [relation.item.id, other.item.id])

    result = topic_forget(topic="David", actor="user")

    assert result.as_dict()["counts"]["facts"] == 1
    relation.item.refresh_from_db()
    assert relation.item.forgetting_id is not None
    hits, _ = agent_item_search(kind="self", query="David me taquine")
    assert [h.item.pk for h in hits] == [other.item.pk]
    selves, _ = agent_summary_lines()
    assert [line.text for line in selves] == ["Je vis dans Organizer"]


def test_the_export_carries_the_agents_items_and_the_import_brings_them_back(no_llm):
    from memory.services.portability import export_lines
    from memory.services.portability_import import memory_import_lines

    fact_store(key="ville", value="Il habite à Lyon")
    item = agent_item_store(kind="goal", category="connection", content="Parler à David").item
    agent_item_delete(kind="goal", item_id=item.pk, reason="fait", actor="user")
    agent_item_store(kind="self", category="context", content="Je vis dans Organizer")
    lines = list(export_lines())
    records = [json.loads(line) for line in lines if '"type":"fact"' in line]
    assert [(r["key"], r.get("kind"), r.get("category")) for r in records] == [
        ("ville", None, None),
        (agent_item_key(kind="self", content="Je vis dans Organizer"), "self", "context"),
    ]
    Fact.all_objects.all().delete()

    report = memory_import_lines(lines)

    assert report.created["fact"] == 2
    assert list(Fact.objects.values_list("key", flat=True)) == ["ville"]
    [imported] = Fact.all_objects.filter(kind="self")
    assert (imported.category, imported.value) == ("context", "Je vis dans Organizer")


def test_the_agent_never_rewrites_an_item_whose_text_the_owner_wrote(
    vector_store, local_embedder, no_llm
):
    owner_wrote = agent_item_store(
        kind="self",
        category="limitation",
        content="Je ne peux pas chercher sur le web",
        actor="user",
    ).item

    result = agent_item_store(
        kind="self", category="capability", content="Je peux chercher sur le web"
    )

    assert result.action == "added"
    owner_wrote.refresh_from_db()
    assert (owner_wrote.category, owner_wrote.value) == (
        "limitation",
        "Je ne peux pas chercher sur le web",
    )
    assert Fact.all_objects.filter(kind="self").count() == 2


def test_reindex_and_doctor_cover_the_agents_items(vector_store, local_embedder, no_llm):
    from io import StringIO

    from memory.stores.vectors import KNOWLEDGE, point_id

    fact_store(key="ville", value="Il habite à Lyon")
    item = agent_item_store(kind="self", category="context", content="Je vis dans Organizer").item
    call_command("reindex", stdout=StringIO(), stderr=StringIO())

    [point] = vector_store.retrieve(KNOWLEDGE, [point_id(KIND_FACT, item.id)])
    assert (point.payload["type"], point.payload["category"]) == ("self", "context")
    out = StringIO()
    call_command("memory_doctor", stdout=out, stderr=StringIO())
    assert "Tout est cohérent." in out.getvalue()


@pytest.mark.parametrize("message", ["ok", "Qu'est-ce que tu sais faire avec le potager ?"])
def test_the_self_summary_keeps_to_the_block_budget_most_important_first(
    vector_store, local_embedder, no_llm, message
):
    from memory.services.formatting import estimate_tokens
    from memory.services.retrieval import auto_retrieve_preview

    MemorySettings.objects.update_or_create(pk=1, defaults={"block_max_tokens": 150})
    context = agent_item_store(kind="self", category="context", content="Je vis dans Organizer")
    for i in range(6):
        agent_item_store(
            kind="self",
            category="preference",
            content=f"J'aime le sujet numéro {i} " + "et j'en parle longuement " * 8,
        )

    result = auto_retrieve_preview(message=message, channel="whatsapp")

    assert 0 < estimate_tokens(result.prompt_block) <= 150
    assert "- [contexte] Je vis dans Organizer" in result.prompt_block
    selves, goals = result.self_lines
    assert selves[0].text == context.item.value
    assert len(selves) < 7


def test_an_agent_item_with_a_ttl_expires_like_a_fact(no_llm):
    from memory.services.expiry import expired_purge
    from memory.services.facts import fact_update

    goal = agent_item_store(kind="goal", category="connection", content="Parler à David").item
    fact_update(fact=goal, actor="user", ttl="1h")
    Fact.all_objects.filter(pk=goal.pk).update(expires_at=timezone.now() - timedelta(minutes=1))

    assert expired_purge() == 1
    goal.refresh_from_db()
    assert goal.forgotten
    assert goal.revisions.first().reason == RevisionReason.EXPIRED


def test_the_tools_search_counts_what_it_found_as_read_and_deletes_once(mixed):
    """What the agent's tools and the MCP tools share: found items count as read; a delete
    of an item already deleted says so and writes nothing more."""
    _, selves, goal = mixed

    hits, _ = agent_item_recall(kind=FactKind.SELF, query="lire le lobby")
    assert [hit.item.pk for hit in hits] == [selves.pk]
    selves.refresh_from_db()
    goal.refresh_from_db()
    assert (selves.access_count, goal.access_count) == (1, 0)

    item, deleted = agent_item_forget(
        kind=FactKind.SELF, item_id=selves.pk, reason="plus vrai", actor="agent"
    )
    assert deleted and item.forgotten
    revisions = FactRevision.objects.filter(fact=selves).count()
    again, deleted = agent_item_forget(
        kind=FactKind.SELF, item_id=selves.pk, reason="plus vrai", actor="agent"
    )
    assert (again.pk, deleted) == (selves.pk, False)
    assert FactRevision.objects.filter(fact=selves).count() == revisions


# Same words in another order: another key, and a cosine of 1.0 for the hash embedder.
REORDERED = "Les messages de Mickael et le Lobby je peux lire"


class AnotherModel(HashEmbedder):
    """A model switch to the same dimension (the store's record tells them apart)."""

    name = "test:another-model"

    def vector(self, text):
        return list(reversed(super().vector(text)))


@pytest.mark.parametrize(
    "switched",
    [AnotherModel(), HashEmbedder(dimension=32)],
    ids=["same-dimension", "other-dimension"],
)
def test_after_a_model_switch_the_agents_items_are_compared_on_the_spot(
    tmp_path, vector_store, monkeypatch, no_llm, switched
):
    """Before `reindex --recreate`, the knowledge collection holds another model's
    vectors and cannot be searched: the indexed items were then never compared, and a
    seed stored a restatement (found by the audit). They are compared on the spot."""
    install(monkeypatch, HashEmbedder())
    item = agent_item_store(kind=FactKind.SELF, category="capability", content=SELF_TEXT).item
    call_command("reindex", stdout=io.StringIO(), stderr=io.StringIO())
    assert Fact.all_objects.get(pk=item.pk).index_state == "indexed"
    install(monkeypatch, switched)

    found = fact_candidates(key="k", value=REORDERED, kind=FactKind.SELF)
    seed = _write(
        tmp_path / "seed.jsonl",
        [json.dumps({"kind": "self", "category": "capability", "content": REORDERED})],
    )
    out = io.StringIO()
    call_command("memory_seed_self", str(seed), stdout=out)

    assert [c.fact.pk for c in found] == [item.pk]
    assert "0 ajouté," in out.getvalue(), out.getvalue()
    assert Fact.all_objects.filter(kind=FactKind.SELF, forgotten=False).count() == 1


def test_a_seed_longer_than_the_pending_window_checks_its_last_line_against_its_first(
    tmp_path, vector_store, monkeypatch, no_llm
):
    """A seed is one transaction: its items are pending until it commits, and the owner's
    window of pending facts compared on the spot (the 50 latest) let a 52nd line
    restating the 1st through (found by the audit). The agent's items are few: all of
    them are compared."""
    install(monkeypatch, HashEmbedder())
    lines = [json.dumps({"kind": "self", "category": "capability", "content": SELF_TEXT})]
    lines += [
        json.dumps({"kind": "self", "category": "context", "content": f"zz{i} yy{i} ww{i}"})
        for i in range(PENDING_CANDIDATES_MAX)
    ]
    lines.append(json.dumps({"kind": "self", "category": "capability", "content": REORDERED}))
    out = io.StringIO()
    call_command("memory_seed_self", str(_write(tmp_path / "seed.jsonl", lines)), stdout=out)
    assert "1 fusionné." in out.getvalue(), out.getvalue()


def test_past_the_cap_of_pending_items_with_qdrant_searchable_the_latest_are_compared(
    vector_store, monkeypatch, no_llm
):
    """More pending items than dedup embeds on the spot, Qdrant searchable: the latest
    are compared (as the owner's 50 latest), the check is not refused (the agent's
    statement was then added unchecked)."""
    from memory.services import dedup

    install(monkeypatch, HashEmbedder())
    agent_item_store(kind=FactKind.SELF, category="context", content="zz0 yy0 ww0")
    latest = agent_item_store(kind=FactKind.SELF, category="capability", content=SELF_TEXT).item
    monkeypatch.setattr(dedup, "AGENT_ITEMS_COMPARED_MAX", 1)
    assert Fact.all_objects.filter(kind=FactKind.SELF).exclude(index_state="indexed").count() == 2

    found = fact_candidates(key="k", value=REORDERED, kind=FactKind.SELF)

    assert [c.fact.pk for c in found] == [latest.pk]


@pytest.mark.django_db
def test_an_item_the_owner_deleted_then_added_again_comes_back_once():
    """Review: since the owner's new statement of a key the owner forgot starts a new fact,
    an agent item deleted then added again with the same words made a second row, and
    restoring the deleted one left two identical items in the prompt. An agent item's key
    is its words: adding them again brings that item back."""
    from memory.services.facts import fact_forget, fact_restore
    from memory.services.self_memory import agent_item_store

    content = {"kind": "self", "category": "capability", "content": "Je peux lire le Lobby"}
    item = agent_item_store(**content, actor="admin").item
    fact_forget(fact=item, actor="user")
    agent_item_store(**content, actor="user")
    fact_restore(fact=Fact.all_objects.get(pk=item.pk), actor="user")

    assert Fact.all_objects.filter(kind=FactKind.SELF, forgotten=False).count() == 1
