"""POST /facts with ``kind``: the owner's fact (a key) or one of the agent's items (a category).

The cross-field rule of FactInputSerializer, apart so the serializers module stays small.
"""

from __future__ import annotations

from rest_framework import serializers

from memory.models import KIND_CATEGORIES, FactKind

AGENT_ITEM_FIELDS = {"kind", "category", "value"}
KEY_REQUIRED_MESSAGE = "Ce champ est obligatoire pour un fait du propriétaire."
CATEGORY_REQUIRED_MESSAGE = "Ce champ est obligatoire pour un souvenir de l'agent (self, goal)."
CATEGORY_OWNER_MESSAGE = "Un fait du propriétaire n'a pas de catégorie."
NOT_FOR_AGENT_MESSAGE = (
    "Ce champ ne s'applique pas aux souvenirs de l'agent (self, goal) : "
    "seuls kind, category et value."
)
CATEGORY_OF_OTHER_KIND_MESSAGE = "Catégorie invalide pour kind={kind}."


def fact_kind_check(attrs: dict, initial_data: dict) -> dict:
    """An owner fact needs a key and has no category; an agent item has a category of its
    kind and nothing but kind, category and value (its key is derived from its text)."""
    kind = attrs.get("kind", FactKind.OWNER)
    if kind == FactKind.OWNER:
        if "key" not in attrs:
            raise serializers.ValidationError({"key": [KEY_REQUIRED_MESSAGE]})
        if "category" in attrs:
            raise serializers.ValidationError({"category": [CATEGORY_OWNER_MESSAGE]})
        return attrs
    extra = sorted(set(initial_data) - AGENT_ITEM_FIELDS)
    if extra:
        raise serializers.ValidationError({name: [NOT_FOR_AGENT_MESSAGE] for name in extra})
    if "category" not in attrs:
        raise serializers.ValidationError({"category": [CATEGORY_REQUIRED_MESSAGE]})
    if attrs["category"] not in KIND_CATEGORIES[kind]:
        raise serializers.ValidationError(
            {"category": [CATEGORY_OF_OTHER_KIND_MESSAGE.format(kind=kind)]}
        )
    return attrs
