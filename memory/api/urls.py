"""Routes of the memory API, mounted at /api/memory/ (no trailing slashes, as DESIGN.md lists them)."""

from django.urls import path

from memory.api import (
    channels,
    context,
    export,
    facts,
    forgetting,
    maintenance,
    messages,
    preview,
    views,
)

app_name = "memory-api"

urlpatterns = [
    path("facts", facts.FactListCreateApi.as_view(), name="facts"),
    # <path:key> would swallow "/restore": keys cannot contain "/" (FactInputSerializer).
    path("facts/<str:key>/restore", facts.FactRestoreApi.as_view(), name="fact-restore"),
    path("facts/<str:key>/erase", forgetting.FactEraseApi.as_view(), name="fact-erase"),
    path("facts/<str:key>/revisions", facts.FactRevisionListApi.as_view(), name="fact-revisions"),
    path("facts/<str:key>", facts.FactDetailApi.as_view(), name="fact"),
    path("recent-facts", facts.FactRecentApi.as_view(), name="recent-facts"),
    path("search", views.MemorySearchApi.as_view(), name="search"),
    path("settings", views.MemorySettingsApi.as_view(), name="settings"),
    path("stats", views.MemoryStatsApi.as_view(), name="stats"),
    path("export", export.MemoryExportApi.as_view(), name="export"),
    path("retrievals", views.RetrievalListApi.as_view(), name="retrievals"),
    path("preview", preview.MemoryPreviewApi.as_view(), name="preview"),
    # For outside agents: record messages, get the logged context of a message.
    path("messages", messages.MessagesRecordApi.as_view(), name="messages"),
    path("context", context.MemoryContextApi.as_view(), name="context"),
    path("forget", forgetting.ForgetApi.as_view(), name="forget"),
    # Observed rooms: which channels are observed, and their digest.
    path("channels", channels.ChannelListApi.as_view(), name="channels"),
    path("channels/<str:channel>", channels.ChannelDetailApi.as_view(), name="channel"),
    path("digest", channels.DigestApi.as_view(), name="digest"),
    path("forgettings", forgetting.ForgettingListApi.as_view(), name="forgettings"),
    path(
        "forgettings/<int:forgetting_id>/restore",
        forgetting.ForgettingRestoreApi.as_view(),
        name="forgetting-restore",
    ),
    path(
        "forgettings/<int:forgetting_id>/erase",
        forgetting.ForgettingEraseApi.as_view(),
        name="forgetting-erase",
    ),
    # For the maintenance commands run beside serve (the local secret only).
    path(
        "maintenance/runs/<str:run_id>",
        maintenance.MaintenanceRunApi.as_view(),
        name="maintenance-run",
    ),
    path(
        "maintenance/<str:operation>",
        maintenance.MaintenanceStartApi.as_view(),
        name="maintenance",
    ),
]
