"""The /memory page, its sections' fragments and actions, and /costs."""

from django.urls import path

from dashboard import agent_self, forgetting, notes, retrieval, rooms, views

app_name = "dashboard"

urlpatterns = [
    path("memory/", views.memory_page, name="memory"),
    # Faits
    path("memory/facts/", views.facts_section, name="facts"),
    path("memory/facts/<str:key>/", views.fact_card, name="fact-card"),
    path("memory/facts/<str:key>/edit/", views.fact_edit, name="fact-edit"),
    path("memory/facts/<str:key>/forget/", views.fact_forget_view, name="fact-forget"),
    path("memory/facts/<str:key>/restore/", views.fact_restore_view, name="fact-restore"),
    path("memory/facts/<str:key>/erase/", forgetting.fact_erase_view, name="fact-erase"),
    path("memory/facts/<str:key>/history/", views.fact_history, name="fact-history"),
    # Moi & objectifs (the agent's self and goals)
    path("memory/self/", agent_self.self_section, name="self"),
    path("memory/self/<int:item_id>/", agent_self.self_item_card, name="self-card"),
    path("memory/self/<int:item_id>/edit/", agent_self.self_item_edit, name="self-edit"),
    path("memory/self/<int:item_id>/delete/", agent_self.self_item_delete, name="self-delete"),
    path("memory/self/<int:item_id>/restore/", agent_self.self_item_restore, name="self-restore"),
    path("memory/self/<int:item_id>/history/", agent_self.self_item_history, name="self-history"),
    # Recherche
    path("memory/search/", views.search_section, name="search"),
    # Auto-retrieval
    path("memory/retrieval/", retrieval.retrieval_section, name="retrieval"),
    path("memory/retrieval/settings/", retrieval.retrieval_settings, name="retrieval-settings"),
    path("memory/retrieval/preview/", retrieval.retrieval_preview, name="retrieval-preview"),
    # Notes Obsidian
    path("memory/notes/", notes.notes_section, name="notes"),
    path("memory/notes/add/", notes.note_add, name="note-add"),
    path("memory/notes/remove/", notes.note_remove, name="note-remove"),
    path("memory/notes/tag/", notes.note_tag, name="note-tag"),
    path("memory/notes/toggle/", notes.notes_toggle, name="notes-toggle"),
    path("memory/notes/preview/", notes.note_preview, name="note-preview"),
    # Coûts
    path("memory/forget/", forgetting.forget_section, name="forget"),
    path("memory/forget/preview/", forgetting.forget_preview, name="forget-preview"),
    path("memory/forget/confirm/", forgetting.forget_confirm, name="forget-confirm"),
    path(
        "memory/forget/<int:forgetting_id>/restore/",
        forgetting.forget_restore,
        name="forget-restore",
    ),
    path("memory/forget/<int:forgetting_id>/erase/", forgetting.forget_erase, name="forget-erase"),
    path("memory/rooms/", rooms.rooms_section, name="rooms"),
    path("memory/rooms/observe/", rooms.room_observe, name="room-observe"),
    path("memory/rooms/digest/", rooms.digest_now, name="digest-now"),
    path("costs/", views.costs_page, name="costs"),
]
