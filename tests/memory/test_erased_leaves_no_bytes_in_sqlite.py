"""A purge or an erasure leaves no byte of the deleted text in SQLite's files either.

Deleting a row frees its bytes without writing over them: an erased fact's value was
still 16 times in the write-ahead log and, once checkpointed, 3 times in the database
file (free space, the keyword index's old segments). Committed for real here (a
transactional test): the files are read as they are on disk.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from memory.models import Fact, Job, Summary
from memory.services.erasing import fact_erase, forgetting_erase
from memory.services.facts import fact_store, fact_update
from memory.services.forgetting import topic_forget
from tests.memory.world import exchange_save, index_everything

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "Quetzalcoatl"


# Read in another process: a file of a database this process holds open must not be opened
# and closed here, which would drop the process's POSIX locks on it (SQLite's rule: another
# process then takes the shared memory as its own and truncates it, and this one's next read
# of it is a SIGBUS, as a first CI run of this file showed).
_COUNT = """
import json, sys
needles = [w.lower().encode() for w in json.loads(sys.argv[1])]
found = {}
for path in sys.argv[2:]:
    with open(path, "rb") as f:
        data = f.read().lower()
    if count := sum(data.count(n) for n in needles):
        found[path.rsplit("/", 1)[-1]] = count
print(json.dumps(found))
"""


def _files_holding(*words: str) -> dict[str, int]:
    """How many times each of SQLite's files (the database, its log, its shared memory)
    holds any of ``words``, case aside (the keyword indexes keep them lower-cased)."""
    database = Path(connection.settings_dict["NAME"])
    paths = [str(p) for p in database.parent.glob(database.name + "*")]
    counted = subprocess.run(
        [sys.executable, "-c", _COUNT, json.dumps(words), *paths],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(counted.stdout)


@pytest.fixture
def memory(vector_store, local_embedder):
    for i in range(30):  # other memories around it, in the same pages
        fact_store(key=f"autre_{i}", value=f"Une autre chose, la numéro {i}, " + "x" * 150)
    return vector_store


def test_an_erased_fact_leaves_no_byte_of_its_values_in_the_sqlite_files(memory):
    fact, _ = fact_store(key="code_portail", value=f"Le code du portail est {SECRET} 4821")
    fact_update(fact=fact, value=f"Le code du portail est {SECRET} 9999", actor="user")
    index_everything()
    assert _files_holding(SECRET)

    fact_erase(fact=Fact.all_objects.get(pk=fact.pk), actor="user")

    assert _files_holding(SECRET, "code_portail") == {}
    assert Fact.objects.filter(key__startswith="autre_").count() == 30
    assert not Job.objects.exists()  # the job ran at the commit, and is gone


def test_an_erased_forget_leaves_no_byte_of_its_exchange_fact_or_summary(memory):
    exchange_save("whatsapp", f"Le voyage à {SECRET} est réservé pour août", "Bon voyage !")
    fact_store(key="voyage_ete", value=f"Voyage à {SECRET} en août avec Sophie")
    Summary.objects.create(channel="whatsapp", content=f"Août : préparation du voyage à {SECRET}.")
    index_everything()
    result = topic_forget(topic=f"le voyage à {SECRET}", actor="user")

    forgetting_erase(forgetting_id=result.forgetting_id, actor="user")

    assert _files_holding(SECRET) == {}


def test_a_scrub_the_log_cannot_take_now_waits_and_runs_again(memory, monkeypatch):
    """A reader or the writer holding the log: Qdrant's part is done, the job waits
    (attempts untouched) and the next run scrubs without rewriting the collections again."""
    from memory.services.jobs import job_run
    from memory.stores import sqlite_scrub as scrub

    fact, _ = fact_store(key="code_portail", value=f"Le code du portail est {SECRET}")
    index_everything()
    busy = {"left": 1}
    real = scrub.sqlite_scrub

    def once_busy(indexes):
        if busy["left"]:
            busy["left"] -= 1
            raise scrub.ScrubBusy("busy")
        return real(indexes)

    monkeypatch.setattr(scrub, "sqlite_scrub", once_busy)
    fact_erase(fact=Fact.all_objects.get(pk=fact.pk), actor="user")
    job = Job.objects.get()
    assert job.attempts == 0 and job.state == "queued"
    assert job.payload.get("rewritten") is True and "scrubbed" not in job.payload
    assert _files_holding(SECRET)

    rewrites = []
    monkeypatch.setattr(memory, "rewrite", lambda name: rewrites.append(name))
    Job.objects.filter(pk=job.pk).update(run_after=None)
    assert job_run(job.pk) == "done"

    assert rewrites == []
    assert _files_holding(SECRET) == {}


def test_an_erasure_scrubs_sqlite_even_while_qdrant_is_down(memory, monkeypatch):
    """Review: the scrub came after Qdrant's part, so a Qdrant down (the job waiting, with
    backoff up to an hour) kept the erased words in the log meanwhile, though scrubbing
    SQLite needs nothing of Qdrant. Once Qdrant answers, the job ends without scrubbing
    again."""
    from memory.exceptions import StoreUnavailable
    from memory.services.jobs import job_run
    from memory.stores import sqlite_scrub as scrub

    fact, _ = fact_store(key="code_portail", value=f"Le code du portail est {SECRET}")
    index_everything()
    delete = memory.delete

    def down(*args, **kwargs):
        raise StoreUnavailable("Qdrant ne répond pas")

    monkeypatch.setattr(memory, "delete", down)
    fact_erase(fact=Fact.all_objects.get(pk=fact.pk), actor="user")

    job = Job.objects.get()
    assert job.state == "queued" and job.payload.get("scrubbed") is True  # waits for Qdrant
    assert _files_holding(SECRET) == {}

    monkeypatch.setattr(memory, "delete", delete)
    scrubs = []
    monkeypatch.setattr(scrub, "sqlite_scrub", scrubs.append)
    Job.objects.filter(pk=job.pk).update(run_after=None)
    assert job_run(job.pk) == "done"
    assert scrubs == []
