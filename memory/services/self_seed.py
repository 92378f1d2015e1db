"""Loading starting self and goal items from a file (``manage.py memory_seed_self FILE``).

The file is JSON (a list of objects) or JSONL (one object a line), each
``{"kind": "self" | "goal", "category": ..., "content": ...}``. The whole file
is checked first: the first bad line stops everything with a French error
naming it, and nothing is stored. Loading is idempotent: an item already there
(the same words, even if the agent has since changed or deleted it) is left as
it is, so a seed run again never undoes what the agent learned; nor does it bring
back an item the owner erased (a purged topic forget, « Effacer maintenant »: its
erasure marks), which only the owner's own write brings back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from memory.exceptions import MemoryServiceError
from memory.models import Actor, Fact
from memory.services.formatting import count_fr

FIELDS = ("kind", "category", "content")
LINE_ERROR = "{where} : {detail}"
NOT_OBJECT = 'un objet JSON {"kind", "category", "content"} est attendu'
BAD_JSON = "JSON invalide ({detail})"
MISSING = "champ « {name} » manquant"
UNKNOWN = "champ inconnu « {name} » (attendus : kind, category, content)"
NOT_TEXT = "le champ « {name} » doit être un texte"
EMPTY_FILE = "Le fichier ne contient aucun élément."
NOT_UTF8 = "Le fichier n'est pas en UTF-8."
# A JSON list names its items by position; JSONL by line.


@dataclass
class SeedItem:
    where: str  # "ligne 3" (JSONL) or "élément 2" (JSON list)
    kind: str
    category: str
    content: str


@dataclass
class SeedReport:
    added: list[SeedItem] = field(default_factory=list)
    present: list[SeedItem] = field(default_factory=list)
    merged: list[SeedItem] = field(default_factory=list)
    erased: list[SeedItem] = field(default_factory=list)


def _decode(text: str, where: str) -> object:
    """One JSON value, read strictly (LineDecoder: the import's reader), or a line error.

    Besides invalid JSON, LineDecoder refuses a field written twice, NaN, a lone
    surrogate and a nesting too deep for the parser (a RecursionError otherwise).
    """
    from memory.services.portability_validate import LineDecoder, line_refusal

    try:
        return json.loads(text, cls=LineDecoder)
    except ValueError as exc:
        if where == "fichier" and isinstance(exc, json.JSONDecodeError):
            where = f"ligne {exc.lineno}"  # a JSON list: the parser knows the line
        detail = line_refusal(exc)
    raise MemoryServiceError(
        LINE_ERROR.format(where=where, detail=BAD_JSON.format(detail=detail))
    ) from None


def _records(text: str) -> list[tuple[str, object]]:
    """(where, decoded value) of each item: "ligne 3" in JSONL, "élément 2" in a JSON list."""
    if text.lstrip().startswith("["):
        values = _decode(text, "fichier")
        return [(f"élément {n}", value) for n, value in enumerate(values, start=1)]
    records = []
    # Cut on "\n" alone, as the import reads its lines (a file's lines). str.splitlines()
    # also cuts on U+2028, U+2029 and \x85, which JSON allows raw inside a string (a valid
    # line was refused), and on \x0b, \x0c and \x1c-\x1e (an error named the wrong line).
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        records.append((f"ligne {number}", _decode(line, f"ligne {number}")))
    return records


def seed_items_parse(text: str) -> list[SeedItem]:
    """The items of a seed file, every one checked, or MemoryServiceError naming the line."""
    from memory.services.self_memory_validate import agent_item_validate

    items = []
    for where, record in _records(text):

        def fail(detail: str, where: str = where) -> MemoryServiceError:
            return MemoryServiceError(LINE_ERROR.format(where=where, detail=detail))

        if not isinstance(record, dict):
            raise fail(NOT_OBJECT)
        for name in record:
            if name not in FIELDS:
                raise fail(UNKNOWN.format(name=name))
        for name in FIELDS:
            if name not in record:
                raise fail(MISSING.format(name=name))
            if not isinstance(record[name], str):
                raise fail(NOT_TEXT.format(name=name))
        try:
            content = agent_item_validate(
                kind=record["kind"], category=record["category"], content=record["content"]
            )
        except MemoryServiceError as exc:
            raise fail(str(exc)) from None
        items.append(SeedItem(where, record["kind"], record["category"], content))
    if not items:
        raise MemoryServiceError(EMPTY_FILE)
    return items


def seed_file_read(path: Path) -> str:
    """The text of a seed file, or MemoryServiceError (French) when it is not UTF-8.

    A leading byte-order mark (some Windows editors write one) is dropped: it means nothing.
    """
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise MemoryServiceError(NOT_UTF8) from None


@transaction.atomic
def self_seed(*, text: str) -> SeedReport:
    """Store the items of a seed file's text that are not there yet (all or nothing).

    Every item goes through the similarity check (dedup_required): a check that cannot
    be made (the embedder down; Qdrant out of reach with more items of the kind than
    dedup compares on the spot) stops the whole seed, nothing stored, rather than add
    items unchecked. Beside `serve` the command has serve run it (serve_link).
    """
    from memory.services.erased_marks import fact_erased_since
    from memory.services.self_memory import agent_item_store
    from memory.services.self_memory_validate import agent_item_key

    items = seed_items_parse(text)
    report = SeedReport()
    for item in items:
        key = agent_item_key(kind=item.kind, content=item.content)
        if Fact.all_objects.filter(key=key).exists():
            report.present.append(item)
            continue
        if fact_erased_since(key=key, value=item.content, moment=None):
            report.erased.append(item)  # erased stays erased (QA 7a: a re-run brought it back)
            continue
        result = agent_item_store(
            kind=item.kind,
            category=item.category,
            content=item.content,
            actor=Actor.SYSTEM,
            use_llm=False,
            dedup_required=True,
        )
        (report.added if result.action == "added" else report.merged).append(item)
    return report


def seed_report_lines(report: SeedReport) -> list[str]:
    """What memory_seed_self prints, wherever the seed ran."""
    lines = [f"{item.where} : fusionné avec un élément existant" for item in report.merged]
    lines.append(
        f"Graine chargée : {count_fr(len(report.added), 'ajouté')}, "
        f"{count_fr(len(report.present), 'déjà présent', 'déjà présents')}, "
        f"{count_fr(len(report.merged), 'fusionné')}. Ils seront indexés par le service "
        "(ou `manage.py reindex`)."
    )
    if report.erased:
        lines.append(
            f"{count_fr(len(report.erased), 'élément effacé', 'éléments effacés')} par le "
            "propriétaire, non rechargé"
            + ("s" if len(report.erased) > 1 else "")
            + " : "
            + ", ".join(item.where for item in report.erased)
            + "."
        )
    return lines
