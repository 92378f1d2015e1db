"""Erased stays erased: a row deleted for good is brought back by no copy made before.

A purge (a forget's undo window over, or "Effacer maintenant") and the owner's
erasure of a fact delete rows and their history. An export taken before, imported
afterwards, and a late extraction drawn from a message written before, must not
bring them back: each erased row leaves a digest (memory.services.erased_marks)
that recognises it, and nothing of its text.
"""

from __future__ import annotations

import json
import unicodedata
from datetime import datetime, timedelta
from datetime import timezone as timezone_of
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from agent.extraction_jobs import extraction_job_enqueue
from memory.models import Actor, ErasedMark, Fact, FactRevision, Message, Summary
from memory.selectors import facts_active
from memory.services.erasing import fact_erase, forgetting_erase
from memory.services.facts import fact_forget, fact_store, fact_update
from memory.services.forgetting import forgettings_purge, topic_forget
from memory.services.jobs import job_run
from memory.services.messages import message_save
from memory.stores.fts import fts_search
from tests.memory.world import exchange_save, index_everything

pytestmark = pytest.mark.django_db

SECRET = "Le code de la porte du garage est B4242Z"


def _run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def _world():
    question = message_save(channel="whatsapp", role="user", content=SECRET)
    message_save(
        channel="whatsapp",
        role="assistant",
        content="Entendu, B4242Z noté",
        reply_to_id=question.id,
    )
    fact_store(key="code_garage", value=SECRET, source_message_id=question.id, actor=Actor.AGENT)
    Summary.objects.create(
        channel="whatsapp",
        content="Il a donné le code de la porte du garage B4242Z",
        message_count=2,
        period_end=timezone.now() - timedelta(days=1),
    )
    fact_store(key="velo", value="Le vélo est gris")


def _nothing_of_it_anywhere():
    assert not Message.all_objects.filter(content__contains="B4242Z").exists()
    assert not Fact.all_objects.filter(value__contains="B4242Z").exists()
    assert not Summary.all_objects.filter(content__contains="B4242Z").exists()
    assert not FactRevision.all_objects.filter(new_value__contains="B4242Z").exists()
    assert fts_search("B4242Z") == []


def _purged(forgetting_id):
    assert forgettings_purge(now=timezone.now() + timedelta(days=30)) == 1


def _erased(forgetting_id):
    forgetting_erase(forgetting_id=forgetting_id, actor=Actor.USER)


@pytest.mark.parametrize("end", [_purged, _erased], ids=["purged", "erased-at-once"])
def test_an_older_export_does_not_bring_back_a_forget_made_final(tmp_path, end):
    _world()
    path = tmp_path / "avant.jsonl"
    _run("memory_export", str(path))
    result = topic_forget(topic="code porte garage", actor=Actor.USER)
    end(result.forgetting_id)
    _nothing_of_it_anywhere()

    out = _run("memory_import", str(path))

    _nothing_of_it_anywhere()
    assert "effacé de cette mémoire" in out and "non réimporté" in out, out
    assert Fact.objects.filter(key="velo").exists()  # what was not forgotten is matched
    assert not any("B4242Z" in m.digest for m in ErasedMark.objects.all())


def test_an_older_export_does_not_bring_back_an_erased_fact(tmp_path):
    fact, _ = fact_store(key="diagnostic", value="Mickael a un diabète de type 2")
    path = tmp_path / "avant.jsonl"
    _run("memory_export", str(path))
    fact_store(key="diagnostic", value="Mickael a un diabète de type 1")  # its history grows
    fact_erase(fact=Fact.objects.get(key="diagnostic"), actor=Actor.USER)

    out = _run("memory_import", str(path))

    assert not Fact.all_objects.filter(key="diagnostic").exists(), out
    assert "fait « diagnostic » : effacé de cette mémoire, non réimporté." in out
    # A new statement of the key, with words never erased, is the owner's news.
    fact_store(key="diagnostic", value="Mickael n'a aucun diabète")
    assert Fact.objects.get(key="diagnostic").value == "Mickael n'a aucun diabète"


def test_an_export_imported_into_a_memory_that_erased_nothing_is_unchanged(tmp_path):
    _world()
    path = tmp_path / "avant.jsonl"
    _run("memory_export", str(path))
    lines = path.read_text(encoding="utf-8").splitlines()
    Message.all_objects.all().delete()
    Summary.all_objects.all().delete()
    FactRevision.all_objects.all().delete()
    Fact.all_objects.all().delete()

    _run("memory_import", str(path))

    assert Fact.objects.filter(key="code_garage").exists()
    assert Message.objects.filter(content=SECRET).exists()
    assert len([json.loads(line) for line in lines]) > 4


@pytest.fixture
def late_extraction(vector_store, local_embedder, fake_anthropic):
    def extract(body: dict) -> str:
        prompt = json.dumps(body["messages"][-1]["content"], ensure_ascii=False)
        found = "4512" in prompt
        fact = {"key": "code_porte", "value": "Le code de la porte est 4512", "type": "fact"}
        return json.dumps({"facts": [fact] if found else []})

    fake_anthropic.handler = extract
    first, _ = exchange_save("whatsapp", "Le code de la porte est 4512", "Noté.")
    fact_store(
        key="code_porte",
        value="Le code de la porte est 4512",
        source_message_id=first.id,
        actor="agent",
    )
    # A second exchange says it again; its extraction waits behind a busy worker.
    question, reply = exchange_save("whatsapp", "Rappel : le code de la porte, c'est 4512", "Oui.")
    job = extraction_job_enqueue(message_ids=[question.id], reply_id=reply.id, channel="whatsapp")
    index_everything()
    return job


def test_a_late_extraction_does_not_bring_back_a_fact_erased_since_its_message(late_extraction):
    fact_erase(fact=Fact.objects.get(key="code_porte"), actor=Actor.USER)

    assert job_run(late_extraction.id) == "done"

    assert not facts_active().filter(value__contains="4512").exists()
    assert not Fact.all_objects.filter(key="code_porte").exists()


def test_a_fact_forgotten_meanwhile_stays_forgotten_too(late_extraction):
    fact_forget(fact=Fact.objects.get(key="code_porte"), actor=Actor.USER)

    assert job_run(late_extraction.id) == "done"

    assert not facts_active().filter(value__contains="4512").exists()


def test_a_message_written_after_the_erasure_is_news(late_extraction):
    fact_erase(fact=Fact.objects.get(key="code_porte"), actor=Actor.USER)
    question, reply = exchange_save("whatsapp", "Nouveau : le code de la porte est 4512", "Ok.")
    job = extraction_job_enqueue(message_ids=[question.id], reply_id=reply.id, channel="whatsapp")

    assert job_run(job.id) == "done"

    assert facts_active().filter(key="code_porte", value__contains="4512").exists()


def test_a_statement_from_a_message_written_after_the_forget_is_news_after_its_purge(
    vector_store, local_embedder
):
    """The marks are dated by the forget, not the purge: a message written during the undo
    window states news, before the purge as after it (a late extraction)."""
    from memory.services.dedup import fact_remember

    old = "Il travaille chez Zorglub Industries à Grenoble"
    fact_store(key="employeur", value=old)
    assert topic_forget(topic="Zorglub Industries", actor=Actor.USER).forgetting_id
    later = message_save(channel="whatsapp", role="user", content="Je bosse toujours chez Zorglub")
    assert forgettings_purge(now=timezone.now() + timedelta(days=30)) == 1

    result = fact_remember(
        key="employeur", value=old, actor=Actor.AGENT, source_message_id=later.id
    )

    assert result.fact.value == old and not result.fact.forgotten


def test_an_erased_text_under_another_key_is_another_fact_to_the_import(tmp_path):
    fact_store(key="ville_naissance", value="Paris")
    path = tmp_path / "avant.jsonl"
    _run("memory_export", str(path))
    fact_erase(fact=Fact.objects.get(key="ville_naissance"), actor=Actor.USER)
    fact_store(key="ville_bureau", value="Lyon")
    other = tmp_path / "autre.jsonl"
    _run("memory_export", str(other))
    text = other.read_text(encoding="utf-8").replace('"ville_bureau"', '"ville_travail"')
    other.write_text(text.replace('"Lyon"', '"Paris"'), encoding="utf-8")

    _run("memory_import", str(other))
    _run("memory_import", str(path))

    assert Fact.objects.get(key="ville_travail").value == "Paris"
    assert not Fact.all_objects.filter(key="ville_naissance").exists()


@pytest.mark.parametrize(
    "stated",
    ["ecole_des_enfants", "ECOLE DES ENFANTS", "e\u0301cole_des_enfants"],
    ids=["extraction-ascii", "other-case-spaced", "accent-typed-apart"],
)
def test_a_late_statement_under_a_key_that_looks_alike_does_not_bring_back_an_erased_fact(
    stated,
):
    """The agent's keys fold (fact_keys.key_as_stored): what it says under « ecole_des_enfants »
    is the owner's « École_des_enfants ». Once that fact is erased there is no fact left to
    fold onto: the erasure's mark must recognise the key in any of its spellings."""
    from memory.services.dedup import FactErased, fact_remember

    said = message_save(channel="whatsapp", role="user", content="Les enfants vont à Jaurès")
    fact_store(key="École_des_enfants", value="École Jean Jaurès", source_message_id=said.id)
    fact_erase(fact=Fact.objects.get(key="École_des_enfants"), actor=Actor.USER)

    with pytest.raises(FactErased):
        fact_remember(
            key=stated, value="Jaurès, en CE2", actor=Actor.AGENT, source_message_id=said.id
        )

    assert not Fact.all_objects.filter(value__contains="Jaurès").exists()


def test_a_mark_left_before_keys_were_composed_still_recognises_the_key():
    """Before migration 0027 a key typed with its accents apart was stored (and erased) as
    typed: its mark is of that spelling. A late statement of the composed key is the same."""
    from memory.services.dedup import FactErased, fact_remember
    from memory.services.erased_marks import fact_key_mark

    said = message_save(channel="whatsapp", role="user", content="Ma ville préférée ?")
    ErasedMark.objects.create(
        digest=fact_key_mark("ville_pre\u0301fe\u0301re\u0301e"), erased_at=timezone.now()
    )

    with pytest.raises(FactErased):
        fact_remember(
            key="ville_préférée", value="Lyon", actor=Actor.AGENT, source_message_id=said.id
        )


def _retyped(path, old: str, new: str):
    """The export at ``path`` with the fact key ``old`` typed as ``new``, and its text in
    capitals with its spaces doubled (edited by hand)."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("type") == "fact" and record.get("key") == old:
            record["key"] = new
            record["value"] = record["value"].upper().replace(" ", "  ")
        lines.append(json.dumps(record, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("retyped", ["MEDECIN", "Médecin", "medecin "])
@pytest.mark.parametrize("end", ["forgotten", "erased"])
def test_an_export_whose_key_was_retyped_does_not_bring_back_a_forgotten_fact(
    tmp_path, retyped, end
):
    """A key typed otherwise in an export (by hand, or by another tool) is the same fact to
    the agent's statements (fact_key_folded): with its text, forgotten or erased here, it
    stays so; under a key that folds alike with another text it is the owner's news."""
    fact_store(key="medecin_traitant", value="Dr Martin, cabinet rue Pasteur")
    path = tmp_path / "avant.jsonl"
    _run("memory_export", str(path))
    fact = Fact.objects.get(key="medecin_traitant")
    if end == "forgotten":
        fact_forget(fact=fact, actor=Actor.USER)
    else:
        fact_erase(fact=fact, actor=Actor.USER)

    out = _run("memory_import", str(_retyped(path, "medecin_traitant", f"{retyped}_traitant")))

    assert not facts_active().filter(value__icontains="martin").exists(), out
    assert Fact.all_objects.filter(value__icontains="martin").count() == (end == "forgotten")
    said = "oublié dans cette mémoire" if end == "forgotten" else "effacé de cette mémoire"
    assert said in out, out


@pytest.mark.parametrize("end", ["forgotten", "erased"])
def test_an_edited_fact_forgotten_since_its_export_stays_so_under_a_retyped_key(tmp_path, end):
    """Review: the import knew a forgotten fact's current text only; the export holds the
    text it had before an edit (its history here, forgotten with it)."""
    fact_store(key="medecin_traitant", value="Dr Martin, cabinet rue Pasteur")
    path = tmp_path / "avant.jsonl"
    _run("memory_export", str(path))
    fact = Fact.objects.get(key="medecin_traitant")
    fact = fact_update(fact=fact, actor=Actor.USER, value="Dr Durand, place Carnot")
    (fact_forget if end == "forgotten" else fact_erase)(fact=fact, actor=Actor.USER)

    out = _run("memory_import", str(_retyped(path, "medecin_traitant", "MEDECIN_traitant")))

    assert not facts_active().filter(value__icontains="martin").exists(), out


def test_a_text_a_forget_took_from_a_history_stays_so_under_a_retyped_key(tmp_path):
    """The forget of « tomates » took the history line of « courses » (edited since to
    « fraises »): the older export's « COURSES » says « tomates » and must stay out."""

    courses, _ = fact_store(key="courses", value="Marché le samedi pour les tomates")
    path = tmp_path / "avant.jsonl"
    _run("memory_export", str(path))
    fact_update(fact=courses, actor=Actor.USER, value="Marché le dimanche pour les fraises")
    assert topic_forget(topic="tomates", actor=Actor.USER).forgetting_id

    out = _run("memory_import", str(_retyped(path, "courses", "COURSES")))

    assert not facts_active().filter(value__icontains="tomates").exists(), out
    assert facts_active().get(key="courses").value == "Marché le dimanche pour les fraises"


def test_a_late_statement_about_a_live_fact_is_not_refused_for_its_erased_look_alike():
    """Review: the owner kept « user_job » and « User Job » apart (stored before the owner's
    look-alike keys were refused) and erased the second; a late statement about the first (a
    fact still here under that very key) was refused as erased. The look-alike marks stand
    only where no fact holds the key stated."""
    from memory.services.dedup import fact_remember

    said = message_save(channel="whatsapp", role="user", content="Boulanger, et avant menuisier")
    fact_store(key="user_job", value="Boulanger", actor=Actor.USER)
    twin, _ = fact_store(key="twin", value="Menuisier autrefois", actor=Actor.USER)
    Fact.all_objects.filter(pk=twin.pk).update(key="User Job")
    fact_erase(fact=Fact.objects.get(key="User Job"), actor=Actor.USER)

    result = fact_remember(
        key="user_job", value="Boulanger à Lyon", actor=Actor.AGENT, source_message_id=said.id
    )

    assert result.fact.key == "user_job"
    assert not Fact.all_objects.filter(value__contains="Menuisier").exists()


def test_a_live_fact_retyped_in_an_export_is_that_fact_not_a_twin(tmp_path):
    """An export whose « velo » was typed « VELO » (text in capitals) imported a second fact
    beside the first, both in the prompt."""
    fact_store(key="velo", value="Le vélo est gris")
    path = tmp_path / "avant.jsonl"
    _run("memory_export", str(path))

    out = _run("memory_import", str(_retyped(path, "velo", "VELO")))

    assert list(Fact.all_objects.values_list("key", flat=True)) == ["velo"], out


def _unaccented(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))


def _texts_retyped(path, word: str):
    """The export at ``path`` with every message and summary holding ``word`` in capitals
    without accents, its spaces doubled and a full stop added, its date written in another
    offset without its fraction of a second (edited by hand). QA: the fraction cut and the
    accents taken off brought them back."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("type") in ("message", "summary") and word in record["content"]:
            content = _unaccented(record["content"]).upper().replace(" ", "  ") + "."
            # QA: punctuation taken out of a word, or spaces out of a number, brought it back.
            record["content"] = content.replace("B4242Z", "B 42 42 Z").replace("'", "")
            moment = datetime.fromisoformat(record["created_at"]).replace(microsecond=0)
            record["created_at"] = moment.astimezone(timezone_of(timedelta(hours=2))).isoformat()
        lines.append(json.dumps(record, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _second(path) -> str:
    """The date of the file's first message, as the import's report writes it."""
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("type") == "message":
            return datetime.fromisoformat(record["created_at"]).isoformat(timespec="seconds")
    raise AssertionError("no message")


@pytest.mark.parametrize("end", ["forgotten", "purged", "erased"])
def test_an_export_whose_messages_were_retyped_does_not_bring_them_back(tmp_path, end):
    """The facts' rule (fact_alike) for messages and summaries: the same moment with the same
    words, whatever their case or spacing, is the row forgotten or erased here."""
    _world()
    path = tmp_path / "avant.jsonl"
    _run("memory_export", str(path))
    result = topic_forget(topic="code porte garage", actor=Actor.USER)
    if end == "purged":
        _purged(result.forgetting_id)
    elif end == "erased":
        _erased(result.forgetting_id)

    out = _run("memory_import", str(_texts_retyped(path, "B4242Z")))

    hidden = end == "forgotten"  # still undoable: the forgotten rows are there, hidden
    # The world's two messages and its summary are all about the code (however retyped).
    assert Message.all_objects.count() == 2 * hidden, out
    assert not Message.objects.exists(), out
    assert Summary.all_objects.count() == hidden, out
    assert not Summary.objects.exists(), out
    said = "oublié dans cette mémoire" if hidden else "effacé de cette mémoire"
    assert f"message du {_second(path)} : {said}, non réimporté." in out, out


def test_a_live_message_retyped_in_an_export_is_this_memorys_message(tmp_path):
    _world()
    path = tmp_path / "avant.jsonl"
    _run("memory_export", str(path))

    out = _run("memory_import", str(_texts_retyped(path, "B4242Z")))

    assert Message.objects.count() == 2, out
    assert Summary.objects.count() == 1, out


@pytest.mark.parametrize("end", ["forgotten", "erased"])
def test_an_erased_fact_whose_text_lost_its_accents_and_gained_a_full_stop_stays_out(tmp_path, end):
    """QA: an erased fact came back when an edited export took its text's accents off or
    added a full stop, with its key as it was or in capitals (a forgotten one did not)."""
    fact_store(key="allergie", value="Allergique au xylophène et aux arachides")
    path = tmp_path / "avant.jsonl"
    _run("memory_export", str(path))
    fact = Fact.objects.get(key="allergie")
    (fact_forget if end == "forgotten" else fact_erase)(fact=fact, actor=Actor.USER)
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("type") == "fact" and record["key"] == "allergie":
            record["key"] = "ALLERGIE"
            record["value"] = _unaccented(record["value"]).replace("xylo", "xy-lo") + "."
        lines.append(json.dumps(record, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    out = _run("memory_import", str(path))

    assert not facts_active().filter(value__icontains="arachides").exists(), out
    assert Fact.all_objects.filter(value__icontains="arachides").count() == (end == "forgotten")


def test_texts_of_no_letter_do_not_all_look_alike():
    """Folded to nothing, « 👍 » would be the forgotten « 🙂 » of the same second."""
    from memory.services.erased_marks import said_alike

    moment = timezone.now()
    row = {"channel": "whatsapp", "role": "user", "author": "", "source": "user"}
    assert said_alike("message", {**row, "created_at": moment, "content": "👍"}) != said_alike(
        "message", {**row, "created_at": moment, "content": "🙂"}
    )


def _export_import(tmp_path, rows_before, between=None):
    """Export what ``rows_before`` wrote, empty the memory of its messages and summaries
    (after ``between``), import the file back; the import's output."""
    rows_before()
    path = tmp_path / "copie.jsonl"
    _run("memory_export", str(path))
    if between is not None:
        between()
    Message.all_objects.all().delete()
    Summary.all_objects.all().delete()
    return _run("memory_import", str(path))


def test_the_same_words_at_the_same_second_in_another_channel_or_role_are_other_rows(tmp_path):
    """Review: the look-alike rule matched the moment and the words only, so a message of
    another channel, role or author at that second with those words (« Merci » from two
    people) was taken for the first and never imported; a summary of another channel too."""
    moment = timezone.now().replace(microsecond=0)

    def rows():
        for channel, role, text in [
            ("whatsapp", "user", "Merci !"),
            ("telegram", "user", "merci"),
            ("whatsapp", "assistant", "MERCI"),
        ]:
            message_save(channel=channel, role=role, content=text, created_at=moment)
        for channel in ("whatsapp", "telegram"):
            Summary.objects.create(
                channel=channel, content="Il a remercié", message_count=1, period_end=moment
            )
        Summary.all_objects.update(created_at=moment)

    out = _export_import(tmp_path, rows)

    assert Message.objects.count() == 3, out
    assert Summary.objects.count() == 2, out


def test_an_erased_message_does_not_keep_out_another_channels_words(tmp_path):
    """Review: its erasure mark as it looks kept out the same words said at that second in
    another channel, from every later import."""
    moment = timezone.now().replace(microsecond=0)

    def rows():
        message_save(
            channel="whatsapp", role="user", content="Code portail 4242", created_at=moment
        )
        message_save(
            channel="telegram", role="user", content="code portail 4242", created_at=moment
        )

    def erase_whatsapps():
        kept = Message.objects.filter(channel="telegram").values_list("id", flat=True)
        result = topic_forget(topic="code portail 4242", actor=Actor.USER, keep_message_ids=kept)
        _erased(result.forgetting_id)

    out = _export_import(tmp_path, rows, between=erase_whatsapps)

    assert list(Message.objects.values_list("channel", flat=True)) == ["telegram"], out


def _edited(path, kind: str, **fields) -> None:
    """The export at ``path`` with ``fields`` written over every record of type ``kind``."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("type") == kind:
            record.update(fields)
        lines.append(json.dumps(record, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("written", ["2026-11-20T09:00:00.123456", "2026-11-20"])
def test_an_import_date_without_its_offset_is_refused(tmp_path, written):
    """QA: a date without its offset was read in the memory's time zone, another moment,
    so a forgotten message written so came back word for word. The README says dates carry
    their offset: the line is refused, and nothing of the file comes in."""
    from memory.services.portability_validate import DATE_WITHOUT_OFFSET

    _world()
    path = tmp_path / "avant.jsonl"
    _run("memory_export", str(path))
    topic_forget(topic="code porte garage", actor=Actor.USER)
    _edited(path, "message", created_at=written)

    with pytest.raises(CommandError) as refused:
        _run("memory_import", str(path))

    assert DATE_WITHOUT_OFFSET.format(name="created_at") in str(refused.value)
    assert not Message.objects.exists()


@pytest.mark.parametrize(
    ("erased", "offered"), [("1,5 degré", "15 degré"), ("-5 °C", "5 °C"), ("+1", "-1")]
)
def test_a_text_that_says_another_thing_is_not_the_erased_one(tmp_path, erased, offered):
    """Review: folding every sign and comma away made « 15 degré » the erased « 1,5 degré »
    (refused as erased) and « 5 °C » the live « -5 °C ». Signs, decimal commas and symbols
    say something: only spacing, joining marks and the final full stop are retyping."""
    fact_store(key="seuil_chauffage", value=erased)
    path = tmp_path / "avant.jsonl"
    _run("memory_export", str(path))
    fact_erase(fact=Fact.objects.get(key="seuil_chauffage"), actor=Actor.USER)
    _edited(path, "fact", value=offered)

    out = _run("memory_import", str(path))

    assert Fact.objects.get(key="seuil_chauffage").value == offered, out


def test_an_erased_exchanges_reply_is_said_erased_not_forgotten(tmp_path):
    """QA: importing an older export after an erasure said « effacé » for each question
    and « oublié dans cette mémoire » for each reply, though nothing was left forgotten."""
    _world()
    path = tmp_path / "avant.jsonl"
    _run("memory_export", str(path))
    result = topic_forget(topic="code porte garage", actor=Actor.USER)
    forgetting_erase(forgetting_id=result.forgetting_id, actor=Actor.USER)

    out = _run("memory_import", str(path))

    assert "oublié dans cette mémoire" not in out, out
    assert out.count("message du") == 2 and "effacé de cette mémoire" in out, out


def _ligatures_unwritten(path):
    """The export at ``path`` with « œ » and « æ » typed « oe » and « ae » (by hand, or by a
    keyboard without them)."""
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("œ", "oe").replace("Œ", "OE").replace("æ", "ae"), "utf-8")
    return path


@pytest.mark.parametrize("kind", ["summary", "message", "fact"])
def test_an_erased_text_retyped_without_its_ligatures_stays_erased(tmp_path, kind):
    """QA: an erased summary « … au cœur de l'hiver … l'œuvre de Hokusai » came back from an
    export retyped « coeur », « oeuvre »: the texts' look (text_folded) kept « œ », which text
    search and the keyword indexes read as « oe »."""
    text = "Au cœur de l'hiver, il a revu l'œuvre de Hokusai et le curriculum vitæ de Zoé"
    if kind == "summary":
        Summary.objects.create(channel="whatsapp", content=text, period_end=timezone.now())
    elif kind == "message":
        message_save(channel="whatsapp", role="user", content=text)
    else:
        fact_store(key="hokusai", value=text)
    path = tmp_path / "avant.jsonl"
    _run("memory_export", str(path))
    result = topic_forget(topic="l'œuvre de Hokusai", actor=Actor.USER)
    forgetting_erase(forgetting_id=result.forgetting_id, actor=Actor.USER)

    out = _run("memory_import", str(_ligatures_unwritten(path)))

    assert "effacé de cette mémoire" in out, out
    assert not Summary.all_objects.filter(content__icontains="hokusai").exists()
    assert not Message.all_objects.filter(content__icontains="hokusai").exists()
    assert not Fact.all_objects.filter(value__icontains="hokusai").exists()


def test_a_mark_left_before_ligatures_were_written_out_still_recognises_a_retyped_copy(tmp_path):
    """Marks left before: of the summary's look with its « œ ». A copy retyped in capitals
    (its look the same then) is still recognised."""
    from memory.services.erased_marks import _mark, said_alike

    text = "Au cœur de l'hiver, l'œuvre de Hokusai"
    summary = Summary.objects.create(channel="whatsapp", content=text, period_end=timezone.now())
    path = tmp_path / "avant.jsonl"
    _run("memory_export", str(path))
    values = {"channel": summary.channel, "created_at": summary.created_at, "content": text}
    legacy = _mark("summary-alike", *said_alike("summary", values, ligatures=False))
    Summary.all_objects.filter(pk=summary.pk).delete()
    ErasedMark.objects.create(digest=legacy, erased_at=timezone.now())
    path.write_text(path.read_text(encoding="utf-8").replace(text, text.upper()), "utf-8")

    out = _run("memory_import", str(path))

    assert "effacé de cette mémoire" in out, out
    assert not Summary.all_objects.exists()


def _authored(path, author: str):
    """The export with every message naming ``author`` (a gateway's copy of the history)."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("type") == "message":
            record["author"] = author
        lines.append(json.dumps(record, ensure_ascii=False))
    authored = path.with_name(f"{author}.jsonl")
    authored.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return authored


@pytest.mark.parametrize("end", [None, _erased], ids=["forgotten", "erased"])
def test_an_export_naming_another_author_does_not_bring_back_a_forgotten_message(tmp_path, end):
    """A message matches a forgotten or erased one whoever it names as its author, as
    POST /messages does (review of 58e8f2d: the import still matched on the author)."""
    _world()
    path = tmp_path / "avant.jsonl"
    _run("memory_export", str(path))
    result = topic_forget(topic="code porte garage", actor=Actor.USER)
    if end is not None:
        end(result.forgetting_id)

    _run("memory_import", str(_authored(path, "Mickael")))

    assert not Message.objects.filter(content__contains="B4242Z").exists()
    assert fts_search("B4242Z") == []
