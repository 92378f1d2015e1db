"""The two notes providers: a real vault folder on disk, and the Local REST API over HTTPS."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest
import trustme

from memory.exceptions import NoteNotFound, StoreUnavailable, UnsafeNotePath
from memory.stores import notes_vault
from memory.stores.notes import MSG_PATH_OUTSIDE, MSG_TLS_REFUSED
from memory.stores.notes_rest_api import LocalRestApiProvider, tag_search_query
from memory.stores.notes_vault import VaultFolderProvider
from tests.fakes.obsidian import FakeNote, FakeObsidianServer

API_KEY = "cle-de-test"


def write(root: Path, rel: str, text: str) -> Path:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "coffre"
    root.mkdir()
    return root


@pytest.fixture(scope="module")
def notes_ca():
    return trustme.CA()


@pytest.fixture
def notes_api(notes_ca):
    notes = {
        "Profil.md": FakeNote("---\ntags: [perso]\n---\n# Profil\n\nMickaël, 42 ans."),
        "Projets/Été & co #1.md": FakeNote("Le projet d'été.", inline_tags=["#makilab/projet"]),
        "Sport.md": FakeNote(
            "---\ntags: Makilab\n---\nCourse à pied.", frontmatter={"tags": "Makilab"}
        ),
        "Carrière.md": FakeNote(
            "---\ntags: [makilab]\n---\nCarrière.", frontmatter={"tags": ["makilab"]}
        ),
        "Autre.md": FakeNote("Rien à voir #makilabs", inline_tags=["#makilabs"]),
        "Image.png": FakeNote("binaire", inline_tags=["#makilab"]),
    }
    with FakeObsidianServer(notes_ca, api_key=API_KEY, notes=notes) as server:
        yield server


def api_provider(server, tmp_path, **kwargs) -> LocalRestApiProvider:
    kwargs.setdefault("ca_cert", server.ca_cert_file(tmp_path))
    kwargs.setdefault("timeout", 2.0)
    return LocalRestApiProvider(server.url, kwargs.pop("api_key", API_KEY), **kwargs)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- Vault folder ------------------------------------------------------------------


def test_it_reads_a_note_from_the_vault_folder(vault):
    write(vault, "Projets/Makilab.md", "---\ntags: [x]\n---\nLa mémoire de Makilab.")

    note = VaultFolderProvider(vault).read("Projets/Makilab")

    assert note.path == "Projets/Makilab.md"
    assert note.content == "La mémoire de Makilab."
    assert note.source == "fixed"


def test_it_reports_a_missing_note(vault):
    with pytest.raises(NoteNotFound):
        VaultFolderProvider(vault).read("Absente.md")


def test_a_missing_vault_is_an_unavailable_source(tmp_path):
    with pytest.raises(StoreUnavailable):
        VaultFolderProvider(tmp_path / "nulle-part").read("a.md")


@pytest.mark.parametrize("path", ["../secret.md", "Notes/../../secret.md", "/etc/hostname"])
def test_it_refuses_traversal_and_absolute_paths_in_folder_mode(vault, path):
    write(vault.parent, "secret.md", "mot de passe")

    with pytest.raises(UnsafeNotePath):
        VaultFolderProvider(vault).read(path)


def test_it_refuses_a_symlinked_note_pointing_outside_the_vault(vault):
    outside = write(vault.parent, "secret.md", "mot de passe")
    os.symlink(outside, vault / "Lien.md")

    with pytest.raises(UnsafeNotePath) as excinfo:
        VaultFolderProvider(vault).read("Lien.md")

    assert str(excinfo.value) == MSG_PATH_OUTSIDE


def test_it_refuses_a_note_under_a_symlinked_folder_pointing_outside(vault):
    write(vault.parent / "ailleurs", "secret.md", "mot de passe")
    os.symlink(vault.parent / "ailleurs", vault / "Dossier")

    with pytest.raises(UnsafeNotePath):
        VaultFolderProvider(vault).read("Dossier/secret.md")


def test_it_follows_a_symlink_that_stays_inside_the_vault(vault):
    write(vault, "Vrai.md", "Contenu réel")
    os.symlink(vault / "Vrai.md", vault / "Alias.md")

    assert VaultFolderProvider(vault).read("Alias.md").content == "Contenu réel"


def test_it_finds_tagged_notes_in_body_and_front_matter_with_nested_tags(vault):
    write(vault, "Corps.md", "Note #makilab")
    write(vault, "Imbriqué.md", "Projet #makilab/projet")
    write(vault, "Front.md", "---\ntags:\n  - makilab\n---\nDepuis le front matter.")
    write(vault, "Sous/Front inline.md", "---\ntags: [sport, '#Makilab']\n---\nInline.")
    write(vault, "Autre.md", "Sans rapport #makilabs et `#makilab`")
    write(vault, "Titre.md", "# makilab\n")

    notes = VaultFolderProvider(vault).find_tagged("makilab")

    assert sorted(note.path for note in notes) == [
        "Corps.md",
        "Front.md",
        "Imbriqué.md",
        "Sous/Front inline.md",
    ]
    assert {note.source for note in notes} == {"tag"}
    front = next(note for note in notes if note.path == "Front.md")
    assert front.content == "Depuis le front matter."


def test_the_tag_scan_skips_hidden_folders_symlinks_out_and_huge_files(vault, monkeypatch):
    write(vault, ".obsidian/plugin.md", "#makilab")
    write(vault, ".trash/Jetée.md", "#makilab")
    outside = write(vault.parent, "dehors.md", "#makilab")
    os.symlink(outside, vault / "Lien dehors.md")
    os.symlink(vault.parent, vault / "Dossier dehors")
    monkeypatch.setattr(notes_vault, "MAX_SCAN_BYTES", 100)
    write(vault, "Énorme.md", "#makilab " + "x" * 200)
    write(vault, "Petite.md", "#makilab")

    notes = VaultFolderProvider(vault).find_tagged("#makilab")

    assert [note.path for note in notes] == ["Petite.md"]


def test_the_tag_scan_stops_at_the_file_cap(vault, monkeypatch):
    monkeypatch.setattr(notes_vault, "MAX_SCAN_FILES", 3)
    for index in range(6):
        write(vault, f"Note {index}.md", "#makilab")

    notes = VaultFolderProvider(vault).find_tagged("makilab")

    assert [note.path for note in notes] == ["Note 0.md", "Note 1.md", "Note 2.md"]


def test_the_tag_scan_rereads_only_changed_files(vault):
    first = write(vault, "Un.md", "#makilab")
    write(vault, "Deux.md", "rien")
    provider = VaultFolderProvider(vault)
    assert [note.path for note in provider.find_tagged("makilab")] == ["Un.md"]

    write(vault, "Deux.md", "maintenant #makilab aussi")
    first.write_text("plus de tag", encoding="utf-8")
    os.utime(first, ns=(time.time_ns(), time.time_ns() + 10_000_000))

    assert [note.path for note in provider.find_tagged("makilab")] == ["Deux.md"]


def test_find_tagged_honours_its_limit(vault):
    for index in range(5):
        write(vault, f"N{index}.md", "#makilab")

    assert len(VaultFolderProvider(vault).find_tagged("makilab", limit=2)) == 2


# --- Local REST API ----------------------------------------------------------------


def test_it_reads_a_note_through_the_api_with_bearer_auth_and_pinned_tls(notes_api, tmp_path):
    note = api_provider(notes_api, tmp_path).read("Profil.md")

    assert note.path == "Profil.md"
    assert note.content == "# Profil\n\nMickaël, 42 ans."
    method, path, headers, _ = notes_api.requests[-1]
    assert (method, path) == ("GET", "/vault/Profil.md")
    assert headers["Authorization"] == f"Bearer {API_KEY}"


def test_it_url_encodes_each_path_segment(notes_api, tmp_path):
    note = api_provider(notes_api, tmp_path).read("Projets/Été & co #1.md")

    assert note.content == "Le projet d'été."
    assert notes_api.requests[-1][1] == "/vault/Projets/%C3%89t%C3%A9%20%26%20co%20%231.md"


def test_it_refuses_traversal_before_calling_the_api(notes_api, tmp_path):
    provider = api_provider(notes_api, tmp_path)

    with pytest.raises(UnsafeNotePath):
        provider.read("../secret.md")
    assert notes_api.requests == []


def test_a_missing_note_is_a_404_not_found(notes_api, tmp_path):
    with pytest.raises(NoteNotFound):
        api_provider(notes_api, tmp_path).read("Absente.md")


def test_it_searches_tags_with_the_plugin_jsonlogic_endpoint(notes_api, tmp_path):
    notes = api_provider(notes_api, tmp_path).find_tagged("makilab")

    assert [note.path for note in notes] == ["Carrière.md", "Projets/Été & co #1.md", "Sport.md"]
    assert {note.source for note in notes} == {"tag"}
    assert notes[0].content == "Carrière."
    search = next(request for request in notes_api.requests if request[0] == "POST")
    assert search[1] == "/search/"
    assert search[2]["Content-Type"] == "application/vnd.olrapi.jsonlogic+json"


def test_the_tag_query_matches_case_insensitively_and_nested_tags_only():
    from tests.fakes.obsidian import jsonlogic_apply

    query = tag_search_query("makilab")

    def tags_of(tags, fm_tags=None):
        return jsonlogic_apply(query, {"tags": tags, "frontmatter": {"tags": fm_tags}})

    assert tags_of(["MakiLab"]) == ["MakiLab"]
    assert tags_of(["makilab/projet/v2"]) == ["makilab/projet/v2"]
    assert tags_of([], "sport, #makilab") == ["sport, #makilab"]
    assert tags_of(["makilabs", "projet/makilab", "maki"]) == []


def test_a_wrong_api_key_makes_the_source_unavailable(notes_api, tmp_path):
    with pytest.raises(StoreUnavailable) as excinfo:
        api_provider(notes_api, tmp_path, api_key="mauvaise").read("Profil.md")

    assert "401" in str(excinfo.value)


def test_an_unreachable_port_makes_the_source_unavailable():
    provider = LocalRestApiProvider(f"https://127.0.0.1:{free_port()}", API_KEY, timeout=1.0)

    with pytest.raises(StoreUnavailable) as excinfo:
        provider.find_tagged("makilab")

    assert "injoignable" in str(excinfo.value)


def test_a_hanging_server_times_out_quickly(notes_ca, tmp_path):
    with FakeObsidianServer(notes_ca, api_key=API_KEY, hang=10) as server:
        provider = api_provider(server, tmp_path, timeout=0.3)
        started = time.monotonic()

        with pytest.raises(StoreUnavailable) as excinfo:
            provider.read("Profil.md")

    assert time.monotonic() - started < 2
    assert "délai" in str(excinfo.value)


def test_an_unpinned_self_signed_certificate_is_refused(notes_api):
    provider = LocalRestApiProvider(notes_api.url, API_KEY, timeout=2.0)

    with pytest.raises(StoreUnavailable) as excinfo:
        provider.read("Profil.md")

    assert str(excinfo.value) == MSG_TLS_REFUSED
    assert notes_api.requests == []


def test_a_certificate_from_another_ca_is_refused_even_when_pinning(notes_api, tmp_path):
    other = tmp_path / "autre.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    provider = LocalRestApiProvider(notes_api.url, API_KEY, ca_cert=str(other))

    with pytest.raises(StoreUnavailable) as excinfo:
        provider.read("Profil.md")

    assert str(excinfo.value) == MSG_TLS_REFUSED


def test_verify_false_accepts_the_self_signed_certificate_with_a_warning(notes_api, caplog):
    provider = LocalRestApiProvider(notes_api.url, API_KEY, verify=False)

    assert provider.read("Profil.md").path == "Profil.md"
    assert "unsafe" in caplog.text


def test_an_unreadable_ca_file_is_reported_not_crashed(tmp_path):
    with pytest.raises(StoreUnavailable):
        LocalRestApiProvider("https://127.0.0.1:1", API_KEY, ca_cert=str(tmp_path / "absent.pem"))
