"""Lint's caches: per-file facts keyed by content hash, the last run's result, and
where each file's fixes land (for SARIF).

Where: the user's cache directory (`$SEQGUARD_CACHE_DIR`, else `$XDG_CACHE_HOME/seqguard`
or `~/.cache/seqguard`; `~/Library/Caches/seqguard` on macOS, `%LOCALAPPDATA%\\seqguard`
on Windows), one folder per project root, as Black does. Not in the working tree, as
Ruff does: a tree can be written by anyone who can open a pull request, and CI runs
seqguard on it, so an in-tree cache would have to be ignored whenever git tracks a file
in it, which costs a `git` call on every warm run (budget: 0.2 s) and still trusts an
untracked file that a build step dropped there. Out of the tree, no commit can reach
it; the files are also signed with a per-user secret (cache_format) and hold data only.

When a cached fact is trusted without reading the file: its stat key (mtime, ctime,
size, inode) is unchanged, and its mtime is older than the start of the run that
stored it by RACY_NS (git's racy-timestamp rule: a file written in the same clock tick
as our read could change again without moving its mtime). `touch -d` restores an
mtime but not the ctime, so such an edit is still seen. Otherwise the file is read,
and its BLAKE2 digest decides whether the old facts still hold (a `touch` costs a
hash, not a parse).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import re
import sys
import time
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, NamedTuple, Optional

from seqguard import __version__
from seqguard.diagnostics import Diagnostic
from seqguard.fileio import sweep_stale_temp_files
from seqguard.lint.cache_format import Malformed, decoder, dumps_signed, encode, load_secret, loads_signed, \
    read_regular, write_atomic

if TYPE_CHECKING:
    from seqguard.lint.model import DeepFacts, ScanFacts

# File timestamps come from the kernel's coarse clock (a tick behind time.time_ns()) and
# are 1-2 s apart on some file systems (FAT, some network mounts); 2 s covers both.
RACY_NS = 2 * 10**9
StatKey = tuple[int, int, int, int]   # (mtime_ns, ctime_ns, size, inode)


def stat_key(st: os.stat_result) -> StatKey:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def stat_of(abspath: str) -> Optional[StatKey]:
    """The stat key of a path, or None when it cannot be stat'ed."""
    try:
        return stat_key(os.stat(abspath))
    except OSError:
        return None


def cache_home() -> Optional[Path]:
    """The folder every project's cache lives under; None when `$SEQGUARD_CACHE_DIR`
    is relative (`cache_dir_problem` says why), which turns the cache off."""
    override = os.environ.get("SEQGUARD_CACHE_DIR")
    if override:
        path = Path(override).expanduser()
        return path if path.is_absolute() else None
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = str(Path.home() / "Library" / "Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "seqguard"


def cache_dir_problem() -> Optional[str]:
    """Why the cache is off although asked for, or None. A relative `$SEQGUARD_CACHE_DIR`
    would put the cache in whatever folder seqguard runs from (the project itself, where
    a commit can reach it and `git status` shows it), so it is not used at all."""
    override = os.environ.get("SEQGUARD_CACHE_DIR")
    if override and not Path(override).expanduser().is_absolute():
        return (f"SEQGUARD_CACHE_DIR={override}: expected an absolute path, got a relative one (it would put the "
                f"cache inside the folder seqguard runs in); running without the cache: set it to an absolute path")
    return None


def project_cache_dir(root: Path) -> Optional[Path]:
    """One folder per project root: its name (readable) and a hash of its real path."""
    home = cache_home()
    if home is None:
        return None
    real = os.path.realpath(root)
    tag = hashlib.blake2b(real.encode(errors="surrogateescape"), digest_size=8).hexdigest()
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(real))[:40] or "root"
    return home / f"{name}-{tag}"


_fingerprint: Optional[str] = None


def package_fingerprint() -> str:
    """The seqguard version and the path, size and mtime of every .py file of the
    installed package (rules, config, analysis, all of it): a changed rule must not keep
    printing its old message. What Python trusts to reuse a module's bytecode, and a
    stat per file, not a read (about 2 ms for ~130 files, once per process)."""
    global _fingerprint
    if _fingerprint is None:
        package = str(Path(__file__).resolve().parent.parent)
        h = hashlib.blake2b(__version__.encode(), digest_size=16)
        for relpath, size, mtime_ns in sorted(_package_sources(package, "")):
            h.update(b"%s\0%d\0%d\0" % (relpath.encode(errors="surrogateescape"), size, mtime_ns))
        _fingerprint = h.hexdigest()
    return _fingerprint


def _package_sources(folder: str, prefix: str) -> Iterator[tuple[str, int, int]]:
    try:
        with os.scandir(folder) as entries:
            found = list(entries)
    except OSError:
        return
    for entry in found:
        if entry.is_dir(follow_symlinks=False):
            if entry.name != "__pycache__":
                yield from _package_sources(entry.path, f"{prefix}{entry.name}/")
        elif entry.name.endswith(".py"):
            try:
                st = entry.stat()
                yield f"{prefix}{entry.name}", st.st_size, st.st_mtime_ns
            except OSError:
                yield f"{prefix}{entry.name}", -1, -1


def digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


class _Store:
    """A signed JSON file in the project's cache folder; unusable (a no-op) when the
    cache is disabled or the cache home is not the user's own."""

    def __init__(self, root: Path, name: str, enabled: bool, started_ns: Optional[int],
                 secret: Optional[bytes] = None) -> None:
        self.started_ns = time.time_ns() if started_ns is None else started_ns
        home = cache_home()
        self.secret = secret if secret is not None else load_secret(home) if enabled and home is not None else None
        folder = project_cache_dir(root)
        self.enabled = enabled and self.secret is not None and folder is not None
        self.path = (folder or Path(os.devnull)) / name

    def read(self) -> Optional[dict]:
        if not self.enabled:
            return None
        data = read_regular(self.path)
        if data is None:
            return None
        try:
            value = loads_signed(self.secret, data)
        except Malformed:
            return None
        if type(value) is not dict or value.get("fingerprint") != package_fingerprint():
            return None
        stamp = value.get("stamp_ns")
        return value if type(stamp) is int else None

    def write(self, value: dict) -> None:
        if not self.enabled:
            return
        value = {"fingerprint": package_fingerprint(), "stamp_ns": self.started_ns, **value}
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_atomic(self.path, dumps_signed(self.secret, value))
        except OSError:
            pass  # a full disk or a read-only home: lint still runs, just without a cache


_decode_result = decoder(tuple[tuple[Diagnostic, ...], tuple[str, ...]])


class ResultCache:
    """The last run's findings, keyed on every file's stat key, the targets, the
    configuration and the package fingerprint: an unchanged tree answers without
    loading any facts."""

    def __init__(self, root: Path, enabled: bool = True, started_ns: Optional[int] = None) -> None:
        self.store = _Store(root, "last-result.json", enabled, started_ns)
        self.enabled = self.store.enabled
        if self.enabled:  # once per run: what a killed run left in the cache folder
            sweep_stale_temp_files(str(self.store.path.parent), started_ns=self.store.started_ns)

    def load(self, key: bytes, newest_mtime_ns: int):
        """(diagnostics, warnings) stored under `key`, or None; also None when a file
        is as new as the stored run (racy: it may have changed since, unseen)."""
        stored = self.store.read()
        if stored is None or stored.get("key") != key.hex():
            return None
        if newest_mtime_ns >= stored["stamp_ns"] - RACY_NS:
            return None
        try:
            diagnostics, warnings = _decode_result(stored.get("payload"))
        except (Malformed, TypeError):
            return None
        return list(diagnostics), list(warnings)

    def save(self, key: bytes, payload) -> None:
        diagnostics, warnings = payload
        self.store.write({"key": key.hex(), "payload": encode((tuple(diagnostics), tuple(warnings)))})


class Entry(NamedTuple):
    stat: StatKey
    digest: bytes
    scan: Optional["ScanFacts"]
    deep: Optional["DeepFacts"]


@functools.cache
def _entry_decoder():
    """Built on first use: a run answered from the result cache never loads the facts' types."""
    from seqguard.lint.model import DeepFacts, ScanFacts

    return decoder(tuple[tuple[int, int, int, int], str, Optional[ScanFacts], Optional[DeepFacts]])


# The facts are kept in shards, by a hash of the path: a pre-commit run on one changed
# file rewrites the one shard holding it (a 32nd of SGLang's 3.9 MB), not all of them.
SHARDS = 32


def shard_of(relpath: str) -> int:
    return zlib.crc32(relpath.encode(errors="surrogateescape")) % SHARDS


class FactCache:
    """relpath -> Entry, for one analysis configuration. Entries are decoded (and
    schema-checked) on first use; a malformed one is dropped, so its file is
    re-analysed. A shard is rewritten only when one of its entries changed, and then
    holds only the entries checked or written in this run, so a racy entry can never
    be carried over under a newer timestamp; each shard keeps the stamp of the run
    that wrote it."""

    def __init__(self, root: Path, fingerprint: str, enabled: bool = True,
                 started_ns: Optional[int] = None) -> None:
        home = cache_home()
        secret = load_secret(home) if enabled and home is not None else None
        self.stores = [_Store(root, f"facts-{fingerprint}-{i:02d}.json", secret is not None, started_ns, secret)
                       for i in range(SHARDS)]
        self.enabled = secret is not None
        self._raw: dict = {}
        self._stamps: dict[str, int] = {}   # relpath -> the stamp of the run that stored it
        self._entries: dict[str, Entry] = {}
        self._keep: set[str] = set()
        self._dirty: set[int] = set()
        for store in self.stores if self.enabled else ():
            stored = store.read()
            if stored is not None and type(stored.get("entries")) is dict:
                self._raw.update(stored["entries"])
                self._stamps.update(dict.fromkeys(stored["entries"], stored["stamp_ns"]))

    @property
    def dirty(self) -> bool:
        return bool(self._dirty)

    def get(self, relpath: str) -> Optional[Entry]:
        entry = self._entries.get(relpath)
        if entry is None:
            raw = self._raw.get(relpath)
            if raw is None:
                return None
            try:
                stat, hexdigest, scan, deep = _entry_decoder()(raw)
                entry = Entry(stat, bytes.fromhex(hexdigest), scan, deep)
            except (Malformed, ValueError, TypeError):
                self._raw.pop(relpath, None)
                return None
            self._entries[relpath] = entry
        return entry

    def fresh(self, relpath: str, stat: Optional[StatKey]) -> Optional[Entry]:
        """The entry, if it can be trusted without reading the file."""
        entry = self.get(relpath)
        if entry is None or stat is None or entry.stat != stat or \
                stat[0] >= self._stamps.get(relpath, 0) - RACY_NS:
            return None
        self._keep.add(relpath)
        return entry

    def put(self, relpath: str, entry: Entry) -> None:
        self._entries[relpath] = entry
        self._raw[relpath] = None  # re-encoded on save
        self._keep.add(relpath)
        self._dirty.add(shard_of(relpath))

    def save(self) -> None:
        if not (self.enabled and self._dirty):
            return
        shards: dict[int, dict] = {i: {} for i in self._dirty}
        for relpath in self._keep:
            entries = shards.get(shard_of(relpath))
            if entries is None:
                continue  # its shard is unchanged on disk
            raw = self._raw.get(relpath)
            if raw is None:
                e = self._entries[relpath]
                raw = [list(e.stat), e.digest.hex(), encode(e.scan), encode(e.deep)]
            entries[relpath] = raw
        for i, entries in sorted(shards.items()):
            self.stores[i].write({"entries": entries})
        self._dirty.clear()  # saved: a second save writes only what was put since
        ours = {store.path for store in self.stores}
        for stale in self.stores[0].path.parent.glob("facts-*.json"):
            if stale not in ours:  # another analysis configuration, or an older layout: superseded
                try:
                    stale.unlink()
                except OSError:
                    pass


@dataclasses.dataclass(frozen=True)
class Placed:
    """Where one file's fixes land (`fixes.exact_placements`), for the file as it
    was under `stat` and for exactly these fixes."""
    relpath: str
    stat: tuple[int, int, int, int]
    edits: tuple[tuple[int, str], ...]
    where: tuple[tuple[int, int, str], ...]   # (line, lines replaced, text), one per edit; () for none


_decode_placed = decoder(tuple[Placed, ...])


class PlacementCache:
    """Placements by file, in one file of the project's cache folder. An entry is
    trusted as a fact is (its stat key unchanged, and older than the run that stored it
    by RACY_NS) and only for the same fixes; the file is rewritten when a placement was
    computed, holding only the entries this run used."""

    def __init__(self, root: Path, enabled: bool = True, started_ns: Optional[int] = None) -> None:
        self.store = _Store(root, "fix-placements.json", enabled, started_ns)
        stored = self.store.read()
        self._stamp = stored["stamp_ns"] if stored is not None else 0
        try:
            entries = _decode_placed(stored.get("entries")) if stored is not None else ()
        except (Malformed, TypeError):
            entries = ()
        self._old = {entry.relpath: entry for entry in entries}
        self._used: dict[str, Placed] = {}
        self._dirty = False

    def get(self, relpath: str, stat: Optional[StatKey], edits: list[tuple[int, str]]):
        """The placements of `edits` in the file, when they can be trusted; else None."""
        entry = self._old.get(relpath)
        if entry is None or stat is None or entry.stat != stat or entry.edits != tuple(edits) or \
                stat[0] >= self._stamp - RACY_NS:
            return None
        self._used[relpath] = entry
        return list(entry.where)

    def put(self, relpath: str, stat: Optional[StatKey], edits: list[tuple[int, str]],
            where: list[tuple[int, int, str]]) -> None:
        if stat is not None:
            self._used[relpath] = Placed(relpath, stat, tuple(edits), tuple(where))
            self._dirty = True

    def save(self) -> None:
        if self._dirty:
            self.store.write({"entries": encode(tuple(self._used.values()))})
            self._dirty = False
