"""Export and import (JSONL, version 1) on a real SQLite with FTS5 and a real embedded Qdrant."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import (
    Actor,
    ChannelSettings,
    Fact,
    FactRevision,
    IndexState,
    MemorySettings,
    Message,
    Summary,
)
from memory.services.channels import channel_settings_set
from memory.services.facts import fact_forget, fact_store, fact_update
from memory.services.forgetting import forget_exchange_exclude, topic_forget
from memory.services.indexing import KIND_FACT, KIND_MESSAGE, KIND_SUMMARY, index_rows
from memory.services.maintenance import source_ids
from memory.services.messages import message_save
from memory.services.portability import FORMAT_NAME, export_lines, memory_export
from memory.services.portability_import import (
    ImportLineError,
    memory_import,
    memory_import_lines,
)
from memory.services.portability_import_records import (
    CONFLICT_FORGOTTEN,
    CONFLICT_RENAMED,
    CONFLICT_VALUE,
)
from memory.services.settings import memory_settings_update
from memory.stores.fts import fts_search

pytestmark = pytest.mark.django_db

# A code no timestamp can contain by chance: "4242" once matched the microseconds of an
# exported date, and the check that the code never leaks failed on a clean export.
FORGOTTEN_TOPIC_TEXT = "Le code de la porte du garage est B4242Z"
EXCLUDED_TEXT = "Oublie tout ce qui concerne la porte du garage"
OWNER_FORGOTTEN_VALUE = "Mickael déteste les endives"
LIVE_TEXT = "Le concert de jazz au parc commence à 20 h samedi"
DIGESTED_TEXT = "Julie organise la sortie vélo de dimanche matin"


def _memory() -> dict:
    """A memory with exchanges, a system message, a summary, facts with history, settings."""
    question = message_save(
        channel="whatsapp", role="user", content="J'ai mal à l'épaule depuis le tennis"
    )
    answer = message_save(
        channel="whatsapp",
        role="assistant",
        content="Repose-toi quelques jours.",
        reply_to_id=question.id,
    )
    message_save(channel="mission_control", role="system", content="Rappel : arrosage à 19 h")
    secret = message_save(channel="whatsapp", role="user", content=FORGOTTEN_TOPIC_TEXT)
    forget_request = message_save(channel="whatsapp", role="user", content=EXCLUDED_TEXT)
    forget_exchange_exclude(message_ids=[forget_request.id])
    fact, _ = fact_store(
        key="blessure_epaule",
        value="Mickael a une tendinite à l'épaule droite",
        memory_type="event",
        subjects=["mickael", "epaule"],
        source_message_id=question.id,
        actor=Actor.AGENT,
    )
    fact_update(fact=fact, actor=Actor.USER, value="Mickael a une tendinite à l'épaule gauche")
    fact_store(key="user_name", value="Le propriétaire s'appelle Mickael", memory_type="identity")
    gone, _ = fact_store(key="legume_deteste", value=OWNER_FORGOTTEN_VALUE)
    fact_forget(fact=gone, actor=Actor.USER)
    Summary.objects.create(
        channel="whatsapp",
        content="Mickael a parlé de sa blessure à l'épaule",
        message_count=2,
        period_end=timezone.now() - timedelta(days=1),
    )
    topic_forget(topic="code porte garage", actor=Actor.USER)
    # An observed room: its messages are live extracts, one of them already digested.
    channel_settings_set(channel="lobby", observed=True)
    message_save(channel="lobby", role="user", author="david", content=LIVE_TEXT)
    digested = message_save(channel="lobby", role="user", author="julie", content=DIGESTED_TEXT)
    Message.all_objects.filter(pk=digested.pk).update(digested_at=timezone.now())
    memory_settings_update(
        changes={"max_results": 6, "min_score": 0.4, "obsidian_context_notes": ["Profil"]}
    )
    return {"question": question, "answer": answer, "secret": secret}


def _wipe() -> None:
    """An empty memory (a fresh data dir, as far as these tables go)."""
    FactRevision.objects.all().delete()
    Fact.all_objects.all().delete()
    Summary.all_objects.all().delete()
    Message.all_objects.filter(reply_to__isnull=False).delete()
    Message.all_objects.all().delete()
    MemorySettings.objects.filter(pk=1).delete()
    # The room is observed by the file's messages, not by this memory's channel settings.
    ChannelSettings.objects.all().delete()


def _state() -> dict:
    """What an import must reproduce, with ids replaced by what they point at."""
    messages = {
        m.id: (
            m.channel,
            m.role,
            m.author,
            m.source,
            m.content,
            m.created_at,
            m.compacted,
            m.observed,
            m.digested_at,
        )
        for m in Message.objects.all()
    }
    return {
        "messages": sorted(
            (*row, messages.get(m.reply_to_id))
            for m in Message.objects.all()
            for row in [messages[m.id]]
        ),
        "facts": sorted(
            (
                f.key,
                f.value,
                f.memory_type,
                f.importance,
                tuple(f.subjects),
                f.source,
                f.channel,
                f.created_at,
                f.updated_at,
                tuple(f.owner_fields),
                messages.get(f.source_message_id),
                tuple(
                    (
                        r.actor,
                        r.reason,
                        r.old_value,
                        r.new_value,
                        json.dumps(r.changes),
                        r.created_at,
                    )
                    for r in f.revisions.order_by("created_at", "id")
                ),
            )
            for f in Fact.objects.filter(forgotten=False)
        ),
        "summaries": sorted(
            (s.channel, s.content, s.message_count, s.period_end, s.created_at)
            for s in Summary.objects.all()
        ),
        "settings": {
            k: v
            for k, v in vars(MemorySettings.load()).items()
            if not k.startswith("_") and k != "updated_at"
        },
    }


def test_the_export_starts_with_the_header_and_never_contains_forgotten_text(tmp_path):
    _memory()
    path = tmp_path / "memoire.jsonl"
    counts = memory_export(path=path)
    text = path.read_text(encoding="utf-8")
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[0]["format"] == FORMAT_NAME and lines[0]["version"] == 1
    assert lines[0]["exported_at"]
    assert [r["type"] for r in lines[1:3]] == ["settings", "context_notes"]
    assert lines[2]["notes"] == ["Profil.md"]
    assert counts == {
        "settings": 1,
        "context_notes": 1,
        "channel": 1,
        "message": 5,
        "summary": 1,
        "fact": 2,
    }
    for forgotten in (FORGOTTEN_TOPIC_TEXT, EXCLUDED_TEXT, OWNER_FORGOTTEN_VALUE, "B4242Z"):
        assert forgotten not in text
    fact = next(r for r in lines if r.get("key") == "blessure_epaule")
    assert [r["reason"] for r in fact["revisions"]] == ["extracted", "edited"]
    assert fact["revisions"][1]["old_value"] == "Mickael a une tendinite à l'épaule droite"


def _into_an_empty_memory(tmp_path):
    """Export this memory, empty it, import the file: (the state before, the import's report)."""
    before = _state()
    path = tmp_path / "memoire.jsonl"
    memory_export(path=path)
    _wipe()
    return before, memory_import(path=path)


def test_an_import_into_an_empty_memory_rebuilds_the_same_rows_with_fts(tmp_path):
    _memory()
    before, report = _into_an_empty_memory(tmp_path)

    assert _state() == before
    assert report.created == {"message": 5, "summary": 1, "fact": 2, "revision": 3}
    assert report.conflicts == []
    # FTS5 is filled by the same triggers as every insert (accents folded).
    assert [hit.content for hit in fts_search("epaule")] == ["J'ai mal à l'épaule depuis le tennis"]


def test_imported_rows_are_left_pending_and_the_indexer_embeds_them(
    tmp_path, vector_store, local_embedder
):
    from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, LIVE, point_id

    _memory()
    path = tmp_path / "memoire.jsonl"
    memory_export(path=path)
    _wipe()
    memory_import(path=path)

    root = Message.objects.get(content__startswith="J'ai mal")
    assert root.index_state == IndexState.PENDING and root.indexed_version < root.version
    system = Message.objects.get(role="system")
    assert system.index_state == IndexState.SKIPPED
    assert {f.index_state for f in Fact.objects.all()} == {IndexState.PENDING}
    for kind in (KIND_MESSAGE, KIND_FACT, KIND_SUMMARY):
        index_rows(kind, source_ids(kind))
    assert vector_store.count(CONVERSATIONS) == 1
    assert vector_store.count(KNOWLEDGE) == 3
    # The observed room's undigested message is a live extract again; the digested one is not.
    lobby = [point_id(KIND_MESSAGE, m.id) for m in Message.objects.filter(channel="lobby")]
    assert vector_store.count(LIVE) == 1
    assert [hit.payload["content"] for hit in vector_store.retrieve(LIVE, lobby)] == [LIVE_TEXT]
    assert Fact.objects.filter(index_state=IndexState.INDEXED).count() == 2


def test_importing_the_same_file_twice_changes_nothing(tmp_path):
    _memory()
    path = tmp_path / "memoire.jsonl"
    memory_export(path=path)
    _wipe()
    memory_import(path=path)
    state = _state()
    settings_written = MemorySettings.load().updated_at
    versions = sorted(Message.objects.values_list("id", "version"))

    again = memory_import(path=path)

    assert again.created == {}
    assert again.unchanged == {"message": 5, "summary": 1, "fact": 2}
    assert again.settings_changed == []
    assert _state() == state
    assert MemorySettings.load().updated_at == settings_written
    assert sorted(Message.objects.values_list("id", "version")) == versions


def test_an_owner_edit_is_kept_and_reported_and_a_forgotten_fact_stays_forgotten(tmp_path):
    _memory()
    path = tmp_path / "memoire.jsonl"
    memory_export(path=path)
    fact = Fact.objects.get(key="blessure_epaule")
    fact_update(fact=fact, actor=Actor.USER, value="Tendinite guérie en mars")
    fact_forget(fact=Fact.objects.get(key="user_name"), actor=Actor.USER)

    report = memory_import(path=path)

    assert Fact.objects.get(key="blessure_epaule").value == "Tendinite guérie en mars"
    assert Fact.all_objects.get(key="user_name").forgotten
    assert sorted(report.conflicts) == sorted(
        [
            CONFLICT_VALUE.format(key="blessure_epaule"),
            CONFLICT_FORGOTTEN.format(key="user_name"),
        ]
    )
    assert report.created == {}


def test_an_export_made_before_the_owner_renamed_a_fact_does_not_bring_the_old_key_back(
    tmp_path,
):
    """QA: the older file's « ville » was created beside the owner's « ville_natale »: the
    fact twice in the prompt, the search and the next export, once under the name the owner
    replaced. The rename is in the fact's revisions: the same fact, kept, reported."""
    fact, _ = fact_store(key="ville", value="Habite à Lyon", actor=Actor.AGENT)
    path = tmp_path / "memoire.jsonl"
    memory_export(path=path)
    fact_update(fact=Fact.objects.get(pk=fact.pk), actor=Actor.USER, key="ville_natale")

    report = memory_import(path=path)

    assert list(Fact.all_objects.values_list("key", "value")) == [("ville_natale", "Habite à Lyon")]
    assert report.conflicts == [CONFLICT_RENAMED.format(key="ville", new="ville_natale")]
    assert report.created == {}
    fact_forget(fact=Fact.objects.get(pk=fact.pk), actor=Actor.USER)
    assert memory_import(path=path).conflicts == [CONFLICT_FORGOTTEN.format(key="ville")]
    assert Fact.all_objects.count() == 1


def test_another_memorys_fact_under_a_key_the_owner_renamed_here_is_imported(tmp_path):
    """A key renamed here is that fact only for a line stating one of its values: another
    memory's fact that had the same key is news, imported under it (review: every line
    under the old key was dropped as « renommé »)."""
    fact, _ = fact_store(key="ville", value="Habite à Lyon", actor=Actor.AGENT)
    path = tmp_path / "memoire.jsonl"
    memory_export(path=path)
    fact_update(fact=fact, actor=Actor.USER, key="ville_natale")
    fact_update(fact=Fact.objects.get(pk=fact.pk), actor=Actor.USER, value="Née à Lyon")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    stated = next(line for line in lines if line.get("type") == "fact")

    def imported(value: str):
        other = tmp_path / "autre.jsonl"
        other.write_text(
            "\n".join(
                json.dumps(line, ensure_ascii=False)
                for line in [lines[0], {**stated, "value": value}]
            )
            + "\n",
            encoding="utf-8",
        )
        return memory_import(path=other)

    assert imported("HABITE à Lyon.").created == {}  # a value it held: that fact
    report = imported("Habite à Grenoble")

    assert report.created.get("fact") == 1, report
    assert Fact.objects.get(key="ville").value == "Habite à Grenoble"
    assert Fact.objects.get(pk=fact.pk).key == "ville_natale"


def test_since_exports_what_changed_and_keeps_exchanges_whole(tmp_path):
    marks = _memory()
    cut = timezone.now()
    Message.objects.filter(pk=marks["question"].pk).update(created_at=cut - timedelta(days=3))
    Message.objects.filter(pk=marks["answer"].pk).update(created_at=cut)
    late = message_save(
        channel="whatsapp", role="user", content="Et pour le genou ?", created_at=cut
    )
    fact_store(key="genou", value="Mickael a mal au genou")
    records = [json.loads(line) for line in export_lines(since=cut)]
    messages = [r["content"] for r in records if r.get("type") == "message"]
    # The answer is newer than the cut: its (older) question comes with it.
    assert messages == [marks["question"].content, marks["answer"].content, late.content]
    assert [r["key"] for r in records if r.get("type") == "fact"] == ["genou"]
    assert not [r for r in records if r.get("type") == "summary"]


def _valid_lines(tmp_path) -> list[str]:
    _memory()
    path = tmp_path / "memoire.jsonl"
    memory_export(path=path)
    return path.read_text(encoding="utf-8").splitlines()


def _with_message(lines: list[str], **changes) -> list[str]:
    index = next(i for i, line in enumerate(lines) if '"type":"message"' in line)
    record = json.loads(lines[index]) | changes
    return [*lines[:index], json.dumps(record), *lines[index + 1 :]], index + 1


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"role": "robot"}, "champ « role »"),
        ({"created_at": "hier"}, "champ « created_at » : date ISO 8601 attendue."),
        ({"content": "  "}, "champ « content » : Le message est vide."),
        # QA: the API refuses a NUL, the import took it (pages then showed it raw).
        ({"content": "a\u0000b"}, "champ « content » : Le caractère nul n’est pas autorisé."),
        ({"channel": "un canal/avec slash"}, "champ « channel »"),
        ({"reply_to": 999}, "champ « reply_to » : aucun message 999"),
        ({"compacted": "non"}, "champ « compacted » : true ou false attendu."),
        ({"couleur": "bleu"}, "champ(s) inconnu(s) : couleur."),
        ({"observed": "oui"}, "champ « observed » : true ou false attendu."),
        ({"observed": True, "digested_at": "hier"}, "champ « digested_at » : date ISO 8601"),
        ({"type": "photo"}, "type « photo » inconnu"),
    ],
)
def test_a_bad_line_names_its_number_and_nothing_is_imported(tmp_path, change, expected):
    lines, number = _with_message(_valid_lines(tmp_path), **change)
    _wipe()
    with pytest.raises(ImportLineError) as caught:
        memory_import_lines(lines)
    assert str(caught.value).startswith(f"ligne {number} : ")
    assert expected in str(caught.value)
    assert caught.value.line == number
    # All or nothing: the settings and messages of the lines before are rolled back.
    assert not Message.all_objects.exists() and not Fact.all_objects.exists()
    assert not MemorySettings.objects.exists()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"format": "autre", "version": 1}', "ligne 1 : en-tête attendu"),
        ('{"format": "makilab-memory", "version": 2}', "ligne 1 : version 2 non prise en charge"),
        # QA: « version 1 non prise en charge (cette version lit la version 1) » for the text.
        ('{"format": "makilab-memory", "version": "1"}', 'ligne 1 : version "1" non prise'),
        ('{"format": "makilab-memory", "version": true}', "ligne 1 : version true non prise"),
        ('{"format": "makilab-memory", "version": 1.0}', "ligne 1 : version 1.0 non prise"),
        ('{"format": "makilab-memory"}', "ligne 1 : version null non prise"),
        ("{pas du json", "ligne 1 : JSON invalide"),
    ],
)
def test_a_bad_header_is_refused(line, expected):
    with pytest.raises(ImportLineError, match=expected):
        memory_import_lines([line])


def test_a_version_given_as_text_is_said_to_be_the_number():
    with pytest.raises(ImportLineError) as caught:
        memory_import_lines(['{"format": "makilab-memory", "version": "1"}'])

    assert str(caught.value) == (
        'ligne 1 : version "1" non prise en charge (cette version lit la version 1, '
        "un nombre entier)."
    )


def test_a_bad_fact_line_and_a_bad_revision_are_named(tmp_path):
    lines = _valid_lines(tmp_path)
    index = next(i for i, line in enumerate(lines) if '"key":"blessure_epaule"' in line)
    fact = json.loads(lines[index])
    broken = lines[:]
    broken[index] = json.dumps(fact | {"key": "a/b"})
    with pytest.raises(ImportLineError, match=rf"^ligne {index + 1} : champ « key » : La clé"):
        memory_import_lines(broken)
    fact["revisions"][1]["reason"] = "caprice"
    broken[index] = json.dumps(fact)
    with pytest.raises(
        ImportLineError, match=rf"^ligne {index + 1} : révision 2, champ « reason »"
    ):
        memory_import_lines(broken)
    broken[index] = json.dumps(fact | {"importance": 3})
    with pytest.raises(ImportLineError, match="champ « importance »"):
        memory_import_lines(broken)


def test_batches_keep_replies_and_fact_sources_across_their_boundaries(tmp_path, monkeypatch):
    """Rows are inserted by batches; a reply or a fact pointing into any batch gets the right id."""
    import memory.services.portability_import_records as importing

    monkeypatch.setattr(importing, "BATCH", 3)
    _memory()
    for i in range(7):
        question = message_save(channel="sms", role="user", content=f"Question {i} du jardin")
        message_save(
            channel="sms", role="assistant", content=f"Réponse {i}", reply_to_id=question.id
        )
        fact_store(key=f"jardin_{i}", value=f"Fait {i} du jardin", source_message_id=question.id)
    before, report = _into_an_empty_memory(tmp_path)
    assert _state() == before
    assert report.created["message"] == 19 and report.created["fact"] == 9


def test_the_same_message_twice_in_a_file_is_stored_once(tmp_path):
    lines = _valid_lines(tmp_path)
    index = next(i for i, line in enumerate(lines) if '"role":"system"' in line)
    copy = json.loads(lines[index]) | {"id": 10_000}
    _wipe()
    report = memory_import_lines([*lines, json.dumps(copy)])
    assert report.created["message"] == 5 and report.unchanged == {"message": 1}
    assert Message.objects.filter(role="system").count() == 1


def test_an_exchange_forgotten_here_is_not_brought_back_even_in_part(tmp_path):
    marks = _memory()
    path = tmp_path / "memoire.jsonl"
    memory_export(path=path)
    question = marks["question"]
    _wipe()
    # This memory holds the question alone, and forgot it; the file also has the reply.
    again = message_save(
        channel=question.channel,
        role="user",
        content=question.content,
        created_at=question.created_at,
    )
    topic_forget(topic="mal épaule tennis", actor=Actor.USER)
    assert Message.all_objects.get(pk=again.pk).forgetting_id is not None

    report = memory_import(path=path)

    assert not Message.objects.filter(content__in=[question.content, marks["answer"].content])
    assert not Message.all_objects.filter(content=marks["answer"].content).exists()
    assert sum("oublié dans cette mémoire, non réimporté" in c for c in report.conflicts) == 2
    # The fact that came from the forgotten message is imported without its source.
    assert Fact.objects.get(key="blessure_epaule").source_message_id is None


def test_a_summary_holding_a_nul_is_refused_as_the_api_refuses_it(tmp_path):
    """QA: a summary's content with a NUL was imported, then shown raw by /memory's search."""
    lines = _valid_lines(tmp_path)
    index = next(i for i, line in enumerate(lines) if '"type":"summary"' in line)
    record = json.loads(lines[index])
    lines[index] = json.dumps(record | {"content": "résumé\u0000caché"})
    _wipe()
    with pytest.raises(ImportLineError, match=rf"^ligne {index + 1} : champ « content » : Le"):
        memory_import_lines(lines)
    assert not Message.all_objects.exists()
