"""The facts through the API: list, store, read, update, forget, restore, history, recent.

Each method validates, calls one service or selector, and shapes the output
(memory.api.views: authentication, scopes and the shared error answers).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from memory.api.conditional import (
    ETAG_PARAMETER,
    IF_MATCH_PARAMETER,
    IF_NONE_MATCH_PARAMETER,
    PRECONDITION_FAILED,
    PreconditionFailed,
    etag_header,
    not_modified,
    opened_from_if_match,
)
from memory.api.pagination import MemoryPagination
from memory.api.serializers import (
    FactInputSerializer,
    FactListQuerySerializer,
    FactOutputSerializer,
    FactPatchSerializer,
    FactRecentQuerySerializer,
    FactRevisionSerializer,
    FactWrittenSerializer,
)
from memory.api.views import (
    ERRORS,
    KEY_PARAMETER,
    NOT_FOUND,
    PAGE_NOT_FOUND,
    MemoryApi,
    fact_or_404,
)
from memory.exceptions import FactChanged
from memory.models import Actor, FactKind
from memory.selectors import FACT_NOT_FOUND_MESSAGE, fact_list, facts_recent
from memory.services.fact_ownership import kept_fields_stated
from memory.services.facts import fact_forget, fact_restore, fact_store, fact_update
from memory.services.self_memory import agent_item_store

EMPTY_PATCH_MESSAGE = "Aucun champ à modifier."
FORGOTTEN_LIST_MESSAGE = "Seul le propriétaire peut voir les faits oubliés."


class FactListCreateApi(MemoryApi):
    query_methods = frozenset({"get"})
    name = "Faits"
    pagination_class = MemoryPagination

    @extend_schema(
        operation_id="facts_list",
        summary="Lister les faits",
        description=(
            "Les faits actifs (ni oubliés ni expirés) par défaut, paginés. ``kind=self`` ou "
            "``kind=goal`` : les souvenirs de l'agent sur lui-même ou ses objectifs (jamais "
            "mêlés aux faits du propriétaire)."
        ),
        parameters=[FactListQuerySerializer],
        responses={200: FactOutputSerializer(many=True), **ERRORS, **PAGE_NOT_FOUND},
    )
    def get(self, request: Request) -> Response:
        query = FactListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        if query.validated_data["include_forgotten"] and self.actor(request) == Actor.AGENT:
            raise PermissionDenied(FORGOTTEN_LIST_MESSAGE)
        return self.paginate(request, fact_list(**query.validated_data), FactOutputSerializer)

    @extend_schema(
        operation_id="facts_store",
        summary="Ajouter un fait",
        description=(
            "Crée le fait ``key``; si la clé existe, met à jour sa valeur (l'ancienne est "
            "gardée dans l'historique) et fait revenir un fait oublié (le jeton de l'agent ne fait "
            "pas revenir un fait que le propriétaire a oublié : il crée un nouveau fait). "
            "201 si créé, 200 sinon. Une valeur que le propriétaire a fixée reste : le jeton de "
            "l'agent qui en donne une autre reçoit 200 avec ``owner_kept`` et ``message``. "
            "Avec ``kind`` self ou goal (et ``category``, ``value`` seulement) : un souvenir de "
            "l'agent sur lui-même ou un objectif, dédoublonné (une chose déjà connue n'est pas "
            "enregistrée deux fois : 200) ; sa clé est dérivée du texte."
        ),
        parameters=[ETAG_PARAMETER],
        request=FactInputSerializer,
        responses={201: FactWrittenSerializer, 200: FactWrittenSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        body = FactInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        kind = data.pop("kind", FactKind.OWNER)
        stated, fields = None, None  # an item is deduplicated by meaning: no owner's lock
        if kind == FactKind.OWNER:
            # The agent's token writes explicitly: « Créé » / « Modifié », not extracted.
            fact, created = fact_store(**data, actor=self.actor(request), extracted=False)
            stated, fields = data["value"], kept_fields_stated(data)
        else:
            result = agent_item_store(
                kind=kind,
                category=data["category"],
                content=data["value"],
                actor=self.actor(request),
            )
            fact, created = result.item, result.action == "added"
        return Response(
            FactWrittenSerializer(
                fact, context={"stated_value": stated, "stated_fields": fields}
            ).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
            headers=etag_header(fact),
        )


class FactDetailApi(MemoryApi):
    name = "Fait"
    bodiless_methods = frozenset({"delete"})

    @extend_schema(
        operation_id="facts_get",
        summary="Lire un fait",
        description="Le fait, même expiré (voir ``is_expired``) ; même oublié (``forgotten``) pour le "
        "propriétaire seulement : le jeton de l'agent reçoit 404. L'en-tête ETag porte sa "
        "version (``version``), à renvoyer dans If-Match pour modifier ou oublier le fait tel "
        "que lu ; avec If-None-Match, 304 sans corps s'il n'a pas changé depuis cette lecture.",
        parameters=[KEY_PARAMETER, IF_NONE_MATCH_PARAMETER, ETAG_PARAMETER],
        responses={
            200: FactOutputSerializer,
            304: OpenApiResponse(description="Le fait n'a pas changé depuis la version nommée."),
            **ERRORS,
            **NOT_FOUND,
        },
    )
    def get(self, request: Request, key: str) -> Response:
        fact = fact_or_404(key, actor=self.actor(request))
        unchanged = not_modified(request, fact)
        if unchanged is not None:
            return unchanged
        return Response(FactOutputSerializer(fact).data, headers=etag_header(fact))

    @extend_schema(
        operation_id="facts_update",
        summary="Modifier un fait",
        description=(
            "Change les champs donnés seulement. ``ttl`` vide ou null retire l'expiration. "
            "Un fait oublié que le propriétaire modifie revient ; pour le jeton de l'agent, un "
            "fait oublié est introuvable (404), même oublié pendant sa requête. L'ancienne "
            "valeur reste dans l'historique. "
            "Une valeur, une importance ou un type que le propriétaire a fixés restent : le "
            "jeton de l'agent qui en donne d'autres reçoit 200 avec ``owner_kept`` et "
            "``message``. Avec If-Match (l'ETag d'une lecture) : 412 et rien d'écrit si le "
            "fait a changé depuis."
        ),
        parameters=[KEY_PARAMETER, IF_MATCH_PARAMETER, ETAG_PARAMETER],
        request=FactPatchSerializer,
        responses={200: FactWrittenSerializer, **ERRORS, **NOT_FOUND, **PRECONDITION_FAILED},
    )
    def patch(self, request: Request, key: str) -> Response:
        actor = self.actor(request)
        # An edit revives a forgotten fact: that undo is the owner's, as …/restore. To the
        # agent's token a forgotten key is a key never stored.
        fact = fact_or_404(key, actor=actor)
        opened = opened_from_if_match(request, fact)
        body = FactPatchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        if not body.validated_data:
            raise ValidationError({"non_field_errors": [EMPTY_PATCH_MESSAGE]})
        try:
            # The version is compared by the service, on the row it locks; so is whether
            # the fact was forgotten since the read above: the agent's edit revives nothing.
            fact = fact_update(
                fact=fact,
                actor=actor,
                opened=opened,
                revive=actor != Actor.AGENT,
                **body.validated_data,
            )
        except FactChanged as exc:
            raise PreconditionFailed(str(exc)) from None
        if fact.forgotten and actor == Actor.AGENT:
            # Forgotten since the read above: the service wrote nothing, and to the agent's
            # token the key is now one never stored.
            raise NotFound(FACT_NOT_FOUND_MESSAGE.format(key=key))
        context = {
            "stated_value": body.validated_data.get("value"),
            "stated_fields": kept_fields_stated(body.validated_data),
        }
        return Response(
            FactWrittenSerializer(fact, context=context).data, headers=etag_header(fact)
        )

    @extend_schema(
        operation_id="facts_forget",
        summary="Oublier un fait",
        description=(
            "Suppression douce (« oubli ») : le fait n'est plus utilisé ni montré, mais il reste "
            "en base avec son historique et peut être restauré par "
            "POST /api/memory/facts/{key}/restore. Idempotent pour le propriétaire ; pour le "
            "jeton de l'agent, un fait oublié est introuvable (404), comme une clé jamais vue. "
            "Avec If-Match (l'ETag d'une lecture) : 412 et rien d'oublié si le fait a changé "
            "depuis."
        ),
        parameters=[KEY_PARAMETER, IF_MATCH_PARAMETER],
        responses={204: None, **ERRORS, **NOT_FOUND, **PRECONDITION_FAILED},
    )
    def delete(self, request: Request, key: str) -> Response:
        actor = self.actor(request)
        fact = fact_or_404(key, actor=actor)
        try:
            fact_forget(fact=fact, actor=actor, opened=opened_from_if_match(request, fact))
        except FactChanged as exc:
            raise PreconditionFailed(str(exc)) from None
        return Response(status=status.HTTP_204_NO_CONTENT)


class FactRestoreApi(MemoryApi):
    name = "Retour d'un fait oublié"
    bodiless_methods = frozenset({"post"})
    owner_methods = frozenset({"post"})

    @extend_schema(
        operation_id="facts_restore",
        summary="Restaurer un fait oublié",
        description="Annule un oubli (DELETE). Sans effet sur un fait qui n'est pas oublié.",
        parameters=[KEY_PARAMETER],
        request=None,
        responses={200: FactOutputSerializer, **ERRORS, **NOT_FOUND},
    )
    def post(self, request: Request, key: str) -> Response:
        fact = fact_restore(fact=fact_or_404(key, actor=Actor.USER), actor=self.actor(request))
        return Response(FactOutputSerializer(fact).data)


class FactRevisionListApi(MemoryApi):
    name = "Historique d'un fait"
    pagination_class = MemoryPagination

    @extend_schema(
        operation_id="facts_history",
        summary="Historique d'un fait",
        description="Chaque changement du fait, le plus récent d'abord : qui, pourquoi, avant/après.",
        parameters=[KEY_PARAMETER],
        responses={200: FactRevisionSerializer(many=True), **ERRORS, **PAGE_NOT_FOUND},
    )
    def get(self, request: Request, key: str) -> Response:
        fact = fact_or_404(key, actor=self.actor(request))
        return self.paginate(request, fact.revisions.all(), FactRevisionSerializer)


class FactRecentApi(MemoryApi):
    query_methods = frozenset({"get"})
    name = "Faits récents"

    @extend_schema(
        operation_id="facts_recent",
        summary="Faits récents",
        description=(
            "Les faits actifs retenus ou modifiés le plus récemment, les plus récents d'abord : "
            "ceux que l'outil memory__recent de notre agent et l'outil MCP recent lisent."
        ),
        parameters=[FactRecentQuerySerializer],
        responses={200: FactOutputSerializer(many=True), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        query = FactRecentQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        facts = facts_recent(limit=query.validated_data["limit"])
        return Response(FactOutputSerializer(facts, many=True).data)
