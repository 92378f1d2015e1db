"""A HEAD request gets the GET's headers and no body, whoever serves the site.

Django's own development server strips a HEAD answer's body, and expects the others to
do it; waitress, which `serve` runs, sends what the application gives (QA: a HEAD on a
fact sent its 472 bytes of JSON, which a keep-alive client read as the start of its
next answer). First in MIDDLEWARE, so it sees the answer last: its Content-Length (set
by CommonMiddleware) stays the GET's, as RFC 9110 §9.3.2 asks, and only the body goes.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse


class HeadWithoutBody:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.method != "HEAD":
            return response
        if getattr(response, "streaming", False):
            # A file's or a stream's answer: its iterator is not read (closed with the
            # response, as Django closes it), nothing is sent after the headers.
            response.streaming_content = []
        else:
            response.content = b""
        return response
