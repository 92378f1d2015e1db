"""memory_import takes a fact whose updated_at precedes its created_at (and a revision dated
before the fact existed): impossible histories are imported as is."""

from __future__ import annotations

import pytest

from tests.review_tmp._qa2_import_helpers import REVISION, assert_refused, fact

pytestmark = pytest.mark.django_db


def test_a_fact_updated_before_it_was_created_is_refused(tmp_path):
    assert_refused(
        tmp_path,
        fact(created_at="2026-06-01T10:00:00+00:00", updated_at="2020-01-01T00:00:00+00:00"),
    )


def test_a_revision_older_than_its_fact_is_refused(tmp_path):
    assert_refused(
        tmp_path,
        fact(revisions=[REVISION | {"created_at": "2001-01-01T00:00:00+00:00"}]),
    )
