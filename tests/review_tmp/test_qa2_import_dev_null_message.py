"""``memory_import /dev/null`` (a path that exists but is no regular file) is refused with
« Fichier introuvable : /dev/null », which is false: the file exists. A directory gets its own
accurate message (« C'est un dossier, pas un fichier »)."""

from __future__ import annotations

import os
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="no /dev/null")
def test_an_existing_special_file_is_not_said_missing():
    with pytest.raises(CommandError) as caught:
        call_command("memory_import", "/dev/null", stdout=StringIO(), stderr=StringIO())
    assert "introuvable" not in str(caught.value), str(caught.value)
