"""What a memory could hold before today's rules, made to fit them as an import reads it.

The writers now refuse a fact's or a summary's channel no message could have, a value or a subject of
characters nobody sees, and the compaction dated a summary from its first message by id
to its last (a message recorded late ended its period before it started). A memory that
stored one still holds it, and its export, this memory's own history, must import (into
a new install, after a restore): the import repairs these as it reads them, says so in
its report when the owner's text changes, and keeps its refusals for everything else.
"""

from __future__ import annotations

import re

from memory.models.rules import CHANNEL_MAX, channel_well_formed, shows_nothing
from memory.services.fact_ownership import normalize_subjects

CHANNEL_REWRITTEN = "fait « {key} » : le canal « {old} » devient « {new} »."
CHANNEL_REMOVED = "fait « {key} » : le canal « {old} » est retiré (le fait vaut pour tous)."
SUMMARY_CHANNEL_REWRITTEN = "résumé du {date} : le canal « {old} » devient « {new} »."
VALUE_REWRITTEN = (
    "fait « {key} » : sa valeur n'avait que des caractères invisibles, elle les nomme : « {new} »."
)
_CHANNEL_OUTSIDE = re.compile(r"[^\w.-]+")


def channel_repaired(channel: str) -> str:
    """A channel of the channels' rule (rules.channel_well_formed) closest to ``channel``:
    what the rule refuses becomes « - » (« famille / perso » is « famille-perso »), cut to
    its length; "" (no channel) when nothing is left."""
    cleaned = _CHANNEL_OUTSIDE.sub("-", channel).strip("-._")[:CHANNEL_MAX]
    return cleaned if channel_well_formed(cleaned) else ""


# The fields a revision's changes name: what the history records (fact_revisions), and
# « kind » the history labels too.
CHANGES_UNREADABLE = (
    "fait « {key} » : révision {number} : changements illisibles retirés ({names})."
)


def revision_changes_repaired(key: str, number: int, changes: dict) -> list[str]:
    """A revision's ``changes`` as the history reads them, in place: each a tracked field
    with its [old, new]; the rest is dropped and said (QA: « zzz : 1 → 2 » and
    « expiration : notadate → 5 » showed in a fact's history on /memory)."""
    from memory.services.fact_revisions import TRACKED_FIELDS

    known = {*TRACKED_FIELDS, "kind"}
    dropped = [
        name
        for name, pair in changes.items()
        if name not in known or not (isinstance(pair, list) and len(pair) == 2)
    ]
    for name in dropped:
        del changes[name]
    if not dropped:
        return []
    names = ", ".join(str(name)[:40] for name in dropped[:5])
    return [CHANGES_UNREADABLE.format(key=key, number=number, names=names)]


def fact_repaired(values: dict) -> list[str]:
    """Fit a fact line's ``values`` (record_check's) to today's rules, in place; the report's
    lines for what the owner would see changed."""
    said = []
    key = values["key"]
    channel = values["channel"]
    if channel and not channel_well_formed(channel):
        values["channel"] = new = channel_repaired(channel)
        said.append(
            (CHANNEL_REWRITTEN if new else CHANNEL_REMOVED).format(key=key, old=channel, new=new)
        )
    # Lower case, without repeats or blanks: as every writer stores them.
    values["subjects"] = normalize_subjects(values["subjects"])
    value = values["value"]
    if value.strip() and shows_nothing(value):
        values["value"] = " ".join(f"U+{ord(c):04X}" for c in value if not c.isspace())
        said.append(VALUE_REWRITTEN.format(key=key, new=values["value"]))
    # A fact the older import stored updated before it existed: written when it was made.
    if values["updated_at"] < values["created_at"]:
        values["updated_at"] = values["created_at"]
    return said


def summary_repaired(values: dict) -> list[str]:
    """Fit a summary line's ``values`` to today's rules, in place; the report's lines for
    what the owner would see changed. Its channel is repaired as a fact's is; one with
    nothing left is kept as it is, for the import to refuse (a summary is a channel's).
    A period given from its later end to its earlier one (the compaction dated it by its
    messages' ids) is the period between the two."""
    said = []
    channel = values["channel"]
    new = channel if channel_well_formed(channel) else channel_repaired(channel)
    if new and new != channel:
        values["channel"] = new
        date = values["created_at"].isoformat(timespec="seconds")
        said.append(SUMMARY_CHANNEL_REWRITTEN.format(date=date, old=channel, new=new))
    start, end = values.get("period_start"), values.get("period_end")
    if start is not None and end is not None and end < start:
        values["period_start"], values["period_end"] = end, start
    return said
