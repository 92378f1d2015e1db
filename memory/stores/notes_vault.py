"""The embedded notes source: an Obsidian vault as a local folder (OBSIDIAN_VAULT_PATH).

Reads stay inside the vault (symbolic links leading out are refused) and within
size limits; the tag index is kept per file and re-read when a file changes.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from pathlib import Path
from typing import NamedTuple

from memory.exceptions import NoteNotFound, StoreUnavailable, UnsafeNotePath
from memory.stores.notes import (
    MAX_NOTE_BYTES,
    MSG_NOT_FOUND,
    MSG_PATH_OUTSIDE,
    MSG_UNREADABLE,
    MSG_VAULT_MISSING,
    NOTE_SUFFIX,
    Note,
    note_build,
    note_path_normalize,
    note_tags,
    tag_matches,
    tag_normalize,
)

logger = logging.getLogger(__name__)

# Scanning a vault for tags: files looked at, and files too big to read.
MAX_SCAN_FILES = 2000
MAX_SCAN_BYTES = 512 * 1024
# A folder's listing is kept only when it was taken at least this long after the
# folder's mtime: a change within the same tick of the file system's clock as the
# one before keeps its mtime, and a listing taken within that tick may miss it.
MARKER_RACY_NS = 2_000_000_000


def _now_ns() -> int:
    return time.time_ns()


class _Listing(NamedTuple):
    mtime: int  # the folder's mtime when listed
    listed_at: int  # _now_ns() then
    folders: tuple[str, ...]  # the sub-folders to walk, in order
    names: int  # a hash of the other names in it


def _read_limited(file_path: Path, shown_path: str) -> str:
    try:
        with file_path.open("rb") as handle:
            data = handle.read(MAX_NOTE_BYTES)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        raise NoteNotFound(MSG_NOT_FOUND.format(path=shown_path)) from None
    except OSError as exc:
        raise NoteNotFound(
            MSG_UNREADABLE.format(path=shown_path, reason=exc.strerror or type(exc).__name__)
        ) from None
    return data.decode("utf-8", errors="replace")


def _folder_listing(dirpath: str, mtime: int, now: int) -> _Listing | None:
    """One folder's listing; None if it cannot be listed. Hidden sub-folders (.obsidian,
    .trash, .git) are not walked, nor folders reached through a symbolic link."""
    folders: list[str] = []
    names: list[str] = []
    try:
        with os.scandir(dirpath) as entries:
            for entry in entries:
                try:
                    walk_into = entry.is_dir(follow_symlinks=False)
                except OSError:
                    walk_into = False
                if not walk_into:
                    names.append(entry.name)
                elif not entry.name.startswith("."):
                    folders.append(entry.name)
    except OSError:
        return None
    return _Listing(
        mtime,
        now,
        tuple(os.path.join(dirpath, name) for name in sorted(folders)),
        hash(tuple(sorted(names))),
    )


class VaultFolderProvider:
    """Notes read straight from a vault folder on this machine."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        # rel path -> (mtime_ns, size, tags): a re-scan only reads changed files.
        self._tag_index: dict[str, tuple[int, int, frozenset[str]]] = {}
        self._index_lock = threading.Lock()
        # Each folder's last listing (change_marker).
        self._listings: dict[str, _Listing] = {}
        self._marker_lock = threading.Lock()

    def _real_root(self) -> Path:
        try:
            root = self.root.resolve(strict=True)
        except OSError:
            raise StoreUnavailable(MSG_VAULT_MISSING.format(root=self.root)) from None
        if not root.is_dir():
            raise StoreUnavailable(MSG_VAULT_MISSING.format(root=self.root))
        return root

    def change_marker(self) -> tuple:
        """What changes when a note appears or leaves: the vault's folders, their mtimes
        and the names in each (hidden folders left out).

        Read before every message's context notes, so it lists only what may have
        changed: a file created, deleted or renamed changes its folder's mtime, and a
        folder whose mtime has not moved keeps its last listing (one stat a folder
        instead of a listing of every note: 2,400 notes in 81 folders, 2.15 -> 0.19
        ms of CPU a message). A listing taken within MARKER_RACY_NS of its folder's
        mtime is taken again: a second change within the same tick of the file
        system's clock leaves the mtime as it was. The context-notes cache holds a
        result only while the marker is the same, so a note that appears is found
        at once, not after the cache's lifetime.
        """
        now = _now_ns()
        with self._marker_lock:
            listings: dict[str, _Listing] = {}
            marker = []
            pending = [os.fspath(self.root)]
            while pending:
                dirpath = pending.pop()
                try:
                    mtime = os.stat(dirpath).st_mtime_ns
                except OSError:
                    continue
                listing = self._listings.get(dirpath)
                if (
                    listing is None
                    or listing.mtime != mtime
                    or listing.listed_at - mtime < MARKER_RACY_NS
                ):
                    listing = _folder_listing(dirpath, mtime, now)
                    if listing is None:
                        continue
                listings[dirpath] = listing
                marker.append((dirpath, mtime, listing.names))
                pending.extend(reversed(listing.folders))  # walked in order
            self._listings = listings
        return tuple(marker)

    def read(self, path: str) -> Note:
        rel = note_path_normalize(path)
        root = self._real_root()
        real = root.joinpath(*rel.split("/")).resolve()
        if not real.is_relative_to(root):
            raise UnsafeNotePath(MSG_PATH_OUTSIDE)
        return note_build(path=rel, text=_read_limited(real, rel), source="fixed")

    def find_tagged(self, tag: str, *, limit: int | None = None) -> list[Note]:
        wanted = tag_normalize(tag)
        if not wanted:
            return []
        root = self._real_root()
        matches = [
            (rel, real)
            for rel, real, tags in self._scan(root)
            if any(tag_matches(note_tag, wanted) for note_tag in tags)
        ]
        notes: list[Note] = []
        for rel, real in matches:
            if limit is not None and len(notes) >= limit:
                break
            try:
                text = _read_limited(real, rel)
            except NoteNotFound:
                continue  # deleted since the scan
            notes.append(note_build(path=rel, text=text, source="tag"))
        return notes

    def _scan(self, root: Path) -> list[tuple[str, Path, frozenset[str]]]:
        """Every note of the vault with its tags, in path order, within the caps."""
        previous = self._tag_index
        index: dict[str, tuple[int, int, frozenset[str]]] = {}
        found: list[tuple[str, Path, frozenset[str]]] = []
        seen_files = 0
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            # Hidden folders (.obsidian, .trash, .git) hold no context notes.
            dirnames[:] = sorted(name for name in dirnames if not name.startswith("."))
            for name in sorted(filenames):
                if name.startswith(".") or not name.lower().endswith(NOTE_SUFFIX):
                    continue
                seen_files += 1
                if seen_files > MAX_SCAN_FILES:
                    logger.warning(
                        "Obsidian vault %s has more than %d notes: the tag scan stopped there.",
                        root,
                        MAX_SCAN_FILES,
                    )
                    self._store_index(index)
                    return found
                entry = self._scan_file(root, Path(dirpath, name), previous, index)
                if entry is not None:
                    found.append(entry)
        self._store_index(index)
        return found

    def _scan_file(
        self,
        root: Path,
        full_path: Path,
        previous: dict[str, tuple[int, int, frozenset[str]]],
        index: dict[str, tuple[int, int, frozenset[str]]],
    ) -> tuple[str, Path, frozenset[str]] | None:
        if full_path.is_symlink():
            real = full_path.resolve()
            if not real.is_relative_to(root):
                logger.info("Skipping %s: a symlink leaving the vault.", full_path)
                return None
        else:
            real = full_path
        try:
            info = real.stat()
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SCAN_BYTES:
            return None
        rel = full_path.relative_to(root).as_posix()
        cached = previous.get(rel)
        if cached is not None and cached[0] == info.st_mtime_ns and cached[1] == info.st_size:
            tags = cached[2]
        else:
            try:
                tags = frozenset(note_tags(real.read_bytes().decode("utf-8", errors="replace")))
            except OSError:
                return None
        index[rel] = (info.st_mtime_ns, info.st_size, tags)
        return rel, real, tags

    def _store_index(self, index: dict[str, tuple[int, int, frozenset[str]]]) -> None:
        with self._index_lock:
            self._tag_index = index
