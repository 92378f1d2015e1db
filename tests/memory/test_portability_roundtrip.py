"""Round trip: export a memory, import it into a fresh one, index it: the evaluation's figures are identical.

Each memory is a throw-away one (its own SQLite file and embedded Qdrant
folder, memory.services.throwaway), the evaluation set of memory/eval is
loaded into the first, exported, imported into the second by the JSONL file
only, and indexed there by the indexer with the real local embedder. Every
mode (semantic, text, hybrid) is scored on both, question by question.
"""

from __future__ import annotations

import pytest
from django.test.utils import override_settings

from memory.models import Fact, Message, Summary
from memory.services.evaluation import (
    DATASET_PATH,
    MODES,
    dataset_index,
    dataset_load,
    dataset_store,
    evaluate,
)
from memory.services.notes import notes_cache_clear
from memory.services.portability import memory_export
from memory.services.portability_import import memory_import
from memory.services.throwaway import throwaway_memory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def _natural_keys(ids: dict[str, str]) -> dict[str, tuple]:
    """Eval id -> what identifies its memory in any database (the import's matching keys)."""
    keys = {}
    for eval_id, memory_id in ids.items():
        kind, _, pk = memory_id.partition(":")
        if kind == "fact":
            keys[eval_id] = ("fact", Fact.objects.get(pk=pk).key)
        elif kind == "message":
            m = Message.objects.get(pk=pk)
            keys[eval_id] = ("message", m.channel, m.created_at, m.content)
        elif kind == "summary":
            s = Summary.objects.get(pk=pk)
            keys[eval_id] = ("summary", s.channel, s.created_at, s.content)
        else:  # notes live in the vault, not in the memory
            keys[eval_id] = ("note", memory_id)
    return keys


def _ids_here(keys: dict[str, tuple]) -> dict[str, str]:
    ids = {}
    for eval_id, key in keys.items():
        kind = key[0]
        if kind == "fact":
            ids[eval_id] = f"fact:{Fact.objects.get(key=key[1]).pk}"
        elif kind == "message":
            pk = Message.objects.get(channel=key[1], created_at=key[2], content=key[3]).pk
            ids[eval_id] = f"message:{pk}"
        elif kind == "summary":
            pk = Summary.objects.get(channel=key[1], created_at=key[2], content=key[3]).pk
            ids[eval_id] = f"summary:{pk}"
        else:
            ids[eval_id] = key[1]
    return ids


def _figures(scores) -> list[tuple]:
    return [
        (
            s.mode,
            s.questions,
            s.recall_at_5,
            s.recall_at_10,
            s.mrr,
            s.per_tag,
            s.misses,
            s.negatives,
            s.negatives_silent,
            s.negative_tokens,
        )
        for s in scores
    ]


def test_export_import_reindex_gives_the_same_evaluation_figures(tmp_path, local_embedder):
    data = dataset_load(DATASET_PATH)
    vault = tmp_path / "vault"
    vault.mkdir()
    export = tmp_path / "memoire.jsonl"
    with override_settings(OBSIDIAN_API_URL="", OBSIDIAN_VAULT_PATH=vault):
        with throwaway_memory():
            notes_cache_clear()
            ids = dataset_store(data, vault=vault)
            dataset_index()
            keys = _natural_keys(ids)
            counts = memory_export(path=export)
            before = evaluate(data, ids, modes=MODES)

        with throwaway_memory():
            notes_cache_clear()
            assert not Fact.objects.exists() and not Message.objects.exists()
            report = memory_import(path=export)
            assert report.conflicts == []
            assert report.created["fact"] == counts["fact"]
            pending = Fact.objects.exclude(indexed_version=0).count()
            assert pending == 0  # nothing claims to be indexed before the indexer ran
            dataset_index()
            after = evaluate(data, _ids_here(keys), modes=MODES)
        notes_cache_clear()

    assert _figures(after) == _figures(before)
    hybrid = next(s for s in after if s.mode == "hybrid")
    assert hybrid.questions >= 60 and hybrid.recall_at_10 > 0.5
    print(
        "round trip:",
        {
            s.mode: (round(s.recall_at_5, 3), round(s.recall_at_10, 3), round(s.mrr, 3))
            for s in after
        },
        f"import {report.records} lines at {report.rate:.0f} lines/s",
    )
