"""A summary's period from its earliest message to its latest (review: the compaction dated
it from its first message by id to its last, so a message recorded late, by the API's
timestamp or an import, ended the period before it started: the summary was dated, by its
end, before the exchanges it covers). The rows written so are given the period between
their two dates, and go back to indexing (their point carries that date)."""

from django.db import migrations
from django.db.models import F


def periods_in_order(apps, schema_editor):
    Summary = apps.get_model("memory", "Summary")
    backwards = Summary._base_manager.filter(
        period_start__isnull=False, period_end__isnull=False, period_start__gt=F("period_end")
    )
    for summary in backwards.only("id", "period_start", "period_end").iterator():
        Summary._base_manager.filter(pk=summary.pk).update(
            period_start=summary.period_end,
            period_end=summary.period_start,
            version=F("version") + 1,
            index_state="pending",
            index_attempts=0,
            index_error="",
            index_retry_at=None,
            index_queued_at=None,
        )


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0030_fact_channel_rule"),
    ]

    operations = [migrations.RunPython(periods_in_order, migrations.RunPython.noop)]
