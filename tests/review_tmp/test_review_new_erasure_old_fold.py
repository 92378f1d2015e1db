"""Review (low): a new erasure's mark is recognised through the older fold too.

erased_marks recognises a key offered again with both folds (_keys_folded(before=True)),
and new erasures leave the new fold's mark under the same label (« fact-key-folded »).
So the erasure, today, of « niveau_c » leaves the mark « niveau_c »; a late statement of
« niveau_c++ » (a different fact by the new rule, 4d60c86) folds to « niveau_c » by the
older fold and is taken for the erased fact: dropped. Only marks left before the change
should be read with the older fold (a label of its own for the new fold's marks would
tell them apart).
"""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact
from memory.services.erased_marks import fact_erased_since
from memory.services.erasing import fact_erase

pytestmark = pytest.mark.django_db


def test_erasing_niveau_c_today_does_not_erase_niveau_c_plus_plus():
    fact = Fact.objects.create(key="niveau_c", value="Marie débute en C")
    before = fact.created_at
    fact_erase(fact=fact, actor=Actor.USER)

    assert not fact_erased_since(key="niveau_c++", value="Marie est experte en C++", moment=before)
