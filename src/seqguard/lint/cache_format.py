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

from seqguard.fileio import discard_temp, read_file, temp_file_for

# Bump when the layout of a cache file changes (not for model changes: those change
# the package fingerprint, which every key includes). 2: a Diagnostic stores its fix
# (in place of the `fixable` flag), so a format-1 result would lose it.
# 3: a Diagnostic carries its baseline detail. 4: and its reason and end column.
# 5: a path fact is a (test, held) pair, not the text "test\0+".
# 6: a stored value is a (kind, attr, term, source) record, not "copy:attr|term|source",
# and a callee a (head, name) pair, not "<self>.name".
FORMAT = 6
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
        secret = read_regular(path, limit=4096)
        if secret is None:
            if os.path.lexists(path):
                return None  # not a regular file: nothing to trust
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
    """The bytes of `path` if it is a regular file, not a link (a FIFO or a link planted
    at the cache path must not hang the run or lead elsewhere); None otherwise."""
    return read_file(path, limit, follow_symlinks=False).data


def write_atomic(path: Path, data: bytes) -> None:
    """Temp file in the same directory (the shared temp pattern, so a killed run's
    leftovers are swept), then rename. Errors are the caller's to ignore."""
    fd, tmp = temp_file_for(str(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        discard_temp(tmp)


# ---- dataclasses <-> JSON ------------------------------------------------------------
# A dataclass is a JSON list of its fields in declaration order; tuples and frozensets
# are lists; enums their value. Encoders and decoders are generated once per type from
# the type hints (a generic walk checking each value's type cost SGLang's cold run
# 0.27 s of CPU in the main process to encode 4,719 entries; generated, under 0.1 s).

def encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return _encoder(type(value))(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [encode(v) for v in value]
    if isinstance(value, frozenset):
        return sorted(encode(v) for v in value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    raise TypeError(f"cache: cannot encode {type(value).__name__}")


_ENCODERS: dict[type, Callable[[Any], Any]] = {}


def _encoder(cls: type) -> Callable[[Any], Any]:
    found = _ENCODERS.get(cls)
    if found is None:
        found = _ENCODERS[cls] = _EncoderGenerator().function(cls)
    return found


class _SourceWriter:
    """Writes functions as Python source, one per type, and compiles them together."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.namespace = namespace
        self.lines: list[str] = []
        self.names: dict[Any, str] = {}
        self.counter = 0

    def function(self, hint: Any) -> Callable[[Any], Any]:
        name = self._function_for(hint)
        exec("\n".join(self.lines), self.namespace)
        return self.namespace[name]

    def _fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def _function_for(self, hint: Any) -> str:
        raise NotImplementedError


class _EncoderGenerator(_SourceWriter):
    """Writes the encoder of a dataclass: one list display per class, values JSON takes
    as they are (numbers, strings, str-valued enums, tuples of those) passed through."""

    def __init__(self) -> None:
        super().__init__({"sorted": sorted})

    def _function_for(self, cls: type) -> str:
        if cls in self.names:
            return self.names[cls]
        name = self.names[cls] = self._fresh("_encode")
        hints = typing.get_type_hints(cls)
        items = ", ".join(self._expr(hints[f.name], f"v.{f.name}") for f in _fields(cls))
        self.lines += [f"def {name}(v):", f"    return [{items}]"]
        return name

    def _plain(self, hint: Any) -> bool:
        """Whether JSON encodes a value of `hint` as the decoder expects, unchanged."""
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if hint in (bool, int, str, type(None)):
            return True
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return issubclass(hint, (str, int))  # json writes its value
        if origin in (Union, getattr(types, "UnionType", Union)) or origin is tuple:
            return all(a is Ellipsis or self._plain(a) for a in args)
        return False

    def _expr(self, hint: Any, var: str) -> str:
        if self._plain(hint):
            return var
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        item = self._fresh("i")
        if origin in (Union, getattr(types, "UnionType", Union)):
            rest = [a for a in args if a is not type(None)]
            if len(rest) == 1:
                return f"(None if {var} is None else {self._expr(rest[0], var)})"
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            return f"[{self._expr(args[0], item)} for {item} in {var}]"
        if origin is tuple:
            return "[" + "".join(f"{self._expr(a, f'{var}[{i}]')}, " for i, a in enumerate(args)) + "]"
        if hint is frozenset or origin is frozenset:
            inner = args[0] if args else str
            return (
                f"sorted({var})" if self._plain(inner) else f"sorted([{self._expr(inner, item)} for {item} in {var}])"
            )
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return f"{var}.value"
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            return f"{self._function_for(hint)}({var})"
        # anything else takes the generic path (checked at run time)
        self.namespace["encode"] = encode
        return f"encode({var})"


_FIELDS: dict[type, tuple] = {}
_DECODERS: dict[Any, Callable[[Any], Any]] = {}


def _fields(cls: type) -> tuple:
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = tuple(f for f in dataclasses.fields(cls) if f.init)
    return found


def decoder(hint: Any) -> Callable[[Any], Any]:
    """A function JSON value -> typed value that raises Malformed on any mismatch.
    It is generated as Python source, one function per dataclass with the checks
    inline: with a closure per field and item, checking SGLang's 4,719 entries took
    0.17-0.22 s of CPU (the stat calls alone: 0.02 s); generated, 0.10-0.11 s."""
    found = _DECODERS.get(hint)
    if found is None:
        found = _DECODERS[hint] = _DecoderGenerator().function(hint)
    return found


def _bad(value: Any = None) -> Any:
    raise Malformed(f"unexpected {type(value).__name__} in a cache entry")


def _list(value: Any) -> list:
    if type(value) is not list:
        _bad(value)
    return value


class _DecoderGenerator(_SourceWriter):
    """Writes the decoder of a type hint: the checks inline, one function per dataclass."""

    def __init__(self) -> None:
        super().__init__({"_bad": _bad, "_list": _list, "frozenset": frozenset, "tuple": tuple})

    def _function_for(self, hint: Any) -> str:
        """The name of a generated function decoding `hint` (made once per hint)."""
        if hint in self.names:
            return self.names[hint]
        name = self.names[hint] = self._fresh("_decode")
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            hints = typing.get_type_hints(hint)
            fields = _fields(hint)
            cls = self._fresh("_cls")
            self.namespace[cls] = hint
            args = ", ".join(self._expr(hints[f.name], f"v[{i}]", f"a{i}") for i, f in enumerate(fields))
            self.lines += [f"def {name}(v):",
                           f"    if type(v) is not list or len(v) != {len(fields)}: _bad(v)",
                           *[f"    a{i} = v[{i}]" for i in range(len(fields))],
                           f"    return {cls}({args})"]
        elif typing.get_origin(hint) is tuple and not (len(typing.get_args(hint)) == 2
                                                       and typing.get_args(hint)[1] is Ellipsis):
            items = typing.get_args(hint)
            args = "".join(self._expr(t, f"v[{i}]", f"a{i}") + ", " for i, t in enumerate(items))
            self.lines += [f"def {name}(v):",
                           f"    if type(v) is not list or len(v) != {len(items)}: _bad(v)",
                           *[f"    a{i} = v[{i}]" for i in range(len(items))],
                           f"    return ({args})"]
        else:
            self.lines += [f"def {name}(v):", f"    return {self._expr(hint, 'v', 'v')}"]
        return name

    def _expr(self, hint: Any, source: str, var: str) -> str:
        """An expression decoding the value held in the plain name `var`."""
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if hint is type(None):
            return f"({var} if {var} is None else _bad({var}))"
        if hint in (bool, int, str):
            return f"({var} if type({var}) is {hint.__name__} else _bad({var}))"
        if origin in (Union, getattr(types, "UnionType", Union)):
            rest = [a for a in args if a is not type(None)]
            if all(a in (bool, int, str) for a in rest):
                test = " or ".join(f"type({var}) is {a.__name__}" for a in rest)
                if len(rest) < len(args):
                    test = f"{var} is None or {test}"
                return f"({var} if {test} else _bad({var}))"
            if len(rest) == 1 and len(args) == 2:
                return f"(None if {var} is None else {self._expr(rest[0], source, var)})"
            enums = [a for a in rest if isinstance(a, type) and issubclass(a, enum.Enum)]
            plain = [a for a in rest if a in (bool, int, str)]
            if len(enums) == 1 and len(plain) + 1 == len(args):  # `bool | FlagState`: a literal or a word
                test = " or ".join(f"type({var}) is {a.__name__}" for a in plain)
                return f"({var} if {test} else {self._expr(enums[0], source, var)})"
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            item = self._fresh("i")
            inner = self._inline_tuple(args[0], item)
            if inner is not None:  # `((name, bases), ...)`: no call per item
                shape, value = inner
                return f"tuple([{value} for {item} in _list({var}) if {shape} or _bad({item})])"
            return f"tuple([{self._expr(args[0], item, item)} for {item} in _list({var})])"
        if hint is frozenset or origin is frozenset:
            item = self._fresh("i")
            return f"frozenset([{self._expr(args[0] if args else str, item, item)} for {item} in _list({var})])"
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            helper = self._fresh("_enum")
            self.namespace[helper] = _enum_decoder(hint)
            return f"{helper}({var})"
        if (isinstance(hint, type) and dataclasses.is_dataclass(hint)) or origin is tuple:
            return f"{self._function_for(hint)}({var})"
        raise TypeError(f"cache: no decoder for {hint!r}")  # a model change the codec must learn

    def _inline_tuple(self, hint: Any, var: str) -> Optional[tuple[str, str]]:
        """For a fixed tuple of plain values and homogeneous tuples of them, (the test
        of its shape, the expression building it) written inline on `var`; else None.
        Tens of thousands of class entries per run made a call per item cost more than
        the checks."""
        if typing.get_origin(hint) is not tuple:
            return None
        items = typing.get_args(hint)
        if not items or (len(items) == 2 and items[1] is Ellipsis) or not all(map(_plain_or_tuple_of, items)):
            return None
        parts = "".join(self._expr(t, f"{var}[{i}]", f"{var}[{i}]") + ", " for i, t in enumerate(items))
        return f"(type({var}) is list and len({var}) == {len(items)})", f"({parts})"


def _plain_or_tuple_of(hint: Any) -> bool:
    """`str`, `int`, `bool`, or a homogeneous tuple of one: what `_expr` writes as one
    expression on its variable, with no function of its own."""
    if hint in (bool, int, str):
        return True
    args = typing.get_args(hint)
    return typing.get_origin(hint) is tuple and len(args) == 2 and args[1] is Ellipsis and args[0] in (bool, int, str)


def _enum_decoder(cls: type) -> Callable[[Any], Any]:
    members = dict(cls._value2member_map_)  # a dict lookup: `cls(value)` costs 10x more per access

    def decode(value: Any) -> Any:
        try:
            return members[value]
        except (KeyError, TypeError):
            raise Malformed(f"not a {cls.__name__}: {value!r}") from None
    return decode
