"""The API's paged lists: their size, bounded, and a size or a page number that is not
one refused."""

from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination

PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
PAGE_SIZE_MESSAGE = "Un nombre entier d'au moins 1 est attendu."


class MemoryPagination(PageNumberPagination):
    page_size = PAGE_SIZE
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def get_page_number(self, request, paginator):
        """DRF's page number; one that is no whole number is a 400 (DRF said 404, as for a
        page past the last). Page 0 and pages past the last stay DRF's 404."""
        raw = request.query_params.get(self.page_query_param)
        if raw and raw not in self.last_page_strings:
            try:
                int(raw)
            except ValueError:
                raise ValidationError({self.page_query_param: [PAGE_SIZE_MESSAGE]}) from None
        return super().get_page_number(request, paginator)

    def get_page_size(self, request):
        """DRF's size, capped at the maximum; a size that is no whole number of at least 1
        is a 400 (DRF served the default page without a word)."""
        raw = request.query_params.get(self.page_size_query_param)
        if raw:  # "page_size=" asks nothing: the default page, as DRF gives
            try:
                valid = int(raw) >= 1
            except ValueError:
                valid = False
            if not valid:
                raise ValidationError({self.page_size_query_param: [PAGE_SIZE_MESSAGE]})
        return super().get_page_size(request)

    def get_schema_operation_parameters(self, view):
        """DRF's page parameters with their bounds (page 0 is a 404, sizes are capped)."""
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"]["maximum"] = self.max_page_size
        return parameters
