"""Plain-data facts extracted from one file; picklable so they can be cached and
shipped between worker processes. Nothing here knows about other files."""

from __future__ import annotations

import dataclasses
import enum
from typing import Optional, Union


class _Named(str, enum.Enum):
    """A closed set of words: compares, prints and serialises as its value."""

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__


class FlagState(_Named):
    """A flag value that is not a literal bool."""
    CONDITIONAL = "cond"   # computed, or set only on some paths
    INHERIT = "inherit"    # an annotation without a value
    UNKNOWN = "unknown"    # a base the backend may inherit from cannot be resolved


FlagValue = Union[bool, FlagState]


class Usage(_Named):
    """How a mirror value is used at one site."""
    READ = "read"              # dereferenced, computed with, iterated: crashes or lies on None
    PASS = "pass"              # handed on unchanged: safe by itself
    TRUTHINESS = "truthiness"  # `if mirror:`: 0 reads like None, a tensor raises
    GUARD = "guard"            # `mirror is None` and friends


class DeclKind(_Named):
    """Where a flag declaration is written."""
    CLASS = "class"            # `needs_cpu_seq_lens = False` in the body, or on the class after it
    ANNOTATION = "annotation"  # `needs_cpu_seq_lens: bool` without a value
    INIT = "init"              # `self.needs_cpu_seq_lens = ...` in `__init__`
    METHOD = "method"          # ... in another method
    PROPERTY = "property"      # a property returning it
    FUNCTION = "function"      # a plain method: `getattr` sees a bound method, always truthy


@dataclasses.dataclass(frozen=True)
class MirrorAccess:
    line: int
    col: int                  # 0-based, as `ast` gives it
    end_line: int
    end_col: int
    attr: str                 # which mirror (`seq_lens_cpu`, ...)
    usage: Usage
    guarded: bool
    subject: str              # the expression read, e.g. `batch.seq_lens_cpu` or an alias name
    alias_of: Optional[str]   # for an alias read: the mirror expression it was bound to
    scope: str                # `Class.method`, `function` or `<module>`
    class_qualname: Optional[str]  # innermost class whose body or method holds the access
    # For a value handed to a call unchanged: (callee as written, with `self` spelled
    # `<self>`; positional index or keyword). Whether that is a read depends on the callee,
    # which the project index decides.
    passed_to: Optional[tuple[str, Union[int, str]]] = None
    # For an alias read: the object the alias was taken from has been rebound since
    # (`lens = b.seq_lens_cpu; b = other`, or `x = x.seq_lens_cpu`), so `b.seq_lens` is
    # no fallback for it.
    object_rebound: bool = False


@dataclasses.dataclass(frozen=True)
class FlagDecl:
    kind: DeclKind
    value: FlagValue
    line: int
    col: int = 0


@dataclasses.dataclass(frozen=True)
class HostPull:
    line: int
    col: int
    method: str               # cpu | item | tolist | numpy (a method), int | float | bool (a builtin)
    receiver: str             # source of the pulled expression, for the message


@dataclasses.dataclass(frozen=True)
class ClassFacts:
    qualname: str
    name: str
    line: int
    col: int
    bases: tuple[str, ...]            # dotted source names; "" for bases we cannot name
    decls: tuple[FlagDecl, ...]
    reads_mirror: bool                # any mirror access in its own body or methods
    host_pulls: tuple[HostPull, ...]
    # Where an explicit `needs_cpu_seq_lens = ...` goes (after the docstring); None when the
    # body shares the `class` line and an insertion would need reformatting.
    insert_line: Optional[int]
    insert_indent: int
    # Imports inside the function a class is defined in (`from m import Base as _Base`
    # in `__new__`), which its bases may name.
    local_imports: tuple[tuple[str, "Import"], ...] = ()


@dataclasses.dataclass(frozen=True)
class Import:
    level: int                # 0 absolute, >0 relative
    module: str               # dotted module ("" for `from . import x`)
    name: Optional[str]       # imported name for `from m import name`; None for `import m`


@dataclasses.dataclass(frozen=True)
class DeepFacts:
    """The full analysis of one parsed file."""
    classes: tuple[ClassFacts, ...] = ()
    accesses: tuple[MirrorAccess, ...] = ()
    imports: tuple[tuple[str, Import], ...] = ()
    top_level_classes: tuple[str, ...] = ()
    top_level_functions: tuple[str, ...] = ()
    # (qualname, first line with decorators, last line) of module-level functions and of
    # methods of module-level classes: reads through calls parse just the one they need.
    functions: tuple[tuple[str, int, int], ...] = ()
    name_aliases: tuple[tuple[str, str], ...] = ()   # module-level `Alias = Name` bindings
    suppressions: tuple[tuple[int, Optional[frozenset]], ...] = ()
    error: Optional[tuple[int, int, str]] = None   # (line, col, message) when unparsable


@dataclasses.dataclass(frozen=True)
class ScanFacts:
    """What a byte-level scan of one file tells, without parsing it."""
    classes: tuple[tuple[str, tuple[str, ...]], ...]  # (name, identifiers in its base list)
    aliases: tuple[tuple[str, str], ...]             # (original, alias) from `X as Y`
    mentions_mirror: bool
    mentions_flag: bool
    mentions_suppression: bool = False
