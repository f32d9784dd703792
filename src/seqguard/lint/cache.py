"""Content-hash cache of per-file facts, one pickle per project and analysis config.

A file whose (mtime, size) is unchanged is trusted; otherwise it is re-read and its
BLAKE2 digest decides whether the old facts still hold (a `touch` costs a hash,
not a parse). Written atomically, so a killed run never leaves a torn cache.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Optional

from seqguard import __version__

CACHE_DIR_NAME = ".seqguard_cache"


def _code_fingerprint() -> str:
    """Facts change when the analysis code does; key the cache on its source too."""
    package = Path(__file__).parent
    h = hashlib.blake2b(__version__.encode(), digest_size=6)
    for source in sorted(package.glob("*.py")):
        try:
            h.update(source.read_bytes())
        except OSError:
            pass
    return h.hexdigest()


def digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


class ResultCache:
    """The last run's findings, keyed on every file's (mtime, size), the targets and
    the configuration: an unchanged tree answers without loading any facts."""

    def __init__(self, root: Path, enabled: bool = True) -> None:
        self.enabled = enabled
        self.path = root / CACHE_DIR_NAME / "last-result.pickle"

    def load(self, key: bytes):
        if not self.enabled:
            return None
        try:
            with open(self.path, "rb") as f:
                stored_key, payload = pickle.load(f)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
            return None
        return payload if stored_key == key else None

    def save(self, key: bytes, payload) -> None:
        if self.enabled:
            _atomic_pickle(self.path, (key, payload))


def _atomic_pickle(path: Path, value) -> None:
    directory = path.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
        ignore = directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Created by seqguard.\n*\n")
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".pickle")
        with os.fdopen(fd, "wb") as f:
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only checkout still lints, just without a cache


class FactCache:
    """relpath -> [mtime_ns, size, digest, ScanFacts, DeepFacts | None]"""

    def __init__(self, root: Path, fingerprint: str, enabled: bool = True) -> None:
        self.enabled = enabled
        self.path = root / CACHE_DIR_NAME / f"facts-{_code_fingerprint()}-{fingerprint}.pickle"
        self.entries: dict[str, list] = {}
        self.dirty = False
        if enabled:
            self._load()

    def _load(self) -> None:
        try:
            with open(self.path, "rb") as f:
                loaded = pickle.load(f)
            if isinstance(loaded, dict):
                self.entries = loaded
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
            self.entries = {}

    def get(self, relpath: str) -> Optional[list]:
        return self.entries.get(relpath)

    def put(self, relpath: str, entry: list) -> None:
        self.entries[relpath] = entry
        self.dirty = True

    def save(self) -> None:
        if not (self.enabled and self.dirty):
            return
        _atomic_pickle(self.path, self.entries)
        for stale in self.path.parent.glob("facts-*.pickle"):
            if stale != self.path:  # written by another seqguard version or config
                stale.unlink(missing_ok=True)
