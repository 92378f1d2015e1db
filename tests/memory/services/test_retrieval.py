"""auto_retrieve: each source, fusion, dedup across turns, logging, and degradation with real failing parts."""

from __future__ import annotations

import time

import pytest
import trustme

from memory.models import Fact, MemoryRetrieval, MemorySettings, Message
from memory.services.facts import fact_store
from memory.services.indexing import KIND_FACT, KIND_MESSAGE, index_rows
from memory.services.messages import message_save
from memory.services.retrieval import auto_retrieve, auto_retrieve_preview
from memory.stores.embedders import embedder_reset
from memory.stores.vectors import vector_store_reset
from tests.fakes.obsidian import FakeNote, FakeObsidianServer
from tests.fakes.voyage import FakeVoyage, Reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder, settings, tmp_path):
    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path / "vault"
    (tmp_path / "vault").mkdir()
    from memory.services.notes import notes_cache_clear

    notes_cache_clear()
    yield vector_store
    notes_cache_clear()


def _exchange(channel, user, reply=None, author=""):
    question = message_save(channel=channel, role="user", content=user, author=author)
    if reply:
        message_save(channel=channel, role="assistant", content=reply, reply_to_id=question.id)
    return question


def _index_all():
    index_rows(
        KIND_MESSAGE,
        list(Message.objects.filter(reply_to__isnull=True).values_list("id", flat=True)),
    )
    index_rows(KIND_FACT, list(Fact.objects.values_list("id", flat=True)))


def _ids(result):
    return [m["id"] for m in result.memories]


def _seed_other_channel_history():
    """Fill mission_control with unrelated messages so whatsapp memories are not its history."""
    for i in range(3):
        _exchange("mission_control", f"Point {i} sur le tableau de bord", "Noté.")


def test_a_whatsapp_memory_enriches_a_mission_control_conversation(world):
    ski = _exchange(
        "whatsapp",
        "Je me suis cassé l'épaule au ski à Luchon",
        "Aïe, repose-toi bien.",
        author="Mickael",
    )
    _seed_other_channel_history()
    _index_all()
    result = auto_retrieve(message="Comment va mon épaule ?", channel="mission_control")
    assert f"message:{ski.id}" in _ids(result)
    memory = next(m for m in result.memories if m["id"] == f"message:{ski.id}")
    assert memory["channel"] == "whatsapp"
    assert memory["relative_time"] == "à l'instant"
    assert set(memory["sources"]) & {"semantic", "keywords"}
    assert "Luchon" in result.prompt_block


def test_the_keyword_source_finds_a_rare_token_semantics_misses(world):
    code = fact_store(key="portail_code", value="Le code du portail est 4821")[0]
    _index_all()
    result = auto_retrieve(message="c'est quoi le 4821 déjà ?", channel="whatsapp")
    memory = next(m for m in result.memories if m["id"] == f"fact:{code.id}")
    assert "keywords" in memory["sources"]


def test_the_t1_source_brings_recent_and_important_facts_and_identity_is_always_there(world):
    name = fact_store(key="user_name", value="Mickael", memory_type="identity")[0]
    goal = fact_store(
        key="goal_marathon", value="Courir le marathon de Bordeaux en avril", memory_type="goal"
    )[0]
    _index_all()
    result = auto_retrieve(message="Où en est mon objectif de marathon ?", channel="whatsapp")
    assert [c["id"] for c in result.core] == [f"fact:{name.id}"]
    memory = next(m for m in result.memories if m["id"] == f"fact:{goal.id}")
    assert "t1" in memory["sources"]
    assert "Faits essentiels" in result.prompt_block


def test_forgotten_and_expired_facts_never_come_back_even_with_a_stale_point(world):
    from memory.services.facts import fact_forget

    secret = fact_store(key="old_code", value="L'ancien code du portail était 1234")[0]
    gone = fact_store(key="mood", value="Mickael est fatigué par le portail", ttl="1h")[0]
    _index_all()  # both have points
    fact_forget(fact=secret, actor="user")
    Fact.objects.filter(pk=gone.pk).update(expires_at="2020-01-01T00:00:00Z")
    result = auto_retrieve(message="le code du portail 1234", channel="whatsapp")
    assert f"fact:{secret.id}" not in _ids(result)
    assert f"fact:{gone.id}" not in _ids(result)


def test_the_channels_own_recent_history_is_not_injected_again(world):
    recent = _exchange("whatsapp", "On a réservé le train pour Lyon vendredi", "Super, bon voyage.")
    _index_all()
    result = auto_retrieve(message="le train pour Lyon", channel="whatsapp")
    assert f"message:{recent.id}" not in _ids(result)
    assert recent.id in [m.pk for m in result.history]


def test_max_results_caps_the_memories(world):
    for i in range(8):
        fact_store(key=f"velo_{i}", value=f"Le vélo numéro {i} est rangé au garage")
    _index_all()
    MemorySettings.load()
    MemorySettings.objects.update(max_results=2)
    result = auto_retrieve(message="où est le vélo au garage ?", channel="whatsapp")
    assert len(result.memories) == 2


def test_system_messages_and_the_disabled_setting_skip_everything(world):
    assert auto_retrieve(message="Rappel automatique", channel="whatsapp", source="system") is None
    MemorySettings.load()
    MemorySettings.objects.update(auto_retrieve_enabled=False)
    assert auto_retrieve(message="Bonjour", channel="whatsapp") is None
    assert MemoryRetrieval.objects.count() == 0


def _carried(result):
    return [m["id"] for m in result.memories if m.get("carried")]


def test_what_was_injected_is_carried_once_in_the_next_turns_not_found_again(world):
    """The LLM sees it on every turn (the prompt is rebuilt each time), and only once."""
    fact = fact_store(key="dentist", value="Rendez-vous chez le dentiste mardi à 9 heures")[0]
    # Old enough to be outside T1's recent window: only relevance brings it.
    Fact.objects.update(created_at="2026-01-01T00:00:00Z")
    _seed_other_channel_history()
    _index_all()
    first = auto_retrieve(message="quand est le dentiste ?", channel="mission_control")
    assert f"fact:{fact.id}" in _ids(first)
    second = auto_retrieve(message="et le dentiste, c'est quand ?", channel="mission_control")
    assert _ids(second).count(f"fact:{fact.id}") == 1
    assert _carried(second) == [f"fact:{fact.id}"]
    assert "dentiste mardi" in second.prompt_block
    # Another channel has its own injection state.
    other = auto_retrieve(message="quand est le dentiste ?", channel="whatsapp")
    assert f"fact:{fact.id}" in _ids(other)
    # After reinjection_turns more turns that injected other things, it may come back.
    for turn in range(MemorySettings.load().reinjection_turns):
        MemoryRetrieval.objects.create(
            channel="mission_control",
            message_preview=f"tour {turn}",
            memories=[{"id": "fact:999999"}],
        )
    again = auto_retrieve(message="quand est le dentiste ?", channel="mission_control")
    assert f"fact:{fact.id}" in _ids(again)


def test_a_near_duplicate_of_an_injected_memory_is_not_injected(world):
    fact = fact_store(key="gate", value="Le code du portail est 4821")[0]
    twin = _exchange("whatsapp", "Le code du portail est 4821")  # same text, another memory
    _seed_other_channel_history()
    _index_all()
    first = auto_retrieve(message="le code du portail", channel="mission_control")
    injected = set(_ids(first)) & {f"fact:{fact.id}", f"message:{twin.id}"}
    assert len(injected) == 1  # the twins are not both injected in one turn
    second = auto_retrieve(message="rappelle-moi le code du portail", channel="mission_control")
    # The one injected is carried; its twin (a near-duplicate of it) is not added.
    assert set(_ids(second)) & {f"fact:{fact.id}", f"message:{twin.id}"} == injected
    assert set(_carried(second)) == injected


def test_the_searches_bring_no_vectors_and_the_checks_read_only_those_they_compare(
    world, monkeypatch
):
    """Each hit's vector costs the engine 384 floats built under the GIL: the semantic
    searches ask none, and the near-duplicate checks read only the candidates they
    compare (and the memories carried from the last turns), by the stores' vectors(),
    which copies no payload (the texts: 0.5 ms a message at 100,000 memories)."""
    from memory.stores.vectors import get_vector_store, point_id

    fact = fact_store(key="gate", value="Le code du portail est 4821")[0]
    twin = _exchange("whatsapp", "Le code du portail est 4821")
    for i in range(8):
        fact_store(key=f"topic_{i}", value=f"Sujet numéro {i} sans rapport avec le reste")
    _seed_other_channel_history()
    _index_all()
    store = get_vector_store()
    searched: list[bool] = []
    read: list[str] = []
    search, vectors = store.search, store.vectors

    def spy_search(name, vector, **kwargs):
        searched.append(bool(kwargs.get("with_vectors")))
        return search(name, vector, **kwargs)

    def spy_vectors(name, ids):
        read.extend(ids)
        return vectors(name, ids)

    monkeypatch.setattr(store, "search", spy_search)
    monkeypatch.setattr(store, "vectors", spy_vectors)
    first = auto_retrieve(message="le code du portail", channel="mission_control")

    assert searched and not any(searched)
    twins = {f"fact:{fact.id}", f"message:{twin.id}"}
    assert len(set(_ids(first)) & twins) == 1  # the check still sees both
    assert point_id(KIND_FACT, fact.id) in read and point_id(KIND_MESSAGE, twin.id) in read
    # At most the candidates the check keeps in view (twice max_results), each once.
    assert len(read) == len(set(read)) <= 2 * MemorySettings.load().max_results


def test_a_compaction_does_not_reset_the_injection_state(world):
    fact = fact_store(key="dentist", value="Rendez-vous chez le dentiste mardi à 9 heures")[0]
    _seed_other_channel_history()
    _index_all()
    auto_retrieve(message="quand est le dentiste ?", channel="mission_control")
    Message.objects.filter(channel="mission_control").update(compacted=True)
    second = auto_retrieve(message="le dentiste ?", channel="mission_control")
    assert _carried(second) == [f"fact:{fact.id}"]  # carried, not found anew


def test_every_run_is_logged_with_sources_scores_tokens_and_timings(world):
    fact = fact_store(key="dentist", value="Rendez-vous chez le dentiste mardi à 9 heures")[0]
    (
        world_path := __import__("django.conf").conf.settings.OBSIDIAN_VAULT_PATH / "Profil.md"
    ).write_text("# Profil\nMickael aime le café serré. #makilab")
    _index_all()
    result = auto_retrieve(message="quand est le dentiste ?\nmerci", channel="whatsapp")
    row = MemoryRetrieval.objects.get(pk=result.retrieval_id)
    assert row.channel == "whatsapp"
    assert row.message_preview == "quand est le dentiste ? merci"
    [logged] = [m for m in row.memories if m["id"] == f"fact:{fact.id}"]
    assert set(logged["sources"]) >= {"semantic", "keywords"}
    assert logged["sources"]["semantic"]["rank"] >= 1 and 0 < logged["score"] <= 1
    assert row.notes == [{"path": "Profil.md", "chars": len(result.notes[0]["text"])}]
    assert row.tokens_added == result.tokens_added > 0
    assert {"t1", "keywords", "embed", "qdrant", "fusion", "total"} <= set(row.timings_ms)
    assert row.total_ms > 0
    assert row.failed_sources == {}
    assert world_path.name in result.prompt_block


def test_with_qdrant_and_the_notes_both_down_t1_and_keywords_still_answer(world, settings):
    fact = fact_store(
        key="portail_code", value="Le code du portail est 4821", memory_type="decision"
    )[0]
    settings.OBSIDIAN_API_URL = "https://127.0.0.1:9"  # nothing listens
    settings.OBSIDIAN_API_KEY = "k"
    vector_store_reset()
    settings.QDRANT_URL = "http://127.0.0.1:9"
    settings.QDRANT_TIMEOUT_S = 1
    try:
        result = auto_retrieve(message="le code du portail", channel="whatsapp")
    finally:
        vector_store_reset()
    assert f"fact:{fact.id}" in _ids(result)
    assert "semantic" in result.failed_sources
    assert any(key.startswith("notes") for key in result.failed_sources)
    row = MemoryRetrieval.objects.get(pk=result.retrieval_id)
    assert "semantic" in row.failed_sources


def test_a_hanging_embedding_server_times_out_and_is_recorded(world, settings):
    fact_store(key="portail_code", value="Le code du portail est 4821")
    with FakeVoyage() as voyage:
        voyage.script(*[Reply(delay_s=3.0) for _ in range(3)])
        settings.VOYAGE_API_KEY = "k"
        settings.VOYAGE_BASE_URL = voyage.base_url
        settings.VOYAGE_MAX_RETRIES = 0
        settings.RETRIEVAL_TIMEOUTS_MS = {**settings.RETRIEVAL_TIMEOUTS_MS, "semantic": 300}
        embedder_reset()
        try:
            started = time.monotonic()
            result = auto_retrieve(message="le code du portail", channel="whatsapp")
            elapsed = time.monotonic() - started
        finally:
            embedder_reset()
    assert result.failed_sources["semantic"].startswith("timeout")
    assert elapsed < 2.5  # did not wait for the hanging server
    assert any(m["id"].startswith("fact:") for m in result.memories)


def test_an_embedding_server_answering_500_is_recorded(world, settings):
    from tests.fakes.voyage import error_reply

    with FakeVoyage() as voyage:
        voyage.script(*[error_reply(500, "boom") for _ in range(3)])
        settings.VOYAGE_API_KEY = "k"
        settings.VOYAGE_BASE_URL = voyage.base_url
        settings.VOYAGE_MAX_RETRIES = 0
        embedder_reset()
        try:
            result = auto_retrieve(
                message="Quand est le rendez-vous du dentiste ?", channel="whatsapp"
            )
        finally:
            embedder_reset()
    said = result.failed_sources["semantic"]
    assert "indisponible" in said and "EmbeddingError" not in said  # French, no class


def test_a_hanging_obsidian_server_times_out_and_is_recorded(world, settings, tmp_path):
    ca = trustme.CA()
    with FakeObsidianServer(
        ca, notes={"Profil.md": FakeNote("# Profil #makilab")}, hang=3.0
    ) as server:
        settings.OBSIDIAN_API_URL = server.url
        settings.OBSIDIAN_API_KEY = server.api_key
        settings.OBSIDIAN_CA_CERT = server.ca_cert_file(tmp_path)
        settings.OBSIDIAN_TIMEOUT_S = 5
        settings.RETRIEVAL_TIMEOUTS_MS = {**settings.RETRIEVAL_TIMEOUTS_MS, "notes": 300}
        started = time.monotonic()
        result = auto_retrieve(message="Quand est le rendez-vous du dentiste ?", channel="whatsapp")
        elapsed = time.monotonic() - started
    assert result.failed_sources["notes"].startswith("timeout")
    assert elapsed < 2.5


def test_the_preview_shows_what_would_be_injected_without_logging(world):
    fact = fact_store(key="dentist", value="Rendez-vous chez le dentiste mardi à 9 heures")[0]
    _index_all()
    preview = auto_retrieve_preview(message="le dentiste ?", channel="whatsapp")
    assert f"fact:{fact.id}" in _ids(preview)
    assert preview.retrieval_id is None
    assert MemoryRetrieval.objects.count() == 0
    # Previewing does not count as an injection.
    assert f"fact:{fact.id}" in _ids(auto_retrieve(message="le dentiste ?", channel="whatsapp"))


def test_a_message_naming_a_period_favours_memories_of_that_period(world):
    from datetime import timedelta

    from django.utils import timezone

    old = _exchange("whatsapp", "Makilab : on a choisi Qdrant pour les vecteurs", "Bon choix.")
    recent = _exchange("whatsapp", "Point Makilab : la page mémoire avance bien", "Super.")
    Message.objects.filter(pk__in=[old.id, old.id + 1]).update(
        created_at=timezone.now() - timedelta(days=90)
    )
    Message.objects.filter(pk__in=[recent.id, recent.id + 1]).update(
        created_at=timezone.now() - timedelta(days=7)
    )
    _seed_other_channel_history()
    _index_all()
    result = auto_retrieve(
        message="On s'est dit quoi sur Makilab la semaine dernière ?", channel="mission_control"
    )
    memory = next(m for m in result.memories if m["id"] == f"message:{recent.id}")
    assert "time" in memory["sources"]
    assert _ids(result).index(f"message:{recent.id}") < (
        _ids(result).index(f"message:{old.id}") if f"message:{old.id}" in _ids(result) else 99
    )


def test_newer_first_swaps_only_versions_of_one_topic():
    from datetime import UTC, datetime

    from memory.services.retrieval.ranking import newer_first

    old, new = datetime(2025, 11, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC)
    vectors = {"a": [1.0, 0.0], "b": [0.96, 0.28], "c": [0.0, 1.0]}
    stamps = {"a": old, "b": new, "c": new}
    # b is a newer version of a (cosine 0.96): it goes first; c is another topic: it stays.
    assert newer_first(["a", "b", "c"], vectors=vectors, timestamps=stamps, threshold=0.93) == [
        "b",
        "a",
        "c",
    ]
    assert newer_first(["a", "c"], vectors=vectors, timestamps=stamps, threshold=0.93) == [
        "a",
        "c",
    ]
    # Without a vector (the store is down), the order is kept.
    assert newer_first(["a", "b"], vectors={}, timestamps=stamps, threshold=0.93) == ["a", "b"]


def test_the_newer_version_of_a_fact_is_injected_before_the_older(world):
    from datetime import timedelta

    from django.utils import timezone

    old = fact_store(key="david_home_2025", value="David habite à Bordeaux")[0]
    new = fact_store(key="david_home_2026", value="David habite maintenant à Toulouse")[0]
    Fact.objects.filter(pk=old.pk).update(
        created_at=timezone.now() - timedelta(days=120),
        updated_at=timezone.now() - timedelta(days=120),
    )
    Fact.objects.filter(pk=new.pk).update(
        created_at=timezone.now() - timedelta(days=3), updated_at=timezone.now() - timedelta(days=3)
    )
    _index_all()
    ids = _ids(auto_retrieve(message="Où habite David ?", channel="whatsapp"))
    assert ids.index(f"fact:{new.id}") < ids.index(f"fact:{old.id}")


def test_weak_keyword_hits_are_dropped_next_to_strong_ones():
    from memory.services.retrieval.sources import KEYWORD_RELATIVE_CUT, strong_hits
    from memory.stores.fts import FactFtsHit

    hits = [FactFtsHit(1, 10.0), FactFtsHit(2, 10.0 * KEYWORD_RELATIVE_CUT), FactFtsHit(3, 4.9)]
    assert [h.fact_id for h in strong_hits(hits)] == [1, 2]
    assert strong_hits([]) == []


@pytest.mark.parametrize(
    "message", ["ok", "lol", "👍", "merci !", "Bonne nuit", "haha d'accord", "thanks!"]
)
def test_small_talk_injects_nothing(world, settings, message):
    """No memory, no identity fact, no note: the relevance gate lets "inject nothing" happen."""
    fact_store(key="user_name", value="Mickael", memory_type="identity")
    fact_store(key="dentist", value="Rendez-vous chez le dentiste mardi à 9 heures")
    _exchange("whatsapp", "J'ai mal au dos depuis lundi", "Repose-toi bien.")
    settings.OBSIDIAN_VAULT_PATH.joinpath("Profil.md").write_text("# Profil #makilab\nMickael")
    _index_all()
    result = auto_retrieve(message=message, channel="whatsapp")
    assert (result.memories, result.core, result.notes) == ([], [], [])
    assert result.prompt_block == "" and result.tokens_added == 0
    assert result.gate == "small_talk"
    assert MemoryRetrieval.objects.get(pk=result.retrieval_id).tokens_added == 0


@pytest.mark.parametrize(
    "message",
    [
        "Quelle est la capitale de l'Australie ?",
        "Explique-moi la photosynthèse",
        "combien font 12 fois 7 ?",
    ],
)
def test_a_question_about_nothing_the_memory_holds_injects_nothing(world, message):
    fact_store(key="user_name", value="Mickael", memory_type="identity")
    fact_store(key="dentist", value="Rendez-vous chez le dentiste mardi à 9 heures")
    fact_store(key="bike", value="Le vélo de route est au garage pour un pneu crevé")
    _exchange("whatsapp", "J'ai mal au dos depuis lundi", "Repose-toi bien.")
    _exchange("whatsapp", "On part à Lisbonne en juin avec Sophie", "Super, bon voyage !")
    _index_all()
    result = auto_retrieve(message=message, channel="whatsapp")
    assert result.memories == [] and result.tokens_added == 0
    assert result.gate == "off_topic"


def test_content_words_are_remembered_per_text_and_each_caller_gets_its_own_list():
    """The words of a text are cut once (the message three times a call, the same live
    hits call after call); a caller changing its list changes no later answer, and a
    long text is cut each time, never remembered."""
    from memory.services import relevance

    relevance._content_words_cached.cache_clear()
    first = relevance.content_words("Le vélo de Sophie est au garage, ok ?")
    assert first == ["velo", "sophie", "garage"]
    first.append("intrus")
    assert relevance.content_words("Le vélo de Sophie est au garage, ok ?") == [
        "velo",
        "sophie",
        "garage",
    ]
    assert relevance._content_words_cached.cache_info().hits == 1
    long_text = "garage " * (relevance.CONTENT_WORDS_CACHED_CHARS // 7 + 1)
    assert relevance.content_words(long_text) == ["garage"]
    assert relevance._content_words_cached.cache_info().currsize == 1


def test_a_real_question_still_passes_the_gate(world):
    fact = fact_store(key="dentist", value="Rendez-vous chez le dentiste mardi à 9 heures")[0]
    _index_all()
    result = auto_retrieve(message="c'est quand déjà le dentiste ?", channel="whatsapp")
    assert result.gate == ""
    assert f"fact:{fact.id}" in _ids(result)


def test_the_whole_block_keeps_to_its_token_budget_most_useful_items_first(world, settings):
    """20 tagged notes no longer flood the prompt: identity, then memories, then notes, within budget."""
    vault = settings.OBSIDIAN_VAULT_PATH
    for i in range(19):
        vault.joinpath(f"note-{i:02d}.md").write_text(
            f"# Note {i} #makilab\n" + "Du texte de remplissage sans rapport. " * 20
        )
    vault.joinpath("velo.md").write_text(
        "# Vélo #makilab\nLe dérailleur du vélo de route à régler."
    )
    name = fact_store(key="user_name", value="Mickael", memory_type="identity")[0]
    bike = fact_store(key="bike", value="Le vélo de route est au garage pour le dérailleur")[0]
    _index_all()
    memory_settings = MemorySettings.load()
    memory_settings.block_max_tokens = 400
    memory_settings.save()
    result = auto_retrieve(message="Où en est le dérailleur du vélo ?", channel="whatsapp")
    assert result.tokens_added <= 400
    assert [c["id"] for c in result.core] == [f"fact:{name.id}"]
    assert f"fact:{bike.id}" in _ids(result)
    assert result.notes and result.notes[0]["path"] == "velo.md"
    assert "Mickael" in result.prompt_block and "dérailleur" in result.prompt_block


def test_a_hanging_embedder_does_not_starve_the_notes(world, settings):
    """Embeddings stuck past their timeout pile up in their own pool; the notes still arrive."""
    settings.OBSIDIAN_VAULT_PATH.joinpath("Profil.md").write_text("# Profil #makilab\nMickael")
    settings.RETRIEVAL_TIMEOUTS_MS = {**settings.RETRIEVAL_TIMEOUTS_MS, "semantic": 100}
    with FakeVoyage() as voyage:
        voyage.script(*[Reply(delay_s=2.0) for _ in range(8)])
        settings.VOYAGE_API_KEY = "k"
        settings.VOYAGE_BASE_URL = voyage.base_url
        settings.VOYAGE_MAX_RETRIES = 0
        settings.VOYAGE_TIMEOUT_S = 5
        embedder_reset()
        try:
            results = [
                auto_retrieve(message=f"Où est le dossier numéro {i} ?", channel="whatsapp")
                for i in range(6)
            ]
        finally:
            embedder_reset()
    assert all(r.failed_sources.get("semantic", "").startswith("timeout") for r in results)
    assert all(r.notes and r.notes[0]["path"] == "Profil.md" for r in results[4:])


def test_warming_loads_the_embedder_the_gate_reference_and_the_stores(world):
    from memory.services import relevance
    from memory.services.retrieval import retrieval_warm

    relevance._reference.clear()
    _exchange("whatsapp", "Le vélo est au garage")
    _index_all()
    timings = retrieval_warm()
    assert {"embedder", "stores"} <= set(timings)
    assert relevance._reference  # the reference sentences are embedded once, now


WRITES = {"INSERT", "UPDATE", "DELETE", "REPLACE"}


def test_after_warming_the_first_message_opens_no_collection_and_compiles_nothing(
    world, monkeypatch
):
    """serve warms at start so the first message is as fast as the next: every
    collection a message searches is open by then, the observed rooms' too (opening
    one of 10,000 points took the first message's live source 224 ms), every read is
    compiled and the folding table of accented text is built (the first message took
    215 ms against 40 for the next)."""
    import gc

    import qdrant_edge
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memory.services.retrieval import retrieval_warm
    from memory.stores import fts
    from memory.stores.compiled import CompiledRead
    from memory.stores.vectors import get_vector_store

    observed = Message.objects.create(
        channel="lobby", role="user", observed=True, content="Je pars en Grèce demain"
    )
    index_rows(KIND_MESSAGE, [observed.id])
    fact_store(key="bike", value="Le vélo est au garage")
    _exchange("whatsapp", "Le vélo est au garage", "Noté.")
    _index_all()
    # A new process: nothing open, nothing compiled, no folding table yet.
    vector_store_reset()
    get_vector_store()
    # type(), not isinstance(): a dead weak proxy among the objects raises on the latter.
    for read in [o for o in gc.get_objects() if type(o) is CompiledRead]:
        monkeypatch.setattr(read, "_compiled", {})
    fts._combining_marks.cache_clear()
    MemorySettings.load()  # created by the first read of all, as on any first message
    with CaptureQueriesContext(connection) as queries:
        retrieval_warm()
    # The preview writes nothing: no log row, no access count, no message.
    assert not [q["sql"] for q in queries if q["sql"].split()[0].upper() in WRITES]
    assert MemoryRetrieval.objects.count() == 0
    opened: list[str] = []
    compiled: list[object] = []
    load, make = qdrant_edge.EdgeShard.load, CompiledRead._make

    def spy_load(path, *args, **kwargs):
        opened.append(str(path))
        return load(path, *args, **kwargs)

    def spy_make(read, *args, **kwargs):
        compiled.append(read._build)
        return make(read, *args, **kwargs)

    monkeypatch.setattr(qdrant_edge.EdgeShard, "load", staticmethod(spy_load))
    monkeypatch.setattr(CompiledRead, "_make", spy_make)
    result = auto_retrieve(message="Où part-il en Grèce la semaine dernière ?", channel="whatsapp")
    assert [i["id"] for i in result.live] == [f"message:{observed.id}"]
    assert opened == []
    assert compiled == []
    assert fts._combining_marks.cache_info().currsize == 1


@pytest.mark.parametrize("every_core", [True, False])
def test_the_sql_waits_for_a_query_embedded_on_every_core_and_runs_beside_one_on_a_single_thread(
    world, monkeypatch, settings, every_core
):
    """A query embedded alone runs as a team of every core that meets at a barrier after
    each step: the pre-hook's SQL beside it stalled the team and slowed the embedding by
    more than its own length (10,000 memories: 21.7 ms inside the pre-hook, 13.2 when the
    SQL waits). Then the SQL waits for the vector; on one thread (concurrent callers, an
    indexing batch) it runs beside the embedding as before."""
    import threading

    from memory.services.retrieval import sql_stage
    from memory.stores import embedders, local_engine

    _exchange("whatsapp", "Le vélo de Mickael est au garage", "Noté.")
    _index_all()
    order: list[str] = []
    sql_started = threading.Event()
    real_embed = embedders.LocalEmbedder.embed_query
    real_t1 = sql_stage.t1_context
    real_keywords = sql_stage.keyword_search

    def embed(self, text):
        sql_started.wait(0.5)  # beside the SQL it sees the SQL start; after it, never
        order.append("vector")
        return real_embed(self, text)

    def t1(*args, **kwargs):
        order.append("sql")
        sql_started.set()
        return real_t1(*args, **kwargs)

    def keywords(*args, **kwargs):
        order.append("keywords")
        return real_keywords(*args, **kwargs)

    monkeypatch.setattr(embedders.LocalEmbedder, "embed_query", embed)
    monkeypatch.setattr(sql_stage, "t1_context", t1)
    monkeypatch.setattr(sql_stage, "keyword_search", keywords)
    monkeypatch.setattr(local_engine, "query_gets_every_core", lambda: every_core)

    result = auto_retrieve(message="Où en est le vélo de Mickael ?", channel="mission_control")

    # The keyword search (FTS5, in C without the GIL) before T1's ORM reads, either way.
    assert order == (["vector", "keywords", "sql"] if every_core else ["keywords", "sql", "vector"])
    assert not result.failed_sources
    assert _ids(result)  # the exchange is found either way


@pytest.mark.django_db(transaction=True)
def test_alone_the_facts_keyword_query_runs_beside_the_messages_on_its_own_connection(
    world, monkeypatch
):
    """After a vector embedded on every core, the facts' bm25 runs on another thread and
    connection while this one ranks the messages (both in C, without the GIL), with the
    same ranking; inside the caller's transaction, where another connection would not
    see its rows, and under load, it stays on the caller's connection. The other
    connection follows the database when a throw-away memory comes and goes."""
    import threading

    from django.db import transaction

    from memory.services.retrieval.sources import keyword_search
    from memory.services.throwaway import throwaway_memory
    from memory.stores import fts, local_engine

    fact = fact_store(key="bike", value="Le vélo est au garage")[0]
    _exchange("whatsapp", "Mon vélo rouge a un pneu crevé", "Noté.")
    _seed_other_channel_history()
    _index_all()
    threads: list[str] = []
    found: list[int] = []
    real_facts = fts.fts_search_facts

    def spy(*args, **kwargs):
        threads.append(threading.current_thread().name)
        hits = real_facts(*args, **kwargs)
        found.extend(hit.fact_id for hit in hits)
        return hits

    monkeypatch.setattr(fts, "fts_search_facts", spy)
    every_core = True
    monkeypatch.setattr(local_engine, "query_gets_every_core", lambda: every_core)

    result = auto_retrieve(message="Où est le vélo ?", channel="mission_control")
    assert threads == ["retrieval-facts_0"] and not result.failed_sources
    assert f"fact:{fact.id}" in _ids(result)
    apart = keyword_search("Où est le vélo ?", limit=16, facts_apart=1.0)
    assert apart == keyword_search("Où est le vélo ?", limit=16)
    assert f"fact:{fact.id}" in [i for i, _ in apart]

    threads.clear()
    with transaction.atomic():
        new = fact_store(key="scooter", value="La trottinette est chez Paul")[0]
        auto_retrieve(message="Où est la trottinette ?", channel="mission_control")
        assert threads == [threading.current_thread().name]
        assert new.id in found  # its row, not committed yet, seen by the caller's connection
    every_core = False  # under load the embedding has one thread; the SQL runs beside it
    threads.clear()
    auto_retrieve(message="Où est le vélo ?", channel="mission_control")
    assert threads == [threading.current_thread().name]

    with throwaway_memory():
        other = fact_store(key="boat", value="Le kayak est au lac")[0]
        kayak = keyword_search("Où est le kayak ?", limit=16, facts_apart=1.0)
        assert [i for i, _ in kayak] == [f"fact:{other.id}"]
    assert keyword_search("Où est le kayak ?", limit=16, facts_apart=1.0) == []
    assert keyword_search("Où est le vélo ?", limit=16, facts_apart=1.0) == apart


def test_only_the_bundled_engine_on_every_core_makes_the_sql_wait(world, monkeypatch):
    """Voyage embeds over the network: the SQL overlaps its wait, whatever the cores."""
    from memory.services.retrieval import pipeline
    from memory.stores import embedders, local_engine

    monkeypatch.setattr(local_engine, "query_gets_every_core", lambda: True)
    assert pipeline.embeds_on_every_core()
    monkeypatch.setattr(embedders, "get_embedder", lambda: object())
    assert not pipeline.embeds_on_every_core()


def test_a_retrieval_runs_as_many_statements_whatever_the_memory_holds(world, settings):
    """The pre-hook reads T1 in a bounded number of statements: each source and each
    hydration is one query whatever it finds, never one per memory (about a dozen
    statements, 30-70 µs of Python each on the caller's thread). With ten times the
    exchanges and facts and many hits hydrated: no more statements, and none run more
    than three times (the keyword source maps its hits to their exchanges, the
    hydration reads them, and again in fusion for what the semantic source adds). The
    keyword source reads two statements per index (its words' counts, its ranking), of
    three indexes since the summaries have theirs."""
    import collections
    import re

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def selects(message: str) -> list[str]:
        auto_retrieve(message="Bonjour, que sais-tu ?", channel="whatsapp")  # facts view read
        with CaptureQueriesContext(connection) as queries:
            result = auto_retrieve(message=message, channel="whatsapp")
        assert not result.failed_sources
        assert len(result.memories) >= 3
        # One shape per statement: literals (ids, words, times) are the parameters.
        return [
            re.sub(r"'[^']*'", "?", q["sql"])
            for q in queries
            if q["sql"].lstrip().upper().startswith("SELECT")
        ]

    def seed(first: int, count: int) -> None:
        for i in range(first, first + count):
            _exchange("mission_control", f"Le vélo numéro {i} est au garage de Lyon", "Noté.")
            fact_store(key=f"velo_{i}", value=f"Le vélo {i} est rouge et rangé au garage")
        _index_all()

    seed(0, 3)
    few = selects("Où est le vélo rouge du garage ?")
    seed(3, 27)
    many = selects("Où est le vélo rouge du garage de Lyon ?")
    repeated = {sql: n for sql, n in collections.Counter(many).items() if n > 3}
    assert not repeated, repeated
    assert len(few) <= 18, "\n".join(few)
    assert len(many) <= 18, "\n".join(many)


def test_the_time_source_injects_no_exchange_without_a_point(world):
    """« hier » brings the day's exchanges, but not one the index gives no point
    (index_documents.exchange_wanted): an unanswered small-talk question of the owner,
    or small talk on both sides, carries nothing to inject; a real exchange still comes."""
    from datetime import datetime, time, timedelta
    from zoneinfo import ZoneInfo

    from django.conf import settings as django_settings
    from django.utils import timezone

    tz = ZoneInfo(django_settings.TIME_ZONE)
    yesterday = datetime.combine(
        timezone.now().astimezone(tz).date() - timedelta(days=1), time(12), tzinfo=tz
    )
    real = _exchange("whatsapp", "Makilab : la page mémoire est livrée", "Bravo, c'est noté.")
    unanswered = _exchange("whatsapp", "Tu vas bien ?")
    thanks = _exchange("whatsapp", "Merci !", "D'accord.")
    for i, question in enumerate((real, unanswered, thanks)):
        Message.objects.filter(pk=question.pk).update(created_at=yesterday + timedelta(minutes=i))
        Message.objects.filter(reply_to_id=question.pk).update(
            created_at=yesterday + timedelta(minutes=i, seconds=30)
        )
    _seed_other_channel_history()
    _index_all()
    result = auto_retrieve(
        message="Qu'est-ce qu'on s'est dit sur Makilab hier ?", channel="mission_control"
    )
    assert f"message:{real.id}" in _ids(result)
    assert "time" in next(m for m in result.memories if m["id"] == f"message:{real.id}")["sources"]
    assert f"message:{unanswered.id}" not in _ids(result)
    assert f"message:{thanks.id}" not in _ids(result)
    assert "Tu vas bien" not in result.prompt_block
    assert "D'accord." not in result.prompt_block
