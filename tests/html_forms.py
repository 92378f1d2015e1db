"""What a browser posts when it submits a form as a page shows it.

Tests that play "the owner opened this page earlier" post exactly this, hidden inputs
included, instead of rebuilding the data from the form object.
"""

from __future__ import annotations

from html.parser import HTMLParser


class _FormReader(HTMLParser):
    def __init__(self, form_id: str) -> None:
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.inside = False
        self.data: dict[str, str] = {}
        self._textarea: str | None = None
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {name: value or "" for name, value in attrs}
        if tag == "form" and attr.get("id") == self.form_id:
            self.inside = True
        if not self.inside or ("name" not in attr and tag != "option"):
            return
        if tag == "input":
            kind = attr.get("type", "text")
            if kind in ("submit", "button", "reset", "file", "image"):
                return
            if kind in ("checkbox", "radio") and "checked" not in attr:
                return
            self.data[attr["name"]] = attr.get("value", "on" if kind == "checkbox" else "")
        elif tag == "textarea":
            self._textarea = attr["name"]
            self.data[self._textarea] = ""
        elif tag == "select":
            self._select = attr["name"]
        elif (
            tag == "option"
            and self._select
            and ("selected" in attr or self._select not in self.data)
        ):
            # The selected option, else the first one (what a browser sends).
            self.data[self._select] = attr.get("value", "")

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self.data[self._textarea] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False
        elif tag == "textarea":
            if self._textarea is not None:
                # The HTML parser keeps the newline browsers drop after <textarea>.
                self.data[self._textarea] = self.data[self._textarea].removeprefix("\n")
            self._textarea = None
        elif tag == "select":
            self._select = None


def form_post_data(html: str, form_id: str) -> dict[str, str]:
    """The fields the form ``form_id`` of ``html`` posts, as the page shows them."""
    reader = _FormReader(form_id)
    reader.feed(html)
    if not reader.data:
        raise AssertionError(f"no form #{form_id} with fields in the page")
    return reader.data
