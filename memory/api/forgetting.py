"""Forgetting through the API: preview (dry run), forget, list, restore; the owner's hard deletes."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from memory.api.fields import JsonListField, StrictBooleanField, StrictCharField, StrictRegexField
from memory.api.pagination import MemoryPagination
from memory.api.serializers import StrictInputSerializer
from memory.api.views import (
    ERRORS,
    KEY_PARAMETER,
    NOT_FOUND,
    PAGE_NOT_FOUND,
    ErrorSerializer,
    MemoryApi,
    fact_or_404,
)
from memory.models import Actor, Forgetting
from memory.services.erasing import fact_erase, forgetting_erase
from memory.services.forgetting import (
    FORGETTING_NOT_FOUND_MESSAGE,
    ForgetPlan,
    forgetting_restore,
    topic_forget,
    topic_forget_preview,
)

TOPIC_MAX_CHARS = 200
# The ids of a forget's preview (the dry run's ``ids``), which a confirmation sends back.
FORGET_ID_PATTERN = r"^(message|fact|summary|revision):\d+$"
FORGET_ID_MAX_CHARS = 40
FORGET_ID_FORM = "un id de l'aperçu, ex. message:12 ou fact:3"
# DRF's own « ne satisfait pas le motif imposé » does not say what an id looks like (QA).
FORGET_ID_MESSAGE = f"Id invalide : attendu {FORGET_ID_FORM} (les « ids » du dry run)."
FORGETTING_NOT_FOUND = {
    404: OpenApiResponse(ErrorSerializer, description="Aucun oubli avec ce numéro."),
}


class ForgetInputSerializer(StrictInputSerializer):
    topic = StrictCharField(max_length=TOPIC_MAX_CHARS, help_text="Le sujet à oublier.")
    dry_run = StrictBooleanField(
        default=False, help_text="true : montrer ce qui serait oublié, sans rien changer."
    )
    ids = JsonListField(
        child=StrictRegexField(
            FORGET_ID_PATTERN,
            max_length=FORGET_ID_MAX_CHARS,
            error_messages={"invalid": FORGET_ID_MESSAGE},
        ),
        required=False,
        max_length=2000,
        help_text="Les ids de l'aperçu confirmé (``ids`` du dry run) : rien d'autre n'est pris.",
    )


class ForgetCountsSerializer(serializers.Serializer):
    exchanges = serializers.IntegerField()
    messages = serializers.IntegerField()
    facts = serializers.IntegerField()
    summaries = serializers.IntegerField()
    history = serializers.IntegerField(
        help_text="Lignes d'historique de faits laissés (une ancienne valeur sur le sujet)."
    )


class NotTakenFields(serializers.Serializer):
    """Only when a confirm named ids the preview does not hold (ForgetResult.ids_not_taken)."""

    ids_not_taken = JsonListField(
        child=StrictCharField(),
        required=False,
        help_text="Présent seulement quand des ids donnés ne sont pas dans l'aperçu : non pris.",
    )
    message = StrictCharField(required=False, help_text="Avec ``ids_not_taken``, en français.")


class ForgetPlanSerializer(NotTakenFields):
    topic = StrictCharField()
    selection = StrictCharField(help_text="words (tous les mots du sujet) ou llm.")
    counts = ForgetCountsSerializer()
    ids = JsonListField(
        child=StrictCharField(), help_text="À renvoyer pour confirmer exactement cet aperçu."
    )
    exchanges = JsonListField(child=serializers.DictField())
    facts = JsonListField(child=serializers.DictField())
    summaries = JsonListField(child=serializers.DictField())
    history = JsonListField(child=serializers.DictField())
    notes = JsonListField(
        child=StrictCharField(),
        required=False,
        help_text=(
            "Les notes Obsidian du contexte qui parlent du sujet (aperçu seulement) : un oubli "
            "ne modifie pas le coffre, elles restent injectées."
        ),
    )
    notes_unread = serializers.BooleanField(
        required=False,
        help_text="Des notes du contexte n'ont pas pu être lues : l'aperçu ne dit pas si elles "
        "parlent du sujet.",
    )


class ForgettingSerializer(serializers.ModelSerializer):
    class Meta:
        model = Forgetting
        fields = (
            "id",
            "topic",
            "actor",
            "selection",
            "state",
            "counts",
            "created_at",
            "purge_after",
            "restored_at",
            "purged_at",
        )
        read_only_fields = fields


class ForgetTakenSerializer(NotTakenFields, ForgettingSerializer):
    """The forget a confirm made, naming the ids it was given outside the preview (the
    201's shape in the schema; the view adds ``_not_taken`` to ForgettingSerializer's)."""

    class Meta(ForgettingSerializer.Meta):
        fields = (*ForgettingSerializer.Meta.fields, "ids_not_taken", "message")
        read_only_fields = fields


def _not_taken(result) -> dict:
    """The answer's part naming ids outside the preview; nothing when there are none."""
    if not result.ids_not_taken:
        return {}
    return {"ids_not_taken": result.ids_not_taken, "message": result.not_taken_text()}


def _on_forgetting(request: Request, forgetting_id: int, service, actor: str) -> Response:
    """Restore or erase one forget: a French 404 when there is none."""
    if not Forgetting.objects.filter(pk=forgetting_id).exists():
        return Response(
            {"message": FORGETTING_NOT_FOUND_MESSAGE.format(id=forgetting_id), "extra": {}},
            status=status.HTTP_404_NOT_FOUND,
        )
    forgetting = service(forgetting_id=forgetting_id, actor=actor)
    return Response(ForgettingSerializer(forgetting).data)


class ForgetApi(MemoryApi):
    name = "Oubli d'un sujet"

    @extend_schema(
        operation_id="memory_forget",
        summary="Oublier un sujet",
        description=(
            "Ce qui PARLE du sujet (tous ses mots, ou le jugement du LLM s'il est configuré) "
            "quitte toute la mémoire. ``dry_run`` : l'aperçu de ce qui serait pris (200), rien "
            "ne change. Sinon l'oubli (201), annulable pendant ``forget_retention_days`` jours "
            "puis effacé définitivement."
        ),
        request=ForgetInputSerializer,
        responses={200: ForgetPlanSerializer, 201: ForgetTakenSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        body = ForgetInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        topic = body.validated_data["topic"]
        actor = self.actor(request)
        if body.validated_data["dry_run"]:
            plan = topic_forget_preview(topic=topic)
            # The agent's token is shown nothing of a fact already forgotten (for_agent).
            return Response(ForgetPlanSerializer(plan.as_dict(owner=actor != Actor.AGENT)).data)
        result = topic_forget(topic=topic, actor=actor, only=body.validated_data.get("ids"))
        if result.forgetting_id is None:  # nothing about the topic: the (empty) plan, 200
            empty = ForgetPlan(topic=result.topic, selection=result.selection)
            return Response({**ForgetPlanSerializer(empty.as_dict()).data, **_not_taken(result)})
        forgetting = Forgetting.objects.get(pk=result.forgetting_id)
        taken = {**ForgettingSerializer(forgetting).data, **_not_taken(result)}
        return Response(taken, status=status.HTTP_201_CREATED)


class ForgettingListApi(MemoryApi):
    name = "Oublis"
    owner_methods = frozenset({"get"})
    pagination_class = MemoryPagination

    @extend_schema(
        operation_id="forgettings_list",
        summary="Les oublis",
        description="Les oublis, du plus récent au plus ancien, avec leur état.",
        responses={200: ForgettingSerializer(many=True), **ERRORS, **PAGE_NOT_FOUND},
    )
    def get(self, request: Request) -> Response:
        return self.paginate(request, Forgetting.objects.all(), ForgettingSerializer)


class ForgettingRestoreApi(MemoryApi):
    name = "Annulation d'un oubli"
    bodiless_methods = frozenset({"post"})
    owner_methods = frozenset({"post"})

    @extend_schema(
        operation_id="forgettings_restore",
        summary="Annuler un oubli",
        description="Tant qu'il n'est pas effacé : tout revient (messages, faits, résumés).",
        request=None,
        responses={200: ForgettingSerializer, **ERRORS, **FORGETTING_NOT_FOUND},
    )
    def post(self, request: Request, forgetting_id: int) -> Response:
        return _on_forgetting(request, forgetting_id, forgetting_restore, self.actor(request))


class FactEraseApi(MemoryApi):
    name = "Effacement d'un fait"
    bodiless_methods = frozenset({"post"})
    owner_methods = frozenset({"post"})

    @extend_schema(
        operation_id="facts_erase",
        summary="Effacer un fait définitivement",
        description=(
            "Suppression définitive (RGPD), distincte de l'oubli : le fait et tout son "
            "historique quittent SQLite, l'index plein texte et Qdrant, et les journaux "
            "d'auto-retrieval sont expurgés. Irréversible. Réservé au propriétaire. Renvoie "
            "la trace de l'effacement (sans contenu)."
        ),
        parameters=[KEY_PARAMETER],
        request=None,
        responses={200: ForgettingSerializer, **ERRORS, **NOT_FOUND},
    )
    def post(self, request: Request, key: str) -> Response:
        erasure = fact_erase(fact=fact_or_404(key, actor=Actor.USER), actor=self.actor(request))
        return Response(ForgettingSerializer(erasure).data)


class ForgettingEraseApi(MemoryApi):
    name = "Effacement d'un oubli"
    bodiless_methods = frozenset({"post"})
    owner_methods = frozenset({"post"})

    @extend_schema(
        operation_id="forgettings_erase",
        summary="Effacer un oubli maintenant",
        description=(
            "Ce qu'un oubli a pris (échanges, faits, résumés) est effacé définitivement tout "
            "de suite, sans attendre la fin du délai d'annulation. Irréversible. Réservé au "
            "propriétaire."
        ),
        request=None,
        responses={200: ForgettingSerializer, **ERRORS, **FORGETTING_NOT_FOUND},
    )
    def post(self, request: Request, forgetting_id: int) -> Response:
        return _on_forgetting(request, forgetting_id, forgetting_erase, self.actor(request))
