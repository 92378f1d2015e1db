"""QA: the auto-retrieval parts of /memory show English words.

« Dernières injections » lists each injection's scores and timings with the
pipeline's internal names: « keywords 2,656 » beside « T1 0,600 » and
« sémantique 1,000 » (the French label map knows « fts », not « keywords »), and
« embed 38,3 ms · fusion 0,2 ms · keywords 2,9 ms · live 0,1 ms · log 0,0 ms ·
prefetch 0,5 ms · qdrant 0,4 ms · t1 2,7 ms · total 43,9 ms ».

When a source is late, the preview box (and the log) says « Sources
indisponibles : semantic (timeout after 1 ms) » — the source's code and an English
reason (memory/services/retrieval/result.py source_collect), reproduced with
MAKILAB_RETRIEVAL_SEMANTIC_TIMEOUT_MS=1 on `serve`.
"""

import html
import re

import pytest

from memory.services.facts import fact_store
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_llm(settings):
    settings.ANTHROPIC_API_KEY = ""


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", fragment))


def _log_part(page: str) -> str:
    start = page.index('id="retrieval-log"')
    return page[start:]


def test_the_injection_log_names_its_sources_and_timings_in_french(
    staff_client, vector_store, local_embedder, eager_tasks
):
    from memory.services.retrieval import auto_retrieve
    from memory.services.retrieval.log import retrieval_logs_wait

    fact_store(key="voiture", value="Une Peugeot 208 grise immatriculée AB-123-CD")
    auto_retrieve(message="Quelle est la couleur de ma Peugeot 208 ?", channel="whatsapp")
    retrieval_logs_wait()

    page = staff_client.get("/memory/retrieval/", **HTMX).content.decode()
    log = _text(_log_part(page))

    assert "Peugeot" in log  # the injection is listed
    for english in ("keywords", "prefetch", "embed ", "total ", "semantic "):
        assert english not in log, english


def test_a_late_source_is_reported_in_french_in_the_preview(
    staff_client, settings, vector_store, local_embedder, eager_tasks, monkeypatch
):
    import time

    from memory.services.retrieval import pipeline

    settings.RETRIEVAL_TIMEOUTS_MS = {**settings.RETRIEVAL_TIMEOUTS_MS, "semantic": 20}
    fact_store(key="sport", value="Mickael fait de l'escalade le mardi soir")
    search = pipeline.semantic_search

    def late(*args, **kwargs):
        time.sleep(0.5)  # late whatever the machine (a 1 ms limit was met by a warm one)
        return search(*args, **kwargs)

    monkeypatch.setattr(pipeline, "semantic_search", late)

    response = staff_client.get(
        "/memory/retrieval/preview/",
        {"message": "Je fais de l'escalade quel soir déjà ?", "channel": "dashboard"},
        **HTMX,
    )

    text = _text(response.content.decode())
    assert "Sources indisponibles" in text  # the late source is reported
    assert "timeout after" not in text
    assert "semantic (" not in text
