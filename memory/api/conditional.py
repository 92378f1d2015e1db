"""HTTP conditional requests on a fact (RFC 9110 §8.8.3, §13.1.1, §13.1.2): ETag,
If-Match on a write, If-None-Match on a read.

A fact's entity tag is its version (fact_revisions.fact_version, the moment of its last
write) in quotes: a strong tag, new after every write of the fact. ``If-Match`` on a write
names the version the client read; it is never compared here but handed to the service
(fact_update's / fact_forget's ``opened``), which compares it on the row it locks: a write
landing between this view's read and the service's lock is seen (412), not undone.
``If-None-Match`` on a read names the versions the client holds: the current one (weak
comparison, §8.8.3.2) or « * » answers 304 without a body (not_modified).
"""

from __future__ import annotations

import re

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.request import Request
from rest_framework.response import Response

from memory.api.views import ErrorSerializer
from memory.models import Fact
from memory.services.fact_revisions import fact_version

IF_MATCH_MALFORMED_MESSAGE = (
    "En-tête If-Match invalide : donnez « * » ou des étiquettes entre guillemets séparées "
    'par des virgules, telles que l\'en-tête ETag les envoie (ex. If-Match: "…").'
)
IF_NONE_MATCH_MALFORMED_MESSAGE = (
    "En-tête If-None-Match invalide : donnez « * » ou des étiquettes entre guillemets "
    'séparées par des virgules, telles que l\'en-tête ETag les envoie (ex. If-None-Match: "…").'
)
ANY = "*"
# entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE, etagc = %x21 / %x23-7E / obs-text (§8.8.3).
_ENTITY_TAG = re.compile(r'(W/)?"([\x21\x23-\x7e\x80-\xff]*)"')
_LIST_SPACE = " \t"


class PreconditionFailed(APIException):
    """412: the fact changed since the version the request's If-Match names."""

    status_code = status.HTTP_412_PRECONDITION_FAILED
    default_code = "precondition_failed"


def fact_etag(fact: Fact) -> str:
    """The fact's strong entity tag: its version, quoted (isoformat holds no quote)."""
    return f'"{fact_version(fact)}"'


def etag_header(fact: Fact) -> dict[str, str]:
    """The headers of an answer carrying the fact."""
    return {"ETag": fact_etag(fact)}


def _strong_tags(header: str) -> list[str] | None:
    """The opaque values of the header's strong tags (a weak one never matches in If-Match:
    strong comparison, §8.8.3.2), or None when it is no ``#entity-tag`` list."""
    tags = _entity_tags(header)
    return None if tags is None else [value for weak, value in tags if not weak]


def _entity_tags(header: str) -> list[tuple[bool, str]] | None:
    """The header's tags as (weak, opaque value), or None when it is no ``#entity-tag``
    list (an empty one included)."""
    tags: list[tuple[bool, str]] = []
    position = 0
    while True:
        while position < len(header) and header[position] in _LIST_SPACE + ",":
            position += 1  # the list's empty elements and spaces (§5.6.1)
        if position == len(header):
            return tags or None
        found = _ENTITY_TAG.match(header, position)
        if found is None:
            return None
        tags.append((bool(found.group(1)), found.group(2)))
        position = found.end()
        while position < len(header) and header[position] in _LIST_SPACE:
            position += 1
        if position < len(header) and header[position] != ",":
            return None  # two tags without a comma, or text after a tag


def opened_from_if_match(request: Request, fact: Fact) -> str | None:
    """What to pass as the service's ``opened``: None without If-Match or with « * » (the
    fact exists: the view found it), else the version the client's tags name. Of several
    tags, the one equal to the version read here, if any (the service compares it again,
    locked: a write since is refused); else the first strong one, or a version no fact has
    (only weak tags), which the service refuses as changed, with the value stored now.
    A malformed header is a French 400."""
    header = request.headers.get("If-Match")
    if header is None:
        return None
    if header.strip(_LIST_SPACE) == ANY:
        return None
    tags = _strong_tags(header)
    if tags is None:
        raise ParseError(IF_MATCH_MALFORMED_MESSAGE)
    read = fact_version(fact)
    if read in tags:
        return read
    return tags[0] if tags else "W/"  # no version starts so: an isoformat begins with digits


def not_modified(request: Request, fact: Fact) -> Response | None:
    """The 304 of a read whose If-None-Match names the fact's current version (weak
    comparison: « W/ » is ignored, §13.1.2) or is « * »; None when the fact is to be sent
    whole. A malformed header is a French 400."""
    header = request.headers.get("If-None-Match")
    if header is None:
        return None
    if header.strip(_LIST_SPACE) != ANY:
        tags = _entity_tags(header)
        if tags is None:
            raise ParseError(IF_NONE_MATCH_MALFORMED_MESSAGE)
        if fact_version(fact) not in {value for _, value in tags}:
            return None
    return Response(status=status.HTTP_304_NOT_MODIFIED, headers=etag_header(fact))


IF_NONE_MATCH_PARAMETER = OpenApiParameter(
    "If-None-Match",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description=(
        "Facultatif : l'ETag du fait déjà lu (ou « * »). S'il nomme la version actuelle, "
        "la réponse est 304, sans corps."
    ),
)
IF_MATCH_PARAMETER = OpenApiParameter(
    "If-Match",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description=(
        "Facultatif : l'ETag du fait tel que lu (ou « * »). Si le fait a changé depuis, "
        "rien n'est écrit et la réponse est 412."
    ),
)
ETAG_PARAMETER = OpenApiParameter(
    "ETag",
    str,
    OpenApiParameter.HEADER,
    response=[200, 201],
    description="La version du fait, entre guillemets : à renvoyer dans If-Match.",
)
PRECONDITION_FAILED = {
    412: OpenApiResponse(
        ErrorSerializer,
        description="If-Match ne nomme pas la version actuelle du fait : il a changé depuis "
        "cette lecture. Rien n'est écrit ; le message donne la valeur enregistrée maintenant.",
    )
}
