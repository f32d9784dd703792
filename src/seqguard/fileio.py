"""Writing other people's files safely: atomically, never over a concurrent edit."""

from __future__ import annotations

import os
import stat
import tempfile


class FileChangedError(Exception):
    """The file changed on disk between our read and our write."""


def atomic_write(path: str, data: bytes, expected: bytes | None = None) -> None:
    """Replace `path` with `data`: temp file in the same directory, fsync, rename.
    With `expected`, refuse (FileChangedError) if the file no longer holds it.
    The file's mode is kept."""
    if expected is not None:
        with open(path, "rb") as f:
            if f.read() != expected:
                raise FileChangedError(f"{path}: changed on disk while seqguard ran; rerun to pick up the edit")
    mode = stat.S_IMODE(os.stat(path).st_mode)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".seqguard-tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
