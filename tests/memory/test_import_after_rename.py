"""An export taken before the owner renamed a fact, imported after the fact was erased or
forgotten (QA): the erasure's marks named it by its new key only, so the export's line
under the old key came back live. Its marks now hold every key the fact had."""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact
from memory.selectors import facts_active
from memory.services.erasing import fact_erase
from memory.services.facts import fact_forget, fact_store, fact_update
from memory.services.portability import export_lines
from memory.services.portability_import import memory_import_lines

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("gone", ["erased", "forgotten"])
def test_an_export_from_before_a_rename_does_not_bring_the_fact_back(gone):
    secret, _ = fact_store(key="code_portail", value="Le code du portail est 7719")
    lines = list(export_lines())
    secret = fact_update(fact=secret, actor=Actor.USER, key="portail_code")
    if gone == "erased":
        fact_erase(fact=secret, actor=Actor.USER)
    else:
        fact_forget(fact=secret, actor=Actor.USER)

    memory_import_lines(lines)

    assert not facts_active().filter(value__contains="7719").exists(), list(
        Fact.all_objects.values_list("key", "forgotten")
    )
