"""The cache's on-disk format: signed JSON, decoded against the dataclasses' own type
hints. Data only: nothing in a cache file can name a class to build or code to run
(pickle could, and a committed `.seqguard_cache/*.pickle` once ran `os.system` on a
plain `seqguard lint`).

A file is one header line, `seqguard-cache <FORMAT> <mac>\\n`, then a JSON body. The
mac is a keyed BLAKE2b of the body under a per-user secret that lives in the user's
cache directory (mode 0600), never in a working tree: a file copied from anywhere else
(a commit, another user, another machine) fails the check and is ignored, before its
JSON is even parsed. Whatever passes is still checked against the schema; any
mismatch is `Malformed`, and the caller re-analyses.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import hmac
import json
import os
import types
import typing
from pathlib import Path
from typing import Any, Callable, Optional, Union

from seqguard.fileio import forget_temp, temp_file_for

# Bump when the layout of a cache file changes (not for model changes: those change
# the package fingerprint, which every key includes).
FORMAT = 1
HEADER = b"seqguard-cache"


class Malformed(ValueError):
    """A cache file or entry that does not match the schema; re-analyse instead."""


# ---- signing -----------------------------------------------------------------------

def load_secret(home: Path) -> Optional[bytes]:
    """The per-user signing key, created on first use; None when `home` is not ours
    alone (owned by someone else, or writable by others), which turns the cache off."""
    try:
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = home.stat()
        if hasattr(os, "geteuid") and (st.st_uid != os.geteuid() or st.st_mode & 0o022):
            return None
        path = home / "secret"
        try:
            with open(path, "rb") as f:
                secret = f.read(64)
        except FileNotFoundError:
            secret = os.urandom(32)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(secret)
        return secret if len(secret) >= 16 else None
    except OSError:
        return None  # a race on creation or an unwritable home: run without a cache


def _mac(secret: bytes, body: bytes) -> str:
    return hashlib.blake2b(body, key=secret[:64], digest_size=16).hexdigest()


def dumps_signed(secret: bytes, value: Any) -> bytes:
    body = json.dumps(value, separators=(",", ":")).encode()
    return b"%s %d %s\n" % (HEADER, FORMAT, _mac(secret, body).encode()) + body


def loads_signed(secret: bytes, data: bytes) -> Any:
    """The JSON value of a signed file; Malformed if the header, mac or JSON is wrong."""
    head, sep, body = data.partition(b"\n")
    parts = head.split(b" ")
    if not sep or len(parts) != 3 or parts[0] != HEADER or parts[1] != str(FORMAT).encode():
        raise Malformed("not a seqguard cache file of this format")
    if not hmac.compare_digest(parts[2], _mac(secret, body).encode()):
        raise Malformed("bad signature")
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as e:
        raise Malformed(f"bad JSON: {e}") from None


def read_regular(path: Path, limit: int = 1 << 30) -> Optional[bytes]:
    """The bytes of `path` if it is a regular file (a FIFO planted at the cache path
    must not hang the run); None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not (st.st_mode & 0o170000 == 0o100000) or st.st_size > limit:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    except OSError:
        return None
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Temp file in the same directory (the shared temp pattern, so a killed run's
    leftovers are swept), then rename. Errors are the caller's to ignore."""
    fd, tmp = temp_file_for(str(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        forget_temp(tmp)
        try:
            os.unlink(tmp)
        except OSError:
            pass


# ---- dataclasses <-> JSON ------------------------------------------------------------
# A dataclass is a JSON list of its fields in declaration order; tuples and frozensets
# are lists; enums their value. Decoders are built once per type from the type hints.

def encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return [encode(getattr(value, f.name)) for f in _fields(type(value))]
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [encode(v) for v in value]
    if isinstance(value, frozenset):
        return sorted(encode(v) for v in value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    raise TypeError(f"cache: cannot encode {type(value).__name__}")


_FIELDS: dict[type, tuple] = {}
_DECODERS: dict[Any, Callable[[Any], Any]] = {}


def _fields(cls: type) -> tuple:
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = tuple(f for f in dataclasses.fields(cls) if f.init)
    return found


def decoder(hint: Any) -> Callable[[Any], Any]:
    """A function JSON value -> typed value that raises Malformed on any mismatch."""
    found = _DECODERS.get(hint)
    if found is None:
        found = _DECODERS[hint] = _build(hint)
    return found


def _build(hint: Any) -> Callable[[Any], Any]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is type(None):
        return _exact(type(None))
    if hint in (bool, int, str):
        return _exact(hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        def enum_value(v: Any, cls=hint) -> Any:
            try:
                return cls(v)
            except ValueError:
                raise Malformed(f"not a {cls.__name__}: {v!r}") from None
        return enum_value
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _dataclass_decoder(hint)
    if origin in (Union, getattr(types, "UnionType", Union)):
        options = [decoder(a) for a in args]
        if type(None) in args:
            rest = [decoder(a) for a in args if a is not type(None)]

            def optional(v: Any) -> Any:
                return None if v is None else _first(rest, v)
            return optional
        return lambda v: _first(options, v)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = decoder(args[0])

            def homogeneous(v: Any) -> tuple:
                if type(v) is not list:
                    raise Malformed(f"expected a list, got {type(v).__name__}")
                return tuple(item(x) for x in v)
            return homogeneous
        items = [decoder(a) for a in args]

        def fixed(v: Any) -> tuple:
            if type(v) is not list or len(v) != len(items):
                raise Malformed(f"expected a list of {len(items)}")
            return tuple(d(x) for d, x in zip(items, v))
        return fixed
    if hint is frozenset or origin is frozenset:
        item = decoder(args[0]) if args else _exact(str)

        def frozen(v: Any) -> frozenset:
            if type(v) is not list:
                raise Malformed(f"expected a list, got {type(v).__name__}")
            return frozenset(item(x) for x in v)
        return frozen
    raise TypeError(f"cache: no decoder for {hint!r}")  # a model change the codec must learn


def _exact(cls: type) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        if type(v) is not cls:  # bool is an int subclass: exact types only
            raise Malformed(f"expected {cls.__name__}, got {type(v).__name__}")
        return v
    return check


def _first(options: list, v: Any) -> Any:
    for option in options:
        try:
            return option(v)
        except Malformed:
            continue
    raise Malformed(f"no variant matches {type(v).__name__}")


def _dataclass_decoder(cls: type) -> Callable[[Any], Any]:
    hints = typing.get_type_hints(cls)
    fields = _fields(cls)
    # Filled in on first call: fields may refer to dataclasses declared further down.
    decoders: list = []

    def build(v: Any) -> Any:
        if not decoders:
            decoders.extend(decoder(hints[f.name]) for f in fields)
        if type(v) is not list or len(v) != len(decoders):
            raise Malformed(f"{cls.__name__}: expected a list of {len(decoders)} fields")
        return cls(*[d(x) for d, x in zip(decoders, v)])
    return build
