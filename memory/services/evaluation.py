"""The retrieval quality evaluation: a labelled French set, loaded into a throw-away memory.

`manage.py memory_eval` loads memory/eval/dataset.json (facts, exchanges on
several channels, summaries, notes over several simulated months, and
questions with the ids of the memories that answer them), indexes it with the
configured embedder, and ranks memories for every question in three modes:

- semantic: the Qdrant search alone (both collections, no score threshold);
- text: the FTS5 keyword source alone (exchanges, facts and summaries);
- hybrid: what auto-retrieval ranks: T1 + semantic (above the settings'
  min_score) + keywords fused by RRF. Identity facts, which auto-retrieval
  always injects ("Faits essentiels"), count as found at rank 1.

It prints recall@5, recall@10 and MRR per mode. Questions answered only by a
note are reported apart: notes are injected by path and tag, not ranked.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from django.test.utils import override_settings

from memory.error_reasons import os_error_reason
from memory.exceptions import MemoryServiceError
from memory.models import (
    Actor,
    Fact,
    FactRevision,
    IndexState,
    MemorySettings,
    Message,
    MessageRole,
    RevisionReason,
    Summary,
)
from memory.services.facts import default_importance

DATASET_PATH = Path(__file__).resolve().parent.parent / "eval" / "dataset.json"
MODES = ("semantic", "text", "hybrid")
RANK_DEPTH = 20


@dataclass
class ModeScore:
    mode: str
    recall_at_5: float = 0.0
    recall_at_10: float = 0.0
    mrr: float = 0.0
    questions: int = 0
    per_tag: dict[str, dict[str, float]] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)
    # Negative questions (no relevant memory: small talk, off-topic), hybrid only:
    # how many injected nothing, and the tokens the whole block added on average.
    negatives: int = 0
    negatives_silent: int = 0
    negative_tokens: float = 0.0


DATASET_UNREADABLE = "Jeu d'évaluation illisible ({path}) : {detail}"
DATASET_NOT_UTF8 = "le fichier n'est pas en UTF-8"
DATASET_BAD_JSON = "JSON invalide ({reason})"
DATASET_SHAPE = "un objet JSON avec les listes « memories » et « questions » est attendu"


def dataset_load(path: Path = DATASET_PATH) -> dict:
    """The dataset, or MemoryServiceError (French) when it is not one.

    Read as an export's line is (LineDecoder: a nesting too deep, a field written twice
    refused in French), a leading byte-order mark dropped.
    """
    from memory.services.portability_validate import LineDecoder, line_refusal

    def unreadable(detail: str) -> MemoryServiceError:
        return MemoryServiceError(DATASET_UNREADABLE.format(path=path, detail=detail))

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8-sig"), cls=LineDecoder)
    except OSError as exc:
        raise unreadable(os_error_reason(exc)) from None
    except UnicodeDecodeError:  # a ValueError too
        raise unreadable(DATASET_NOT_UTF8) from None
    except ValueError as exc:
        raise unreadable(DATASET_BAD_JSON.format(reason=line_refusal(exc, line=True))) from None
    if not (
        isinstance(data, dict)
        and isinstance(data.get("memories"), list)
        and isinstance(data.get("questions"), list)
    ):
        raise unreadable(DATASET_SHAPE)
    return data


def _dt(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _fact_store(memory: dict) -> int:
    """The fact of ``memory``; a key met again is that fact restated (one key, one fact, as
    fact_store has it): its value becomes the newer one, the older kept in its history, and
    both memories are that fact (a set names either). Memories come oldest first."""
    created = _dt(memory["created_at"])
    fields = {
        "value": memory["value"],
        "memory_type": memory["type"],
        "importance": memory.get("importance", default_importance(memory["type"])),
        "subjects": memory.get("subjects", []),
        "channel": memory.get("channel", ""),
    }
    fact = Fact.objects.filter(key=memory["key"]).first()
    if fact is None:
        fact = Fact.objects.create(key=memory["key"], created_at=created, **fields)
    else:
        FactRevision.objects.create(
            fact=fact,
            actor=Actor.AGENT,
            reason=RevisionReason.EXTRACTED,
            old_value=fact.value,
            new_value=memory["value"],
            created_at=created,
        )
    Fact.objects.filter(pk=fact.pk).update(updated_at=created, **fields)
    return fact.pk


def dataset_store(data: dict, *, vault: Path) -> dict[str, str]:
    """Write the dataset's memories into T1 (and notes into ``vault``); eval id -> memory id."""
    ids: dict[str, str] = {}
    for memory in data["memories"]:
        kind = memory["kind"]
        if kind == "fact":
            ids[memory["id"]] = f"fact:{_fact_store(memory)}"
        elif kind == "exchange":
            created = _dt(memory["created_at"])
            question = Message.objects.create(
                channel=memory["channel"],
                role=MessageRole.USER,
                author=memory.get("author", ""),
                content=memory["user"],
                created_at=created,
            )
            if memory.get("assistant"):
                Message.objects.create(
                    channel=memory["channel"],
                    role=MessageRole.ASSISTANT,
                    content=memory["assistant"],
                    reply_to=question,
                    created_at=created,
                )
            ids[memory["id"]] = f"message:{question.pk}"
        elif kind == "summary":
            created = _dt(memory["created_at"])
            summary = Summary.objects.create(
                channel=memory["channel"],
                content=memory["content"],
                created_at=created,
                period_end=created,
            )
            ids[memory["id"]] = f"summary:{summary.pk}"
        elif kind == "note":
            target = vault / memory["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            content = memory["content"]
            if memory.get("tagged") and "#makilab" not in content:
                content += "\n\n#makilab"
            target.write_text(content, encoding="utf-8")
            ids[memory["id"]] = f"note:{memory['path']}"
    return ids


def dataset_index(*, progress: Callable[[str], None] | None = None) -> None:
    from memory.services.indexing import KIND_FACT, KIND_MESSAGE, KIND_SUMMARY, index_rows
    from memory.services.maintenance import source_ids

    for kind in (KIND_MESSAGE, KIND_FACT, KIND_SUMMARY):
        ids = source_ids(kind)
        for start in range(0, len(ids), 32):
            index_rows(kind, ids[start : start + 32])
    pending = sum(
        model.objects.exclude(index_state__in=(IndexState.INDEXED, IndexState.SKIPPED)).count()
        for model in (Fact, Message, Summary)
    )
    if progress:
        progress(f"indexé ; {pending} ligne(s) non indexée(s)")


def _reciprocal_rank(ranked: list[str], relevant: set[str]) -> float:
    for position, item in enumerate(ranked, start=1):
        if item in relevant:
            return 1.0 / position
    return 0.0


def _recall(ranked: list[str], relevant: set[str], k: int) -> float:
    return len(set(ranked[:k]) & relevant) / len(relevant) if relevant else 0.0


def evaluate(
    data: dict,
    ids: dict[str, str],
    *,
    modes: tuple[str, ...] = MODES,
    now: datetime | None = None,
) -> list[ModeScore]:
    from memory.services.retrieval import memory_rank

    now = now or _dt(data["now"])
    memory_settings = MemorySettings.load()
    scores = []
    for mode in modes:
        score = ModeScore(mode=mode)
        tags: dict[str, list[tuple[float, float, float]]] = {}
        for question in data["questions"]:
            if not question["relevant"]:
                if mode == "hybrid":
                    _negative(score, question)
                continue
            # Scored on the memory's ids: a fact restated under its key is one fact, which
            # a set may name by either of its ids (_fact_store).
            relevant = {ids.get(r, r) for r in question["relevant"] if not r.startswith("n-")}
            if not relevant:
                continue
            core_ids, ranked_ids = memory_rank(
                message=question["q"],
                channel=question.get("channel", "mission_control"),
                mode=mode,
                limit=RANK_DEPTH,
                now=now,
                memory_settings=memory_settings,
            )
            ranked = ranked_ids
            # Always-injected facts take no slot: found at rank 1, on top of the k.
            core = set(core_ids) & relevant
            r5, r10 = (
                _recall(ranked, relevant - core, k) * len(relevant - core) / len(relevant)
                + len(core) / len(relevant)
                if relevant - core
                else 1.0
                for k in (5, 10)
            )
            rr = 1.0 if core else _reciprocal_rank(ranked, relevant)
            score.questions += 1
            score.recall_at_5 += r5
            score.recall_at_10 += r10
            score.mrr += rr
            if r10 < 1.0:
                score.misses.append(question["id"])
            for tag in question.get("tags", []):
                tags.setdefault(tag, []).append((r5, r10, rr))
        if score.negatives:
            score.negative_tokens /= score.negatives
        if score.questions:
            score.recall_at_5 /= score.questions
            score.recall_at_10 /= score.questions
            score.mrr /= score.questions
        score.per_tag = {
            tag: {
                "n": len(rows),
                "recall@5": sum(r[0] for r in rows) / len(rows),
                "recall@10": sum(r[1] for r in rows) / len(rows),
                "mrr": sum(r[2] for r in rows) / len(rows),
            }
            for tag, rows in sorted(tags.items())
        }
        scores.append(score)
    return scores


def _negative(score: ModeScore, question: dict) -> None:
    """What the whole pre-hook injects for a question the memory cannot answer."""
    from memory.services.retrieval import auto_retrieve_preview

    result = auto_retrieve_preview(
        message=question["q"], channel=question.get("channel", "mission_control")
    )
    score.negatives += 1
    score.negative_tokens += result.tokens_added
    if not (result.memories or result.core or result.notes):
        score.negatives_silent += 1


def notes_check(data: dict) -> tuple[int, int]:
    """(note questions whose note is injected, note questions)."""
    from memory.services.notes import context_notes_get, notes_cache_clear

    notes_cache_clear()
    injected = {f"n:{n.path}" for n in context_notes_get(use_cache=False).notes}
    paths = {m["id"]: f"n:{m['path']}" for m in data["memories"] if m["kind"] == "note"}
    questions = [q for q in data["questions"] if any(r.startswith("n-") for r in q["relevant"])]
    found = sum(
        1
        for q in questions
        if all(paths.get(r) in injected for r in q["relevant"] if r.startswith("n-"))
    )
    return found, len(questions)


def evaluation_run(
    *, modes: tuple[str, ...] = MODES, path: Path = DATASET_PATH, out: Callable[[str], None] = print
) -> list[ModeScore]:
    """Load the set into a throw-away memory, index it, score every mode."""
    from memory.services.notes import notes_cache_clear
    from memory.services.throwaway import throwaway_memory

    data = dataset_load(path)
    with throwaway_memory() as folder:
        vault = folder / "vault"
        vault.mkdir()
        with override_settings(OBSIDIAN_API_URL="", OBSIDIAN_VAULT_PATH=vault):
            notes_cache_clear()
            ids = dataset_store(data, vault=vault)
            out(
                f"{len(data['memories'])} souvenirs, {len(data['questions'])} questions ; "
                f"embedder : {_embedder_name()}"
            )
            dataset_index(progress=out)
            scores = evaluate(data, ids, modes=modes)
            found, total = notes_check(data)
            out(
                f"notes : {found}/{total} questions sur une note reçoivent leur note "
                "(par chemin ou par tag)"
            )
            notes_cache_clear()
    return scores


def _embedder_name() -> str:
    from memory.stores.embedders import get_embedder

    return get_embedder().name


def scores_table(scores: list[ModeScore]) -> str:
    lines = ["mode       recall@5  recall@10  MRR    (questions)"]  # the metrics' own names
    for s in scores:
        lines.append(
            f"{s.mode:<10} {s.recall_at_5:8.3f}  {s.recall_at_10:9.3f}  {s.mrr:5.3f}  ({s.questions})"
        )
    for s in scores:
        if s.negatives:
            lines.append(
                f"négatives ({s.mode}) : {s.negatives_silent}/{s.negatives} n'injectent rien, "
                f"{s.negative_tokens:.0f} tokens ajoutés en moyenne"
            )
    return "\n".join(lines)
