"""Reads of the memory, shared by the API, the dashboard, the commands and the agent."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.utils import timezone

from memory.exceptions import FactNotFound
from memory.models import Fact, MemorySettings

FACT_NOT_FOUND_MESSAGE = "Aucun fait avec la clé « {key} »."


def facts_active() -> QuerySet[Fact]:
    """Facts that count: neither forgotten nor expired."""
    now = timezone.now()
    return Fact.objects.filter(forgotten=False).filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    )


def fact_list(
    *, search: str = "", include_forgotten: bool = False, include_expired: bool = False
) -> QuerySet[Fact]:
    facts = Fact.objects.all()
    if not include_forgotten:
        facts = facts.filter(forgotten=False)
    if not include_expired:
        facts = facts.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))
    if search:
        facts = facts.filter(Q(key__icontains=search) | Q(value__icontains=search))
    return facts.select_related("source_message")


def fact_get(*, key: str) -> Fact:
    try:
        return Fact.objects.get(key=key)
    except Fact.DoesNotExist:
        raise FactNotFound(FACT_NOT_FOUND_MESSAGE.format(key=key)) from None


def memory_settings_get() -> MemorySettings:
    return MemorySettings.load()
