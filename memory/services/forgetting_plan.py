"""What a forget takes, as the owner sees it before (the plan: its dry run and the
confirmation's ids) and as the agent is told after (the result: counts only)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from django.utils import timezone

from memory.models import FactRevision
from memory.models.choices import fact_kind_label, is_owner_kind
from memory.services.forgetting_select import (
    EXCERPT_CHARS,
    Selection,
    contains_all,
    topic_terms,
)
from memory.services.search_hits import excerpt

FORGOTTEN_VALUE = "(déjà oublié)"
IDS_NOT_TAKEN_MESSAGE = (
    "Non pris, car absents de l'aperçu de ce sujet (ou n'en faisant plus partie) : {ids}. "
    "Refaites l'aperçu (dry_run) et confirmez ses ids."
)
AGENT_ITEMS = "élément(s) de l'agent"
NOTES_UNREAD_MESSAGE = (
    "Des notes Obsidian du contexte n'ont pas pu être lues : cet aperçu ne dit pas si "
    "elles parlent de ce sujet."
)
NOTES_LEFT_MESSAGE = (
    "Ces notes Obsidian du contexte parlent de ce sujet : {paths}. Un oubli ne modifie pas "
    "le coffre, elles resteront injectées : retirez-les des notes en contexte (page "
    "Mémoire, section Notes Obsidian, ou leur tag) ou modifiez-les dans Obsidian."
)


def facts_total_text(count: int) -> str:
    """A count of Fact rows that holds both kinds (a result's, a forget's record)."""
    return f"{count} fait(s) ou {AGENT_ITEMS}"


@dataclass
class ForgetPlan:
    """What a forget takes (or would take: the dry run)."""

    topic: str
    selection: str
    exchanges: list[dict] = field(default_factory=list)
    facts: list[dict] = field(default_factory=list)
    summaries: list[dict] = field(default_factory=list)
    history: list[dict] = field(default_factory=list)  # lines of facts it leaves
    messages: int = 0
    # The items ("fact:3", "revision:7") of facts already forgotten one by one: the owner's
    # scope lists them (by their key, their words hidden), the agent's never does.
    forgotten: set[str] = field(default_factory=set)
    # The context notes (fixed or tagged) that speak of the topic: the vault is the owner's
    # and a forget never changes it, so the dry run says which notes still bring it in.
    notes: list[str] = field(default_factory=list)
    notes_unread: bool = False  # notes could not be read: the preview cannot tell
    NOTES_UNREAD = NOTES_UNREAD_MESSAGE  # what /memory says then

    @property
    def empty(self) -> bool:
        return not (self.exchanges or self.facts or self.summaries or self.history)

    def counts(self) -> dict[str, int]:
        return {
            "exchanges": len(self.exchanges),
            "messages": self.messages,
            "facts": len(self.facts),
            "summaries": len(self.summaries),
            "history": len(self.history),
        }

    def item_ids(self) -> list[str]:
        """The ids a confirmation sends back (topic_forget's ``only``)."""
        return (
            [f"message:{e['id']}" for e in self.exchanges]
            + [f"fact:{f['id']}" for f in self.facts]
            + [f"summary:{s['id']}" for s in self.summaries]
            + [f"revision:{h['id']}" for h in self.history]
        )

    def for_agent(self) -> ForgetPlan:
        """This plan as the agent's scope sees it: nothing of a fact already forgotten, as
        if it had never been stored (the agent's token cannot tell it was there, README).
        Its ids are the confirmation's: such a fact stays forgotten, restorable by the owner."""
        return replace(
            self,
            facts=[f for f in self.facts if f"fact:{f['id']}" not in self.forgotten],
            history=[h for h in self.history if f"revision:{h['id']}" not in self.forgotten],
            forgotten=set(),
        )

    def as_dict(self, *, owner: bool = False) -> dict:
        """The preview a caller is shown: the agent's scope (``for_agent``) unless ``owner``."""
        plan = self if owner else self.for_agent()
        return {
            "topic": plan.topic,
            "selection": plan.selection,
            "counts": plan.counts(),
            "ids": plan.item_ids(),
            "exchanges": plan.exchanges,
            "facts": plan.facts,
            "summaries": plan.summaries,
            "history": plan.history,
            "notes": plan.notes,
            "notes_unread": plan.notes_unread,
        }

    def as_text(self, *, owner: bool = False) -> str:
        """The dry run, in French, shown to the owner before a confirmation; through the
        agent (its tools, MCP) unless ``owner``: the agent's scope (``for_agent``)."""
        plan = self if owner else self.for_agent()
        if plan.empty:
            return " ".join(
                filter(None, [f"Rien à oublier sur « {plan.topic} ».", plan.notes_text()])
            )
        lines = [f"Oublier « {plan.topic} » prendrait :"]
        lines.extend(f"- [{e['channel']}] {e['excerpt']}" for e in plan.exchanges[:10])
        lines.extend(f"- {_item_name(f)} : {f['value'][:EXCERPT_CHARS]}" for f in plan.facts[:20])
        lines.extend(f"- résumé [{s['channel']}] {s['excerpt']}" for s in plan.summaries[:5])
        lines.extend(
            f"- {_item_name(h)}, ancienne valeur : {h['excerpt']}" for h in plan.history[:10]
        )
        return "\n".join(filter(None, [*lines, plan.notes_text()]))

    def notes_text(self) -> str:
        """The context notes that speak of the topic, said in French; "" when none."""
        said = [NOTES_LEFT_MESSAGE.format(paths=", ".join(self.notes))] if self.notes else []
        if self.notes_unread:
            said.append(NOTES_UNREAD_MESSAGE)
        return " ".join(said)

    def counts_text(self) -> str:
        """What it takes, counted in French: the owner's facts and the agent's items apart."""
        text = (
            f"{len(self.exchanges)} échange(s), {_facts_text(self.facts)} "
            f"et {len(self.summaries)} résumé(s)"
        )
        if self.history:
            text += (
                f" et {len(self.history)} ancienne(s) valeur(s) {_of_whom(self.history)} "
                "qui restent"
            )
        return text


@dataclass
class ForgetResult:
    """What a forget took. Its text names no forgotten content (it goes to the LLM)."""

    topic: str
    forgetting_id: int | None
    counts: dict[str, int]
    purge_after: datetime | None
    selection: str = "words"
    # Ids the caller confirmed that the topic's preview does not hold (any more): not taken.
    ids_not_taken: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Nothing taken: not even a line of a history (QA: a forget that took old values
        only was told « Rien à oublier » though it was recorded, and undoable)."""
        return not any(self.counts.get(k) for k in ("exchanges", "facts", "summaries", "history"))

    def as_dict(self) -> dict:
        return {
            "forgetting_id": self.forgetting_id,
            "counts": self.counts,
            "purge_after": timezone.localtime(self.purge_after).isoformat()
            if self.purge_after
            else None,
            "selection": self.selection,
            "ids_not_taken": self.ids_not_taken,
        }

    def not_taken_text(self) -> str:
        """The ids confirmed outside the preview, said in French; "" when there are none."""
        if not self.ids_not_taken:
            return ""
        return IDS_NOT_TAKEN_MESSAGE.format(ids=", ".join(self.ids_not_taken))

    def as_text(self) -> str:
        if self.empty:
            return " ".join(filter(None, ["Rien à oublier sur ce sujet.", self.not_taken_text()]))
        c = self.counts
        days = max(0, round((self.purge_after - timezone.now()) / timedelta(days=1)))
        history = f", {c['history']} ligne(s) d'historique" if c.get("history") else ""
        return (
            f"C'est oublié : {c['exchanges']} échange(s), {facts_total_text(c['facts'])}"
            f"{history} et {c['summaries']} résumé(s) ne sont plus dans la mémoire. "
            "Le propriétaire peut "
            f"annuler cet oubli (n° {self.forgetting_id}) depuis la page Mémoire pendant "
            f"{days} jour(s) ; ensuite il est définitif. Ne répète pas ce qui a été oublié."
            + (f" {self.not_taken_text()}" if self.ids_not_taken else "")
        )


def plan_of(topic: str, chosen: Selection) -> ForgetPlan:
    """What ``chosen`` takes, as the owner sees it (the dry run) and the forget records it."""
    terms = topic_terms(topic)
    plan = ForgetPlan(topic=topic, selection=chosen.selection, messages=len(chosen.message_ids))
    plan.exchanges = [
        {
            "id": root.id,
            "channel": root.channel,
            "date": timezone.localtime(root.created_at).isoformat(),
            "excerpt": excerpt(root.content, terms, size=EXCERPT_CHARS),
            "score": chosen.scores.get(f"message:{root.id}"),
        }
        for root in sorted(chosen.exchanges.values(), key=lambda m: (m.created_at, m.id))
    ]
    # A fact already forgotten one by one shows by its key, in the owner's scope only
    # (ForgetPlan.for_agent): its words stay unread, its old values too.
    plan.forgotten = {f"fact:{f.id}" for f in chosen.facts if f.forgotten} | {
        f"revision:{line.id}" for line in chosen.revisions if line.fact.forgotten
    }
    # Each fact says whose memory it is (FactKind): an agent's self item or goal is shown
    # by its kind and text, its key being an internal slug.
    plan.facts = [
        {
            "id": f.id,
            "key": f.key,
            "kind": f.kind,
            "value": FORGOTTEN_VALUE if f.forgotten else f.value,
        }
        for f in chosen.facts
    ]
    plan.summaries = [
        {"id": s.id, "channel": s.channel, "excerpt": excerpt(s.content, terms, size=EXCERPT_CHARS)}
        for s in chosen.summaries
    ]
    plan.history = [
        {
            "id": line.id,
            "key": line.fact.key,
            "kind": line.fact.kind,
            "date": timezone.localtime(line.created_at).isoformat(),
            "excerpt": FORGOTTEN_VALUE
            if line.fact.forgotten
            else excerpt(_line_text(line, terms), terms, size=EXCERPT_CHARS),
        }
        for line in chosen.revisions
    ]
    return plan


def _is_owner(entry: dict) -> bool:
    return is_owner_kind(entry["kind"])


def _item_name(entry: dict) -> str:
    """A fact or a history line named by its kind: the owner's fact with its key, the
    agent's self item or goal by its kind alone (its key is an internal slug)."""
    name = fact_kind_label(entry["kind"])
    return f"{name} {entry['key']}" if _is_owner(entry) else name


def _facts_text(facts: list[dict]) -> str:
    """A plan's facts counted by whose they are (no agent's item: its facts alone)."""
    agent = sum(not _is_owner(f) for f in facts)
    owner = len(facts) - agent
    if not agent:
        return f"{owner} fait(s)"
    if not owner:
        return f"{agent} {AGENT_ITEMS}"
    return f"{owner} fait(s), {agent} {AGENT_ITEMS}"


def _of_whom(lines: list[dict]) -> str:
    """Whose old values history lines are: the owner's facts, the agent's items, or both."""
    agent = sum(not _is_owner(h) for h in lines)
    if not agent:
        return "de faits"
    if agent == len(lines):
        return "d'éléments de l'agent"
    return "de faits et d'éléments de l'agent"


def _line_text(line: FactRevision, terms: list[str]) -> str:
    """The value of a history line that is about the topic (its old one, else its new one)."""
    from memory.services.forgetting_select import contains_all

    texts = (line.old_value, line.new_value, str(line.changes))
    return next((text for text in texts if contains_all(text, terms)), line.old_value)


def context_notes_about(topic: str) -> tuple[list[str], bool]:
    """The paths of the context notes (fixed, then tagged) holding every word of ``topic``
    (the forget's word rule, forgetting_select.contains_all), and whether the notes' source
    could not be read. Never raises."""
    from memory.services.notes import FAILURE_SOURCE, FAILURE_TAG, context_notes_get

    terms = topic_terms(topic)
    if not terms:
        return [], False
    notes = context_notes_get()
    # The whole note: a message about the topic gets the passage speaking of it
    # (notes_relevance.note_injected_text), wherever it is in the note.
    paths = [n.path for n in notes.notes if contains_all(n.content, terms)]
    return paths, bool(notes.failures.keys() & {FAILURE_SOURCE, FAILURE_TAG})
