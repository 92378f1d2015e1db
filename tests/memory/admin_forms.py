"""What a browser posts to the admin's fact form (the change and add pages)."""

from __future__ import annotations


def fact_admin_form(**fields: str) -> dict[str, str]:
    """The fact form's fields with their empty revision formset; ``fields`` override
    the defaults (a plain fact "adm1" of importance 0.5, without expiry)."""
    data = {
        "key": "adm1",
        "value": "v",
        "memory_type": "fact",
        "importance": "0.5",
        "subjects": "[]",
        "source": "manual",
        "channel": "",
        "expires_at_0": "",
        "expires_at_1": "",
        "revisions-TOTAL_FORMS": "0",
        "revisions-INITIAL_FORMS": "0",
        "revisions-MIN_NUM_FORMS": "0",
        "revisions-MAX_NUM_FORMS": "1000",
        "_save": "Enregistrer",
    }
    return {**data, **fields}
