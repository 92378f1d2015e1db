"""Fact keys stored composed (NFC), as every writer now stores them: a key typed with a
combining accent looked exactly like its composed twin and was another key. A key whose
composed form another fact already holds keeps its spelling (both stay visible; the
owner may rename one in the admin)."""

import unicodedata

from django.db import migrations


def keys_compose(apps, schema_editor) -> None:
    fact_model = apps.get_model("memory", "Fact")
    facts = fact_model._base_manager
    keys = set(facts.values_list("key", flat=True))
    for pk, key in facts.values_list("pk", "key"):
        composed = unicodedata.normalize("NFC", key)
        if composed != key and composed not in keys:
            facts.filter(pk=pk).update(key=composed)
            keys.discard(key)
            keys.add(composed)


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0026_range_limits_said_in_french"),
    ]

    operations = [migrations.RunPython(keys_compose, migrations.RunPython.noop)]
