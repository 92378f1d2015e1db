"""The "Salons observés" section of /memory."""

from __future__ import annotations

import pytest

from memory.models import ChannelSettings, Digest, DigestState, Job, Message

pytestmark = pytest.mark.django_db


def test_the_page_shows_the_observed_rooms_the_live_count_and_the_digests(staff_client):
    ChannelSettings.objects.create(channel="lobby", observed=True)
    Message.objects.create(channel="lobby", role="user", content="Salut", observed=True)
    Digest.objects.create(state=DigestState.DONE, messages_digested=3, facts_stored=2)

    page = staff_client.get("/memory/").content.decode()

    assert "Salons observés" in page and "<code>lobby</code>" in page
    assert "Messages en mémoire live</dt><dd>1</dd>" in page
    assert "3 messages digérés" in page and "2 faits enregistrés" in page
    assert "Prochain digest" in page and "Lancer le digest maintenant" in page


def test_observing_a_room_and_forcing_a_digest_from_the_page(staff_client):
    response = staff_client.post(
        "/memory/rooms/observe/", {"channel": "lobby"}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    assert "Le salon « <bdi>lobby</bdi> » est observé." in response.content.decode()
    assert ChannelSettings.objects.get(channel="lobby").observed

    response = staff_client.post("/memory/rooms/digest/", headers={"HX-Request": "true"})
    assert "Digest demandé" in response.content.decode()
    assert Job.objects.filter(kind="digest", state="queued").count() == 1

    staff_client.post("/memory/rooms/observe/", {"channel": "lobby", "observed": "false"})
    assert not ChannelSettings.objects.get(channel="lobby").observed


def test_a_bad_room_name_is_refused_in_french(staff_client):
    response = staff_client.post(
        "/memory/rooms/observe/", {"channel": "deux mots"}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 422
    assert "Le canal doit être un nom court" in response.content.decode()


@pytest.mark.parametrize("said", ["no", "maybe", "", "oui", "off"])
def test_a_yes_or_no_the_page_does_not_send_is_refused_and_observes_nothing(staff_client, said):
    """QA: any « observed » but the exact word false (« 0 », « no », « False », « maybe »)
    observed the room: the owner got the opposite of what was asked."""
    response = staff_client.post(
        "/memory/rooms/observe/",
        {"channel": "lobby", "observed": said},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 422
    assert "Un booléen est attendu" in response.content.decode()
    assert not ChannelSettings.objects.filter(channel="lobby", observed=True).exists()


@pytest.mark.parametrize(("said", "observed"), [("0", False), ("False", False), ("1", True)])
def test_the_words_of_a_form_are_read_as_everywhere(staff_client, said, observed):
    ChannelSettings.objects.create(channel="lobby", observed=not observed)
    response = staff_client.post(
        "/memory/rooms/observe/",
        {"channel": "lobby", "observed": said},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    assert ChannelSettings.objects.get(channel="lobby").observed is observed


def test_the_page_has_one_element_per_id_and_the_rooms_input_its_label(staff_client):
    """QA: the preview's « Canal » and the rooms' « Salon à observer » were both
    id="id_channel": clicking the rooms' label focused the preview's field."""
    import re
    from collections import Counter

    html = staff_client.get("/memory/").content.decode()

    ids = Counter(re.findall(r'\sid="([^"]+)"', html))
    assert [i for i, n in ids.items() if n > 1] == []
    assert re.search(r'<label for="id_room_channel"[^>]*>Salon à observer', html), html


def test_a_rooms_name_is_echoed_bidi_isolated(staff_client):
    """A room named in Arabic or Hebrew letters (channel names take any letter) would
    reorder the sentence around it: its name is isolated, as keys and topics are."""
    response = staff_client.post(
        "/memory/rooms/observe/", {"channel": "שיחה"}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    assert "Le salon « <bdi>שיחה</bdi> » est observé." in response.content.decode()
