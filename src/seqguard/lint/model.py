"""Plain-data facts extracted from one file; picklable so they can be cached and
shipped between worker processes. Nothing here knows about other files."""

from __future__ import annotations

import dataclasses
import enum
import functools
from typing import Optional, Union


class _Named(str, enum.Enum):
    """A closed set of words: compares, prints and serialises as its value."""

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__


@functools.total_ordering
@dataclasses.dataclass(frozen=True)
class PathFact:
    """A test that held (or, `held` False, failed) on every path to a point, as the
    source writes it (`ast.unparse` of the test). Ordered by text, a held test before a
    failed one."""
    test: str
    held: bool = True

    def __lt__(self, other: "PathFact") -> bool:
        return (self.test, not self.held) < (other.test, not other.held)

    @property
    def text(self) -> str:
        """As a reader writes it: `b.x is None`, or `not (b.x is None)` where it failed."""
        return self.test if self.held else f"not ({self.test})"


class CalleeHead(_Named):
    """What a call's name starts from."""
    NAME = "name"      # a name or dotted chain, as written (`f`, `mod.f`, `batch.m`)
    SELF = "self"      # a method of the function's own object (`self.m`)
    SUPER = "super"    # the method of the next class in the bases (`super().m`)
    VALUE = "value"    # no call: the watched name used as a value


@dataclasses.dataclass(frozen=True)
class Callee:
    """What a call names: `Callee(NAME, "mod.f")`, `Callee(SELF, "m")`."""
    head: CalleeHead
    name: str = ""     # NAME: as written; SELF, SUPER: the method; VALUE: ""
    # SELF: the method's object as the code names it (`self`, `this`), for messages only
    receiver: str = dataclasses.field(default="self", compare=False)

    @classmethod
    def written(cls, dotted: str, self_name: Optional[str] = "self") -> "Callee":
        """The callee a dotted name written in a method whose object is `self_name` is."""
        head, dot, rest = dotted.partition(".")
        return cls(CalleeHead.SELF, rest, head) if dot and head == self_name else cls(CalleeHead.NAME, dotted)

    def __str__(self) -> str:
        """As the code writes it: `f`, `mod.f`, `this.m`, `super().m`."""
        if self.head is CalleeHead.SELF:
            return f"{self.receiver}.{self.name}"
        if self.head is CalleeHead.SUPER:
            return f"super().{self.name}"
        return self.name if self.head is CalleeHead.NAME else "<value>"


class FlagState(_Named):
    """A flag value that is not a literal bool."""
    CONDITIONAL = "cond"   # computed, or set only on some paths
    INHERIT = "inherit"    # an annotation without a value
    UNKNOWN = "unknown"    # a base the backend may inherit from cannot be resolved


FlagValue = Union[bool, FlagState]


def flag_words(value: FlagValue) -> str:
    """A flag value as every message writes it: `True`, `False`, `a conditional value`,
    `an unknown value`."""
    if isinstance(value, bool):
        return str(value)
    return "an unknown value" if value == FlagState.UNKNOWN else "a conditional value"


class Usage(_Named):
    """How a mirror value is used at one site."""
    READ = "read"              # dereferenced, computed with, iterated: crashes or lies on None
    PASS = "pass"              # handed on unchanged: safe by itself
    TRUTHINESS = "truthiness"  # `if mirror:`: 0 reads like None, a tensor raises
    GUARD = "guard"            # `mirror is None` and friends
    ASSERT = "assert"          # `assert mirror is not None`: narrows after it, raises where it is None


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
    # For a value handed to a call unchanged: (what the call names; positional index or
    # keyword). Whether that is a read depends on the callee,
    # which the project index decides.
    passed_to: Optional[tuple[Callee, Union[int, str]]] = None
    # For an alias read: the object the alias was taken from has been rebound since
    # (`lens = b.seq_lens_cpu; b = other`, or `x = x.seq_lens_cpu`), so `b.seq_lens` is
    # no fallback for it.
    object_rebound: bool = False
    # Tests that held or failed on every path to the access; the engine model reads the
    # forward modes and features they imply.
    path: tuple[PathFact, ...] = ()
    # Other mirrors known not to be None here (`batch.seq_lens_cpu` while the read is of
    # `forward_batch.seq_lens_cpu`): a builder that copies one makes the other safe.
    known: tuple[str, ...] = ()
    # Type terms (`analysis.terms`) of the object the mirror hangs on; () when the walk
    # cannot tell (the project may still type it from the function's code).
    receiver_types: tuple[str, ...] = ()
    # The mirror expression is written into (`buf.seq_lens_cpu[:n].copy_(x)`, a subscript
    # store): a buffer being refreshed, not read.
    written: bool = False
    # The storage this read fills (`buf[:n].copy_(fb.seq_lens_cpu[:n])` -> `buf`).
    fills: Optional[str] = None

    @property
    def mirror_key(self) -> str:
        """The mirror expression itself (`b.seq_lens_cpu`), through an alias too."""
        return self.alias_of if self.alias_of is not None else self.subject

    @property
    def receiver(self) -> str:
        """The object the mirror hangs on (`b` for `b.seq_lens_cpu`)."""
        return self.mirror_key.rsplit(".", 1)[0] if "." in self.mirror_key else ""


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
    scope: str = "<module>"   # the function holding it
    path: tuple[PathFact, ...] = ()  # path facts, as for MirrorAccess
    # the device-length names its value comes from: `.name` for an attribute
    # (`meta.total_seq_lens`), `name` for a local or parameter
    roots: tuple[str, ...] = ()


class StoreKind(_Named):
    """How a mirror attribute gets its value at one store."""
    ATTRIBUTE = "attribute"    # `obj.seq_lens_cpu = value`
    KEYWORD = "keyword"        # `Cls(seq_lens_cpu=value)`, `SimpleNamespace(seq_lens_cpu=...)`
    CLASS = "class"            # a class-level default or dataclass field
    SETATTR = "setattr"        # `setattr(obj, name, value)` (attr "*" when the name is not a constant)


class ValueKind(_Named):
    """How a value stored into a mirror attribute can turn out (`analysis.values`)."""
    NONE = "none"      # it can be None
    NEVER = "never"    # it cannot
    MAYBE = "maybe"    # nothing is known
    COPY = "copy"      # another object's mirror, as nullable as that object's attribute


@dataclasses.dataclass(frozen=True)
class StoredValue:
    """One way a stored value can turn out; a copy says whose mirror it is."""
    kind: ValueKind
    attr: str = ""     # COPY: the mirror attribute copied (`seq_lens_cpu`)
    term: str = ""     # COPY: the source object's type term (`analysis.terms`); "" when not told
    source: str = ""   # COPY: the source object, as source text (`batch`)


@dataclasses.dataclass(frozen=True)
class MirrorStore:
    """One place a mirror attribute is given a value: the project's nullability of
    (class, attribute) is the join of its stores."""
    line: int
    col: int
    attr: str
    kind: StoreKind
    # the object stored on, as source text (`batch`, `self.buffers`); for a keyword store
    # the callee (`ForwardBatch`, `SimpleNamespace`); "" for a class-level default
    receiver: str
    # the ways the value can turn out (can be None, cannot, unknown, another object's mirror)
    values: tuple[StoredValue, ...]
    scope: str
    class_qualname: Optional[str]
    receiver_types: tuple[str, ...] = ()   # type terms of the receiver (`analysis.terms`); () unknown


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
    # Class-level annotations (dataclass fields, `buffers: DecodeInputBuffers`): name ->
    # type terms (`analysis.terms`) of what instances hold there.
    fields: tuple[tuple[str, tuple[str, ...]], ...] = ()
    end_line: int = 0


@dataclasses.dataclass(frozen=True)
class Import:
    level: int                # 0 absolute, >0 relative
    module: str               # dotted module ("" for `from . import x`)
    name: Optional[str]       # imported name for `from m import name`; None for `import m`


@dataclasses.dataclass(frozen=True)
class Binding:
    """One binding of a module-level name in a branch: inside a `try:` statement (its
    body, an `except` handler, its `else`) or an `if` (`if TYPE_CHECKING:` / `else:`):
    `from m import Base`, `Base = m.Base`, or a class defined there. Where the engine
    is installed one of them runs; which one, only the import (or the test) can tell."""
    imported: Optional[Import] = None   # `from m import Base`, `import m.base as Base`
    alias: str = ""                     # `Base = m.Base`: the dotted name bound
    # neither: `class Base: ...` defined there


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
    # (name, binding) for each module-level name a `try:` or `if` statement binds, in
    # order: a class's base may be either branch of `try: from engine import Base` /
    # `except ImportError: class Base: ...` (or `if TYPE_CHECKING:` / `else: Base = object`)
    tried_bindings: tuple[tuple[str, Binding], ...] = ()
    suppressions: tuple[tuple[int, Optional[frozenset]], ...] = ()
    error: Optional[tuple[int, int, str]] = None   # (line, col, message) when unparsable
    stores: tuple[MirrorStore, ...] = ()


@dataclasses.dataclass(frozen=True)
class ScanFacts:
    """What a byte-level scan of one file tells, without parsing it."""
    classes: tuple[tuple[str, tuple[str, ...]], ...]  # (name, identifiers in its base list)
    aliases: tuple[tuple[str, str], ...]             # (original, alias) from `X as Y`
    mentions_mirror: bool
    mentions_flag: bool
    mentions_suppression: bool = False
    imported: str = ""   # every word of its import statements, space-separated (where callers can be)
    # names spelling a device length that the file annotates (`total_seq_lens: int = 0`)
    # and, as `.name`, those it stores as an attribute (`self.total_seq_lens = x`),
    # space-separated: where a declared type can be read, and where it cannot be trusted
    annotated: str = ""
    # every word it names as an attribute (`.execute`), space-separated: a method can be
    # called there on an object the file never imports the class of
    attributes: str = ""
