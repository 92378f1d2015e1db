"""The dashboard chat form."""

from django import forms

from agent.api.serializers import MAX_MESSAGE_CHARS, message_shows_something


class ChatForm(forms.Form):
    message = forms.CharField(
        label="Message",
        max_length=MAX_MESSAGE_CHARS,
        strip=True,
        widget=forms.Textarea(
            attrs={"rows": 3, "placeholder": "Écris à Makilab…", "autocomplete": "off"}
        ),
        validators=[message_shows_something],
    )
