"""Reading and writing other people's files safely. Every read goes through
`read_file`: a FIFO or device never blocks or floods the run, and a file over the size
limit is refused, not loaded. Every write is atomic, never over a concurrent edit, and
never changes what the file is (its links, owner, group and mode stay).

Every temporary file seqguard writes is `.<name>.<random>.seqguard-tmp` next to its
target. It is removed on every exit path Python sees (exceptions, Ctrl-C, SIGTERM,
SIGHUP); what a `kill -9` or a power cut leaves is swept by the next run
(`sweep_stale_temp_files`).
"""

from __future__ import annotations

import atexit
import dataclasses
import errno
import os
import signal
import stat
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

from seqguard.roots import find_project_root

TEMP_SUFFIX = ".seqguard-tmp"
# A temp file lives for milliseconds; one this much older than the run that finds it
# belongs to a run that died, not to a concurrent one still writing.
STALE_AFTER_NS = 60 * 10**9
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


@dataclasses.dataclass(frozen=True)
class FileRead:
    """A file's bytes and the stat of the file they came from, or why there are none:
    `error` in words a message can end with, `kind` for callers that word it their way
    (missing, not-regular, too-large, os-error)."""
    data: Optional[bytes]
    stat: Optional[os.stat_result] = None
    error: Optional[str] = None
    kind: Optional[str] = None


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, in words ("a FIFO", "a directory")."""
    for test, kind in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return kind
    return "not a regular file"


class Unreadable(OSError):
    """`read_bytes` could not read a file; str() is why, in words."""


def read_file(path, limit: Optional[int] = None, *, follow_symlinks: bool = True) -> FileRead:
    """The bytes of a regular file of at most `limit` bytes. Stat comes first (opening
    a device can have side effects) and the open cannot block: a file swapped for a FIFO
    between discovery and the read is caught by the fstat of the open file. Without
    `follow_symlinks` a link is refused (seqguard's own cache files: a link planted
    there must not make it read, or later write, somewhere else)."""
    try:
        st = os.stat(path) if follow_symlinks else os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            return FileRead(None, error="not a regular file; skipped", kind="not-regular")
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | (0 if follow_symlinks else getattr(os, "O_NOFOLLOW", 0)))
    except FileNotFoundError:
        return FileRead(None, error="file vanished during the run", kind="missing")
    except IsADirectoryError:
        return FileRead(None, error="is a directory", kind="not-regular")
    except OSError as e:
        return FileRead(None, error=f"cannot read: {e.strerror or e}", kind="os-error")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return FileRead(None, error="not a regular file; skipped", kind="not-regular")
        if limit is not None and st.st_size > limit:
            return FileRead(None, error=f"too large ({st.st_size:,} bytes, max-file-size is {limit:,}); "
                                        "raise max-file-size in [tool.seqguard] or exclude it", kind="too-large")
        data = _read_all(fd, st.st_size, None if limit is None else limit + 1)
        if limit is not None and len(data) > limit:  # grew while we read
            return FileRead(None, error=f"too large (over max-file-size {limit:,} bytes); "
                                        "raise max-file-size in [tool.seqguard] or exclude it", kind="too-large")
        return FileRead(data, st)
    except OSError as e:
        return FileRead(None, error=f"cannot read: {e.strerror or e}", kind="os-error")
    finally:
        os.close(fd)


def _read_all(fd: int, size: int, cap: Optional[int]) -> bytes:
    """Everything left in `fd` (at most `cap` bytes), expecting `size`: plain `os.read`
    calls (a buffered file object per file cost a cold lint of SGLang's 4,719 files
    0.1 s), until the end, however the file grew or the reads came back short."""
    chunks, got = [], 0
    while cap is None or got < cap:
        want = max(size + 1 - got, 1 << 16)
        chunk = os.read(fd, want if cap is None else min(want, cap - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_bytes(path, limit: Optional[int] = None) -> bytes:
    """`read_file`'s bytes, or `Unreadable` saying why."""
    read = read_file(path, limit)
    if read.data is None:
        raise Unreadable(read.error)
    return read.data


class FileChangedError(Exception):
    """The file changed on disk between our read and our write."""


class WriteRefused(OSError):
    """seqguard will not write this file; `strerror` says why and what to do."""

    def __init__(self, path: str, why: str, code: int = errno.EPERM) -> None:
        super().__init__(code, why, path)

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def point_at_devnull(stream) -> None:
    """Send what is left in `stream` (and anything written to it later) to /dev/null:
    Python's documented remedy when a pipe's reader went away (`| head`), so that the
    interpreter's flush at exit does not fail on it."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass  # no descriptor to replace: nothing can reach a reader anyway


# ---- temporary files -----------------------------------------------------------------

_live: set[str] = set()
_lock = threading.Lock()
_handlers_installed = False
if hasattr(os, "register_at_fork"):
    # A forked worker owns none of its parent's temp files; its signal handler must
    # not delete one the parent is still writing.
    os.register_at_fork(after_in_child=_live.clear)


def temp_file_for(path: str) -> tuple[int, str]:
    """(fd, name) of a new temporary file next to `path`, removed if the process is
    interrupted before the caller renames or unlinks it (then call `forget_temp`)."""
    _install_cleanup()
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=TEMP_SUFFIX)
    with _lock:
        _live.add(tmp)
    return fd, tmp


def forget_temp(tmp: str) -> None:
    with _lock:
        _live.discard(tmp)


def discard_temp(tmp: str) -> None:
    """After a write: the temp file is no longer ours to sweep, and is gone (renamed
    into place, the normal case, or removed here after a failure)."""
    forget_temp(tmp)
    try:
        os.unlink(tmp)
    except OSError:
        pass


def _remove_live_temps() -> None:
    with _lock:
        leftovers = list(_live)
        _live.clear()
    for tmp in leftovers:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _on_signal(signum, frame) -> None:
    _remove_live_temps()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)  # die of the same signal, so the exit status stays honest


def _install_cleanup() -> None:
    """SIGINT already unwinds through `finally`; SIGTERM and SIGHUP kill without it, so
    they get a handler, but only where nobody installed one (a host application's
    handlers are left alone) and only from the main thread (signal's own rule)."""
    global _handlers_installed
    if _handlers_installed:
        return
    _handlers_installed = True
    atexit.register(_remove_live_temps)
    if threading.current_thread() is not threading.main_thread():
        return
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None and signal.getsignal(signum) == signal.SIG_DFL:
            signal.signal(signum, _on_signal)


def is_temp_name(name: str) -> bool:
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def sweep_stale_temp_files(directory: str, names: Optional[list[str]] = None,
                           started_ns: Optional[int] = None) -> list[str]:
    """Remove seqguard temp files in `directory` (or just `names` there) left by a run
    that died: regular files whose mtime is STALE_AFTER_NS older than this run's start.
    Returns the paths removed."""
    started_ns = time.time_ns() if started_ns is None else started_ns
    if names is None:
        try:
            names = [n for n in os.listdir(directory) if is_temp_name(n)]
        except OSError:
            return []
    removed = []
    for name in names:
        path = os.path.join(directory, name)
        try:
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_mtime_ns < started_ns - STALE_AFTER_NS:
                os.unlink(path)
                removed.append(path)
        except OSError:
            continue
    return removed


# ---- writing ---------------------------------------------------------------------------

def _inside(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def resolve_write_target(path: str, root: Optional[str] = None) -> str:
    """The file a write to `path` must change: `path` itself, or a symlink's target
    when that lies inside the project (`root`, default: the project root above
    `path`). Raises WriteRefused for a link leading outside or to a non-file."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        target = os.path.realpath(path)
        if root is None:
            root = str(find_project_root(Path(os.path.dirname(os.path.abspath(path))))[0])
        if not _inside(target, root):
            raise WriteRefused(path, f"a symlink to {target}, outside the project {root}; "
                                     "not followed, edit the target yourself")
        path = target
        st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise WriteRefused(path, "not a regular file; not written")
    return path


def atomic_write(path: str, data: bytes, expected: bytes | None = None, *, force: bool = False,
                 root: Optional[str] = None) -> None:
    """Replace the contents of `path` with `data`, keeping the file's identity.

    With `expected`, refuse (FileChangedError) if the file no longer holds it. A symlink
    is never replaced: its target is edited when it lies inside the project (`root`),
    else WriteRefused. A read-only file is refused unless `force`. A file with several
    hard links is rewritten in place (a rename would split it from its other names);
    any other file goes through a temp file in the same directory, fsync, then rename,
    with the mode, owner and group copied over, so a crash leaves it fully old or
    fully new."""
    path = resolve_write_target(path, root)
    st = os.stat(path)
    read_only = not st.st_mode & 0o222 or not os.access(path, os.W_OK)
    if read_only and not force:
        raise WriteRefused(path, "read-only file; not written (make it writable, or pass --force)", errno.EACCES)
    if expected is not None:
        with open(path, "rb") as f:
            if f.read() != expected:
                raise FileChangedError(f"{path}: changed on disk while seqguard ran; rerun to pick up the edit")
    if st.st_nlink > 1:
        _write_in_place(path, data)
        return
    fd, tmp = temp_file_for(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        tmp_st = os.stat(tmp)
        if (tmp_st.st_uid, tmp_st.st_gid) != (st.st_uid, st.st_gid):
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except PermissionError:
                raise WriteRefused(path, f"owned by uid {st.st_uid} gid {st.st_gid}, which this user cannot "
                                         "give a new file; not written (run as its owner)") from None
        os.replace(tmp, path)
    finally:
        discard_temp(tmp)


def _write_in_place(path: str, data: bytes) -> None:
    """Overwrite through the existing inode, so every hard link sees the new text.
    Not atomic (a crash mid-write can tear the file), which is why only hard-linked
    files take this path."""
    with open(path, "r+b") as f:
        f.write(data)
        f.truncate()
        f.flush()
        os.fsync(f.fileno())
