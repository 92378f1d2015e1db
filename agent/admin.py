from django.contrib import admin

from agent.models import LlmUsage
from memory.admin_columns import yes_no_column
from memory.admin_logs import ReadOnlyAdminMixin


@admin.register(LlmUsage)
class LlmUsageAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "created_at",
        "model",
        "purpose",
        "channel",
        "input_tokens",
        "output_tokens",
        "retrieval_tokens",
        "cost_usd",
        "estimated_said",
    )
    list_filter = ("purpose", "model", "channel", "estimated")
    search_fields = ("model", "channel")
    date_hierarchy = "created_at"
    estimated_said = yes_no_column("estimated", "jetons estimés")
