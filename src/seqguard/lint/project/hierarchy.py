"""The attention-backend hierarchy: which classes are backends (subclasses of a
configured base, or classes the aggregator counts), and each one's effective flag."""

from __future__ import annotations

import dataclasses
import fnmatch
import sys
from typing import Iterable, Iterator, Optional

from seqguard.lint.model import ClassFacts, DeclKind, DeepFacts, FlagState, FlagValue, ScanFacts


@dataclasses.dataclass
class ResolvedClass:
    id: str
    relpath: str
    module: str
    facts: ClassFacts
    bases: list[str] = dataclasses.field(default_factory=list)  # class ids or external names
    # position in `bases` -> what else that base may be, where a `try:` binds its name
    # (`except ImportError: class AttentionBackend: ...`)
    base_choices: dict[int, list[str]] = dataclasses.field(default_factory=dict)
    is_root: bool = False        # one of the configured base classes
    is_backend: bool = False     # subclasses a configured base, transitively
    flag: FlagValue = True
    flag_source: str = "default"
    inherited_from: Optional[str] = None  # class id or external name the flag comes from

    @property
    def declares_flag(self) -> bool:
        return bool(self.facts.decls)

    @property
    def name(self) -> str:
        return self.facts.name


# Modules whose classes never declare `needs_cpu_seq_lens` (the standard library, torch):
# a base from them is looked through when settling a flag instead of making it unknown.
_FLAGLESS_MODULES = frozenset(sys.stdlib_module_names) | {"torch", "typing_extensions", "builtins"}
_BUILTIN_BASES = frozenset({"object", "Exception", "BaseException", "dict", "list", "tuple", "int", "str"})


def _cannot_declare(base: str) -> bool:
    if base in _BUILTIN_BASES:
        return True
    return "." in base and base.split(".", 1)[0] in _FLAGLESS_MODULES


def candidate_backend_names(scans: dict[str, ScanFacts], base_names: Iterable[str],
                            counted: Iterable[str] = ()) -> set[str]:
    """Simple names of every class that may subclass a configured base or be one the
    aggregator counts (`counted` globs), found on scan facts alone (an
    over-approximation: imports are not resolved here)."""
    candidates = {b.rsplit(".", 1)[-1] for b in base_names}
    counted = [c.rsplit(".", 1)[-1] for c in counted]
    if counted:
        candidates |= {name for s in scans.values() for name, _ in s.classes
                       if any(fnmatch.fnmatchcase(name, c) for c in counted)}
    # A class of a file that mentions the flag may declare it for its subclasses (a mixin
    # with `needs_cpu_seq_lens = False`): its subclasses are parsed too, so a base the
    # index knows only from the scan is one that cannot pass a flag on.
    candidates |= {name for s in scans.values() if s.mentions_flag for name, _ in s.classes}
    # word in a base list (or an `as` alias of it) -> the classes that name it, then a
    # walk from the seeds: one pass over the classes, not one per level of the hierarchy
    named_by: dict[str, list[str]] = {}
    for facts in scans.values():
        if not facts.classes:
            continue
        renamed: dict[str, list[str]] = {}
        for original, alias in facts.aliases:
            renamed.setdefault(alias, []).append(original)
        for name, base_words in facts.classes:
            for word in base_words:
                named_by.setdefault(word, []).append(name)
                for original in renamed.get(word, ()):
                    named_by.setdefault(original, []).append(name)
    frontier = list(candidates)
    while frontier:
        for name in named_by.get(frontier.pop(), ()):
            if name not in candidates:
                candidates.add(name)
                frontier.append(name)
    return candidates


class Hierarchy:
    """The class-hierarchy half of `ProjectIndex` (its state is set up there)."""

    def _add_file(self, relpath: str, facts: DeepFacts) -> None:
        module = self._module_of.get(relpath, relpath)
        per_file = self._by_file.setdefault(relpath, {})
        for class_facts in facts.classes:
            cls = ResolvedClass(id=f"{module}.{class_facts.qualname}", relpath=relpath,
                                module=module, facts=class_facts)
            self.classes[cls.id] = cls
            per_file[class_facts.qualname] = cls

    def _resolve_bases(self, cls: ResolvedClass) -> None:
        written = [b for b in cls.facts.bases if b]
        cls.bases = [self._resolve(cls.module, b, local=cls.facts.local_imports, own=cls.facts.qualname)
                     for b in written]
        cls.base_choices = {}
        for position, base in enumerate(written):
            choices = self._tried_choices(cls.module, base, cls.facts.local_imports)
            if choices:
                cls.base_choices[position] = choices

    def matches_configured_base(self, name: str) -> bool:
        """A plain configured name matches any class of that name; a qualified one only
        the class with exactly that qualified name (no suffix guessing: SGLang has two
        unrelated `AttentionBackend`s)."""
        return name in self._qualified_bases or name.rsplit(".", 1)[-1] in self._plain_bases

    def is_counted_class(self, class_id: str) -> bool:
        """One of `backend-classes`: a class the aggregator is handed as a backend
        (a qualified name, or a glob on the class name such as `*MultiStep*Backend`)."""
        name = class_id.rsplit(".", 1)[-1]
        return any(class_id == p or fnmatch.fnmatchcase(name, p) or ("." in p and fnmatch.fnmatchcase(class_id, p))
                   for p in self._counted)

    def _classify(self, cls: ResolvedClass, visiting: set[str]) -> bool:
        if cls.is_backend or cls.is_root:
            return True
        if cls.id in visiting:
            return False
        visiting.add(cls.id)
        if self.matches_configured_base(cls.id):
            cls.is_root = True
            return True
        if self.is_counted_class(cls.id):
            cls.is_backend = True
            return True
        for position, base in enumerate(cls.bases):
            if self._is_backend_base(base, visiting):
                cls.is_backend = True
                continue
            for choice in cls.base_choices.get(position, ()):
                if self._is_backend_base(choice, visiting):
                    # `try: from engine import AttentionBackend` / `except ImportError:` a
                    # stand-in: where the engine runs the class, the import succeeded
                    cls.bases[position] = choice
                    cls.is_backend = True
                    break
        return cls.is_backend

    def _is_backend_base(self, base: str, visiting: set[str]) -> bool:
        parent = self.classes.get(base)
        if parent is not None:
            return self._classify(parent, visiting)
        return self.matches_configured_base(base)

    def _settle_flag(self, cls: ResolvedClass, visiting: set[str]) -> tuple[FlagValue, str]:
        """The value `getattr(instance, "needs_cpu_seq_lens")` gives: the class's own
        declaration, else the first base (in order) that provides one. A base that cannot
        be resolved may provide it, so the value is then unknown, never a guessed default."""
        if cls.flag_source != "default" or cls.id in visiting:
            return cls.flag, cls.flag_source
        visiting.add(cls.id)
        own = _own_flag(cls.facts.decls)
        if own is not None:
            cls.flag = own
            kinds = {d.kind for d in cls.facts.decls if d.value != FlagState.INHERIT}
            cls.flag_source = "set in __init__" if kinds == {DeclKind.INIT} else (
                "property" if kinds == {DeclKind.PROPERTY} else "declared")
            return cls.flag, cls.flag_source
        for base in cls.bases:
            parent = self.classes.get(base)
            if parent is not None:
                self._settle_flag(parent, visiting)
                if parent.flag_source == "default" and not (parent.is_backend or parent.is_root or parent.facts.decls):
                    continue  # a project mixin without the flag: look through it to its own bases
                cls.flag, cls.inherited_from = parent.flag, parent.id
                cls.flag_source = (f"inherited from {parent.name}" if parent.flag != FlagState.UNKNOWN
                                   else f"inherited from {parent.name}, {parent.flag_source}")
                return cls.flag, cls.flag_source
            if self.matches_configured_base(base):
                # The contract's root outside the project: the runtime counts a backend
                # without the attribute as needing the mirror.
                cls.flag, cls.inherited_from = True, base
                cls.flag_source = f"default of {base.rsplit('.', 1)[-1]}"
                return cls.flag, cls.flag_source
            if _cannot_declare(base) or base in self._scanned_ids:
                continue
            if not (cls.is_backend or cls.is_root):
                continue  # not a backend: its flag is nobody's business
            cls.flag = FlagState.UNKNOWN
            cls.flag_source = f"base `{base}` could not be resolved"
            return cls.flag, cls.flag_source
        # the aggregator's `getattr(b, "needs_cpu_seq_lens", True)`
        cls.flag, cls.flag_source = True, ("no attribute: the aggregator counts it True"
                                           if self.is_counted_class(cls.id) else "default")
        return cls.flag, cls.flag_source

    def classes_in(self, relpath: str) -> dict[str, ResolvedClass]:
        return self._by_file.get(relpath, {})

    def backends(self) -> Iterator[ResolvedClass]:
        return (c for c in list(self.classes.values()) if c.is_backend)   # a question may parse more

    def class_of(self, class_id: str) -> Optional[ResolvedClass]:
        """The project class `class_id`, its file parsed now if nothing asked for it yet:
        what is known of a class must not depend on which questions came first (a
        one-file run and a whole-tree run judge a read alike)."""
        cls = self.classes.get(class_id)
        if cls is None:
            located = self.locate_class(class_id)
            if located is not None and located[0] not in self._deep:
                self._facts_of_module(self._module_of[located[0]])
                cls = self.classes.get(class_id)
        return cls

    def ancestor_ids(self, class_id: str) -> frozenset[str]:
        """The ids of the classes `class_id` derives from, read off its own parsed bases
        (what the byte scan misses: a base list with a `)` in a comment, a base under an
        alias, `class X\\` continued on the next line); empty for no project class."""
        cls = self.class_of(class_id)
        return frozenset(a.id for a in self.ancestors(cls)) if cls is not None else frozenset()

    def ancestors(self, cls: ResolvedClass) -> Iterator[ResolvedClass]:
        seen, stack = {cls.id}, list(reversed(cls.bases))
        while stack:  # depth first, first base first: the method resolution order, near enough
            parent = self.class_of(stack.pop())
            if parent is None or parent.id in seen:
                continue
            seen.add(parent.id)
            yield parent
            stack.extend(reversed(parent.bases))

    def descendants(self, cls: ResolvedClass) -> Iterator[ResolvedClass]:
        """Every project class deriving from `cls`, transitively. The files whose byte scan
        names it in a base list are parsed first: a subclass in a file that names no
        mirror is still one, and what it inherits runs on its instances."""
        named = {relpath for relpath, _ in self.maybe_subclasses(cls.name)}
        for relpath in named:
            if relpath not in self._deep and relpath in self._module_of:
                self._facts_of_module(self._module_of[relpath])
        if self._children is None or self._children_size != len(self.classes):
            self._children = {}
            self._children_size = len(self.classes)
            for candidate in self.classes.values():
                for base in candidate.bases:
                    self._children.setdefault(base, []).append(candidate)
        # only those files: one another question parsed would make the answer depend on
        # the order of the questions (a subclass the scan cannot name is found from its
        # own side instead: `ancestors` of the object's type)
        def known(child: ResolvedClass) -> bool:
            return child.relpath in self._upfront or child.relpath in named

        seen, stack = {cls.id}, [c for c in self._children.get(cls.id, ()) if known(c)]
        while stack:
            child = stack.pop()
            if child.id in seen:
                continue
            seen.add(child.id)
            yield child
            stack.extend(c for c in self._children.get(child.id, ()) if known(c))


    def maybe_subclasses(self, name: str) -> list[tuple[str, str]]:
        """(file, class name) of every class in the project whose base list names
        `name`, or names such a class, transitively, as every file's byte scan saw it:
        parsed or not (a subclass in a file without a mirror is still a subclass). By
        name (and the names a file imports it as), so a class of the same name elsewhere
        widens the answer, never narrows it."""
        memo = self.__dict__.setdefault("_subclass_memo", {})
        if name not in memo:
            by_base = self.__dict__.get("_by_base")
            if by_base is None:  # once per run: base identifier -> the classes naming it
                by_base = self.__dict__["_by_base"] = {}
                for relpath, facts in self._scans.items():
                    # `from .runner import BaseRunner as BR`: `class Eager(BR)` names BaseRunner
                    originals = {alias: original for original, alias in facts.aliases} if facts.classes else {}
                    for cls_name, bases in facts.classes:
                        for base in bases:
                            by_base.setdefault(base, []).append((relpath, cls_name))
                            if base in originals:  # the scan keeps only `X as Y` with Y != X
                                by_base.setdefault(originals[base], []).append((relpath, cls_name))
            found: list[tuple[str, str]] = []
            seen, stack = {name}, [name]
            while stack:
                for hit in by_base.get(stack.pop(), ()):
                    if hit not in found:
                        found.append(hit)
                    if hit[1] not in seen:
                        seen.add(hit[1])
                        stack.append(hit[1])
            memo[name] = found
        return memo[name]


def _own_flag(decls) -> Optional[FlagValue]:
    """The value a class's own declarations give an instance: the last class-level one,
    overridden by the last unconditional one in `__init__` (statements run in order),
    made conditional by another method that may set something else; a property or
    method named like the flag decides alone."""
    decls = [d for d in decls if d.value != FlagState.INHERIT]
    if not decls:
        return None
    deciding = [d for d in decls if d.kind in (DeclKind.PROPERTY, DeclKind.FUNCTION)]
    if deciding:
        values = {d.value for d in deciding}
        return values.pop() if len(values) == 1 else FlagState.CONDITIONAL
    ordered = sorted(decls, key=lambda d: d.line)
    value: Optional[FlagValue] = None
    for kind in (DeclKind.CLASS, DeclKind.INIT):
        mine = [d for d in ordered if d.kind == kind]
        if mine:
            value = mine[-1].value
    others = {d.value for d in ordered if d.kind == DeclKind.METHOD}
    if value is None:
        return others.pop() if len(others) == 1 else FlagState.CONDITIONAL
    return value if not others - {value} else FlagState.CONDITIONAL
