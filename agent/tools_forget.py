"""The memory__forget tool: a dry run, kept until the owner agrees, then the forget.

A dry run's ids are kept in SQLite (agent.models.ForgetPreview), keyed by the
channel and a digest of the topic's words, so a confirmation that gives the
topic alone takes only what the owner was shown, even after a restart. The
daily purge drops those nobody agreed to (memory.services.retention).
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

from agent.tool_kit import ToolContext

# How long a dry run's ids stand for the owner's agreement given without them: the forget
# turn is left out of the next turn's history (agent.loop), so the agent, told "oui,
# vas-y", usually confirms with the topic alone.
FORGET_PREVIEW_KEEP_S = 3600.0
_PREVIEW_KEEP = timedelta(seconds=FORGET_PREVIEW_KEEP_S)


def _preview_key(context: ToolContext, topic: str) -> tuple[str, str]:
    """A dry run's key: the channel and a digest of the topic's words (a confirmation may
    rephrase it; the words themselves are not kept)."""
    from memory.services.forgetting_select import topic_terms

    words = " ".join(sorted(set(topic_terms(topic))))
    return context.channel, hashlib.sha256(words.encode()).hexdigest()


def _preview_keep(context: ToolContext, topic: str, ids: list[str]) -> None:
    """Keep a dry run's ids (in SQLite: a restart must not lose the owner's agreement's
    scope), replacing the channel's earlier dry run of the topic; drop stale ones."""
    from django.utils import timezone

    from agent.models import ForgetPreview

    channel, digest = _preview_key(context, topic)
    now = timezone.now()
    ForgetPreview.objects.filter(created_at__lte=now - _PREVIEW_KEEP).delete()
    ForgetPreview.objects.update_or_create(
        channel=channel, terms_digest=digest, defaults={"ids": ids, "created_at": now}
    )


def _preview_take(context: ToolContext, topic: str) -> list[str] | None:
    """The ids of the channel's last dry run of the topic, still standing. Not used up: the
    same agreement delivered twice (a chat POST retried after a lost answer, the model
    calling the tool twice) takes those ids again, that is nothing more; used up, the
    second became a new selection and took what the owner was never shown (QA 8a). A new
    dry run of the topic replaces it; it ends with FORGET_PREVIEW_KEEP_S."""
    from django.utils import timezone

    from agent.models import ForgetPreview

    channel, digest = _preview_key(context, topic)
    preview = ForgetPreview.objects.filter(channel=channel, terms_digest=digest).first()
    if preview is None or timezone.now() - preview.created_at >= _PREVIEW_KEEP:
        return None
    return preview.ids


def forget_run(tool_input: dict, context: ToolContext) -> dict:
    """memory__forget: a dry run (kept as the owner's agreement's scope), or the forget."""
    from memory.services.forgetting import topic_forget, topic_forget_preview

    if tool_input.get("dry_run"):
        plan = topic_forget_preview(topic=tool_input["topic"], keep_message_ids=context.message_ids)
        # The LLM reads it: the agent's scope, nothing of a fact already forgotten.
        plan = plan.for_agent()
        ids = plan.item_ids()
        _preview_keep(context, tool_input["topic"], ids)
        return {
            "dry_run": True,
            "summary": plan.as_text(),
            "counts": plan.counts(),
            "ids": ids,  # what a confirmation sends back: nothing else is taken
        }
    # The preview's ids once the owner agreed (the MCP tool's rule): a new selection (an
    # LLM judge asked again) takes nothing the owner was not shown. Without ids, the ids
    # of this channel's last dry run of the topic if there was one, else a direct forget
    # of a clear request: the agent's scope, selected now.
    only = tool_input.get("ids")
    shown = _preview_take(context, tool_input["topic"])
    if only is None:
        only = shown
    result = topic_forget(
        topic=tool_input["topic"],
        actor=context.actor,
        keep_message_ids=context.message_ids,
        only=only,
    )
    # Counts and the undo window only: the reply must name nothing that was forgotten.
    return {"summary": result.as_text(), **result.as_dict()}
