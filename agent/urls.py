"""The dashboard chat panel, mounted at chat/."""

from django.urls import path

from agent import views

app_name = "agent"

urlpatterns = [
    path("", views.chat_page, name="chat"),
    path("send/", views.chat_send, name="chat-send"),
]
