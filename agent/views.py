"""The dashboard's chat panel, on the mission_control channel.

GET chat/ shows the channel's recent turns (each reply with the memories the
auto-retrieval injected and what it cost); POST chat/send/ answers one message
through the same loop as the API and returns the new turn (htmx), or the page.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import reswap, retarget
from django_htmx.middleware import HtmxDetails

from agent.exceptions import LlmError
from agent.forms import ChatForm
from agent.loop import OBSERVED_STOP_REASON, handle_message
from agent.selectors import ChatTurn, chat_turns
from dashboard.auth import staff_required
from memory.models import Message

CHAT_CHANNEL = "mission_control"
HISTORY_MESSAGES = 30
PAGE_TEMPLATE = "agent/chat.html"
PANEL_TEMPLATE = "agent/_chat.html"
TURN_TEMPLATE = "agent/_turn.html"
ERRORS_TEMPLATE = "agent/_form_errors.html"
OBSERVED_ROOM_MESSAGE = (
    "Le salon « {channel} » est observé : l'agent n'y répond pas (le message est gardé pour "
    "le digest). Arrêtez de l'observer (Mémoire, Salons observés) pour discuter ici."
)


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def chat_panel_context(*, form: ChatForm | None = None) -> dict:
    """The context of templates/agent/_chat.html, for any page that includes the panel."""
    return {
        "chat_channel": CHAT_CHANNEL,
        "chat_turns": chat_turns(channel=CHAT_CHANNEL, limit=HISTORY_MESSAGES),
        "chat_form": form or ChatForm(),
    }


@staff_required
@require_GET
def chat_page(request: HtmxHttpRequest) -> HttpResponse:
    template = PANEL_TEMPLATE if request.htmx else PAGE_TEMPLATE
    return render(request, template, {"nav": "chat", **chat_panel_context()})


def _turn_from_result(result) -> ChatTurn:
    retrieval = result.retrieval
    return ChatTurn(
        questions=list(Message.objects.filter(pk__in=result.message_ids).order_by("id")),
        reply=Message.objects.filter(pk=result.reply_id).first(),
        memories=list(getattr(retrieval, "memories", []) or []),
        tokens_added=int(getattr(retrieval, "tokens_added", 0) or 0),
        calls=result.usage.calls,
        input_tokens=result.usage.input_tokens,
        output_tokens=result.usage.output_tokens,
        cost_usd=result.usage.cost_usd,
    )


@staff_required
@require_POST
def chat_send(request: HtmxHttpRequest) -> HttpResponse:
    form = ChatForm(request.POST)
    if not form.is_valid():
        if request.htmx:
            response = render(request, ERRORS_TEMPLATE, {"chat_form": form}, status=422)
            return retarget(reswap(response, "innerHTML"), "#chat-form-errors")
        return render(
            request, PAGE_TEMPLATE, {"nav": "chat", **chat_panel_context(form=form)}, status=422
        )
    text = form.cleaned_data["message"]
    try:
        result = handle_message(channel=CHAT_CHANNEL, text=text, author=request.user.get_username())
        turn = _turn_from_result(result)
        if result.stop_reason == OBSERVED_STOP_REASON:  # no answer there, by design: say so
            turn.error = OBSERVED_ROOM_MESSAGE.format(channel=result.channel)
    except LlmError as exc:
        # The message is saved; say why there is no answer.
        turn = ChatTurn(
            questions=list(Message.objects.filter(pk__in=exc.message_ids).order_by("id")),
            error=str(exc),
        )
    if request.htmx:
        return render(request, TURN_TEMPLATE, {"turn": turn})
    if turn.error:  # without JavaScript the page it lands on says it (QA: nothing did)
        from django.contrib import messages

        messages.error(request, turn.error)
    return redirect("agent:chat")
