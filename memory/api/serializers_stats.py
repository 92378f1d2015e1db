"""Serializers of the memory API's stats (GET /stats): they represent, never persist."""

from __future__ import annotations

from rest_framework import serializers

from memory.api.fields import JsonListField, StrictCharField


class IndexCountsSerializer(serializers.DictField):
    """Rows per indexing state: {"pending": n, "indexed": n, "failed": n, ...}."""

    child = serializers.IntegerField()


class FactStatsSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    active = serializers.IntegerField()
    forgotten = serializers.IntegerField(
        required=False, help_text="Faits oubliés par le propriétaire (absent pour l'agent)."
    )
    expired = serializers.IntegerField()
    index = IndexCountsSerializer(help_text="États d'indexation des faits actifs.")


class AgentItemStatsSerializer(serializers.Serializer):
    self_items = serializers.IntegerField(help_text="Souvenirs actifs de l'agent sur lui-même.")
    goals = serializers.IntegerField(help_text="Objectifs actifs de l'agent.")
    index = IndexCountsSerializer(help_text="États d'indexation de ces éléments actifs.")


class MessageStatsSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    compacted = serializers.IntegerField()
    index = IndexCountsSerializer()


class SummaryStatsSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    index = IndexCountsSerializer()


class RetrievalStatsSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    last_at = serializers.DateTimeField(allow_null=True)


class CollectionCountsSerializer(serializers.Serializer):
    conversations = serializers.IntegerField(allow_null=True)
    knowledge = serializers.IntegerField(allow_null=True)
    live = serializers.IntegerField(allow_null=True)


class VectorStatsSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "unavailable", "skipped"])
    error = StrictCharField(allow_blank=True)
    collections = CollectionCountsSerializer(help_text="null quand Qdrant est injoignable.")


class MemoryStatsSerializer(serializers.Serializer):
    facts = FactStatsSerializer()
    agent_items = AgentItemStatsSerializer()
    messages = MessageStatsSerializer()
    summaries = SummaryStatsSerializer()
    retrievals = RetrievalStatsSerializer()
    vectors = VectorStatsSerializer()
    last_indexed_at = serializers.DateTimeField(allow_null=True)
    index_failures = JsonListField(
        child=serializers.DictField(),
        help_text="Lignes dont l'indexation a échoué pour de bon : type, id, tentatives, erreur.",
    )
    jobs = serializers.DictField(
        help_text="Tâches de fond durables par état, et les erreurs des tâches en échec."
    )
