"""Routes of the agent API, mounted at /api/agent/."""

from django.urls import path

from agent.api import views

app_name = "agent-api"

urlpatterns = [
    path("chat", views.ChatApi.as_view(), name="chat"),
    path("chat/stream", views.ChatStreamApi.as_view(), name="chat-stream"),
]
