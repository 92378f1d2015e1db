"""QA: the /costs chart's tooltips write amounts with a decimal point.

Every amount of /costs is French (« 0,0840 $ », « max 0,0912 $/jour » on the chart
itself), but each bar segment's tooltip (its SVG <title>) reads « 01/12 Conversation :
0.0840 $ » and the overhead's « 01/12 surcoût auto-retrieval : 0.0013 $ »:
dashboard.selectors._chart formats them with ``:.4f``. Seen on a running serve.
"""

from __future__ import annotations

import re

import pytest

from agent.usage import usage_record

pytestmark = pytest.mark.django_db


def test_the_chart_tooltips_use_a_decimal_comma(staff_client):
    usage_record(
        model="claude-sonnet-4-6",
        purpose="chat",
        input_tokens=10_000,
        output_tokens=1_000,
        retrieval_tokens=2_000,
    )

    page = staff_client.get("/costs/").content.decode()
    titles = re.findall(r"<title>([^<]*)</title>", page)

    assert titles, "precondition: the chart has bars"
    assert not [t for t in titles if re.search(r"\d\.\d", t)], titles
