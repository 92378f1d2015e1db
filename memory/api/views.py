"""The memory API: one class per resource, each method validate → service/selector → shape.

Here: the base view (MemoryApi), the answers the views share, and the search, settings,
stats and retrieval-log views; the facts' views are in memory.api.facts.

Authentication: the agent sends ``Authorization: Token <key>`` (DRF authtoken);
the dashboard uses its session, with the CSRF token on unsafe methods. Token
comes first so an anonymous client is told 401 with ``WWW-Authenticate: Token``.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from makilab.api_authentication import FrenchCsrfSessionAuthentication
from makilab.throttling import refused_caller_wait
from memory.api.fields import StrictCharField
from memory.api.pagination import MemoryPagination
from memory.api.parsers import (
    BODY_TOO_LARGE_MESSAGE,
    LimitedFormParser,
    LimitedJSONParser,
    PayloadTooLarge,
)
from memory.api.permissions import BearerTokenAuthentication, IsOwner, IsStaffOrToken, is_owner
from memory.api.serializers import (
    UNKNOWN_FIELD_MESSAGE,
    MemoryRetrievalSerializer,
    MemorySettingsSerializer,
    NoBodySerializer,
    PagedQuerySerializer,
    QuerySerializer,
    RetrievalListQuerySerializer,
)
from memory.api.serializers_search import SearchQuerySerializer, SearchResultSerializer
from memory.api.serializers_stats import MemoryStatsSerializer
from memory.exceptions import FactNotFound
from memory.models import Actor, Fact
from memory.selectors import (
    memory_settings_get,
    memory_stats_get,
    retrieval_list,
)
from memory.services.fact_keys import fact_named
from memory.services.search import memory_search
from memory.services.settings import memory_settings_update


class ErrorSerializer(serializers.Serializer):
    message = StrictCharField()
    extra = serializers.DictField(help_text='{"fields": {champ: [messages]}} pour un 400.')


ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="Entrée invalide : un message par champ."),
    401: OpenApiResponse(ErrorSerializer, description="Jeton absent ou invalide."),
    403: OpenApiResponse(
        ErrorSerializer,
        description="Session sans droits ou sans CSRF, ou jeton de l'agent sur une opération "
        "du propriétaire.",
    ),
}
NOT_FOUND = {404: OpenApiResponse(ErrorSerializer, description="Aucun fait avec cette clé.")}
KEY_PARAMETER = OpenApiParameter(
    "key", str, OpenApiParameter.PATH, description="La clé du fait, ex. user_name."
)


PAGE_NOT_FOUND = {
    404: OpenApiResponse(
        ErrorSerializer, description="Page au-delà de la dernière (ou fait inconnu)."
    )
}


# A query parameter given twice: DRF reads the last one without a word.
PARAMETER_TWICE_MESSAGE = "Ce paramètre est donné deux fois : lequel vaut n'est pas connu."


class MemoryApi(APIView):
    # Each view sets ``name``: OPTIONS and the browsable API show it in French, where DRF
    # would derive "Fact List Create Api" from the class name (rest_framework get_view_name).
    # Their description is a French ``description`` or nothing (makilab.view_descriptions).
    authentication_classes = [
        TokenAuthentication,
        BearerTokenAuthentication,
        FrenchCsrfSessionAuthentication,
    ]
    permission_classes = [IsStaffOrToken]
    parser_classes = [LimitedJSONParser, LimitedFormParser]
    # The methods of this view in the owner's scope (memory.api.permissions).
    owner_methods: frozenset[str] = frozenset()
    # Set on the views whose list is paged (self.paginate): the schema then documents
    # the paged object ({count, next, previous, results}) and the page parameters.
    pagination_class: type[MemoryPagination] | None = None
    # The methods whose handler reads its own query string with a QuerySerializer (which
    # refuses what it does not read). Any other method's query string may hold only DRF's
    # ``format`` and, on a paged list, the page's parameters: a parameter nothing reads is
    # a 400 naming it (QA: ``POST /forget?dry_run=true`` forgot for real).
    query_methods: frozenset[str] = frozenset()
    # The write methods whose handler reads no body: a body field is a 400 naming it, as on
    # every other write (QA: ``POST /facts/<key>/erase {"dry_run": true}`` erased for good).
    bodiless_methods: frozenset[str] = frozenset()

    def get_permissions(self):
        if self.request.method.lower() in self.owner_methods:
            return [IsOwner()]
        return super().get_permissions()

    def initial(self, request, *args, **kwargs):
        try:
            super().initial(request, *args, **kwargs)
        except (exceptions.NotAuthenticated, exceptions.AuthenticationFailed):
            # Refused, the caller is counted as anonymous; past the rate it gets 429, not 401.
            wait = refused_caller_wait(request)
            if wait is not None:
                raise exceptions.Throttled(wait) from None
            raise
        # HEAD is answered by the view's get (Django): it reads the same query.
        method = "get" if request.method == "HEAD" else request.method.lower()
        if method == "options" or not hasattr(self, method):
            return  # what the endpoint takes (OPTIONS), or a 405, whatever the request holds
        twice = sorted(name for name, values in request.query_params.lists() if len(values) > 1)
        if twice:
            raise exceptions.ValidationError({name: [PARAMETER_TWICE_MESSAGE] for name in twice})
        if method not in self.query_methods:
            self._query_string_unread(request, method)
        if method in self.bodiless_methods and request.data is not None:  # JSON null: no body
            NoBodySerializer(data=request.data).is_valid(raise_exception=True)

    def _query_string_unread(self, request: Request, method: str) -> None:
        """What a query serializer would let through beside its own fields (``also_read``):
        DRF's ``format``, and a paged list's page parameters."""
        paged = self.pagination_class is not None and method == "get"
        read = (PagedQuerySerializer if paged else QuerySerializer).also_read
        unread = sorted(set(request.query_params) - set(read))
        if unread:
            raise exceptions.ValidationError({name: [UNKNOWN_FIELD_MESSAGE] for name in unread})

    def handle_exception(self, exc: Exception) -> Response:
        # Django refuses a body over DATA_UPLOAD_MAX_MEMORY_SIZE with an HTML 400 page;
        # the API says 413 in JSON, like every other error.
        if isinstance(exc, RequestDataTooBig):
            exc = PayloadTooLarge(
                BODY_TOO_LARGE_MESSAGE.format(limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
            )
        return super().handle_exception(exc)

    def actor(self, request: Request) -> str:
        """Who is writing: the owner (a staff account, by its session or its token) or
        the agent (a plain account's token), as the scopes say (permissions.is_owner)."""
        return Actor.USER if is_owner(request.user) else Actor.AGENT

    def paginate(self, request: Request, queryset, serializer_class) -> Response:
        paginator = (self.pagination_class or MemoryPagination)()
        page = paginator.paginate_queryset(queryset, request, view=self)
        return paginator.get_paginated_response(serializer_class(page, many=True).data)


def fact_or_404(key: str, *, actor: str) -> Fact:
    """The fact ``key`` names for ``actor``, any kind: the agent's self and goal items are
    read and written here too. To the agent's token, a key in other letters is the fact its
    statements fold onto and a forgotten fact a key never stored (fact_keys.fact_named); only
    the owner's scope sees a forgotten fact, to restore it."""
    try:
        return fact_named(key, actor, any_kind=True)
    except FactNotFound as exc:
        raise NotFound(str(exc)) from None


class MemorySearchApi(MemoryApi):
    query_methods = frozenset({"get"})
    name = "Recherche"

    @extend_schema(
        operation_id="memory_search",
        summary="Chercher dans la mémoire",
        description=(
            "``semantic`` : par le sens, dans Qdrant (échanges, faits, résumés), au-dessus du "
            "score minimum des réglages; les faits oubliés ou expirés sont exclus. ``text`` : par "
            "mots-clés (FTS5, bm25) sur les messages, les faits et les résumés, ceux qui contiennent tous les "
            "mots d'abord; marche sans Qdrant. ``hybrid`` : le classement de l'auto-retrieval "
            "(sens, mots-clés, récence, période nommée), le meilleur mode. Filtres : canal, type "
            "de fait, sujets, période. 503 quand la recherche sémantique est indisponible."
        ),
        parameters=[SearchQuerySerializer],
        responses={
            200: SearchResultSerializer,
            **ERRORS,
            503: OpenApiResponse(ErrorSerializer, description="Qdrant ou l'embedder indisponible."),
        },
    )
    def get(self, request: Request) -> Response:
        query = SearchQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        hits = memory_search(
            query=data["q"], mode=data["mode"], limit=data["limit"], filters=query.filters()
        )
        result = {"query": data["q"], "mode": data["mode"], "count": len(hits), "results": hits}
        return Response(SearchResultSerializer(result).data)


class MemorySettingsApi(MemoryApi):
    name = "Réglages de la mémoire"
    owner_methods = frozenset({"patch"})

    @extend_schema(
        operation_id="settings_get",
        summary="Lire les réglages",
        responses={200: MemorySettingsSerializer, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        return Response(MemorySettingsSerializer(memory_settings_get()).data)

    @extend_schema(
        operation_id="settings_update",
        summary="Modifier les réglages",
        description="Change les réglages donnés; chaque valeur doit rester dans sa plage.",
        request=MemorySettingsSerializer,
        responses={200: MemorySettingsSerializer, **ERRORS},
    )
    def patch(self, request: Request) -> Response:
        body = MemorySettingsSerializer(memory_settings_get(), data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        settings = memory_settings_update(changes=body.validated_data)
        return Response(MemorySettingsSerializer(settings).data)


class MemoryStatsApi(MemoryApi):
    name = "Statistiques de la mémoire"

    @extend_schema(
        operation_id="memory_stats",
        summary="Statistiques de la mémoire",
        description=(
            "Comptes par niveau (faits, messages, résumés) et par état d'indexation, points par "
            "collection Qdrant (null et status « unavailable » si Qdrant est injoignable), "
            "dernière indexation."
        ),
        responses={200: MemoryStatsSerializer, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        owner = self.actor(request) == Actor.USER
        return Response(MemoryStatsSerializer(memory_stats_get(owner=owner)).data)


class RetrievalListApi(MemoryApi):
    # The owner's: a memory a forget took since shows there as « [oublié] » (an entry, its
    # sources and ranks, the tokens it took, a row's preview), which told the agent a memory
    # had been there (QA, three passes: filtering left gaps in ranks, ids and token counts).
    # The agent gets what it was given in each /context answer.
    owner_methods = frozenset({"get"})
    query_methods = frozenset({"get"})
    name = "Journal de l'auto-retrieval"
    pagination_class = MemoryPagination

    @extend_schema(
        operation_id="retrievals_list",
        summary="Journal de l'auto-retrieval",
        description=(
            "Les dernières injections, la plus récente d'abord, paginées. Réservé au "
            "propriétaire (le jeton de l'agent : 403) : un souvenir oublié depuis y reste "
            "marqué « [oublié] »."
        ),
        parameters=[RetrievalListQuerySerializer],
        responses={200: MemoryRetrievalSerializer(many=True), **ERRORS, **PAGE_NOT_FOUND},
    )
    def get(self, request: Request) -> Response:
        query = RetrievalListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        retrievals = retrieval_list(**query.validated_data)
        return self.paginate(request, retrievals, MemoryRetrievalSerializer)
