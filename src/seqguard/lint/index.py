"""The project's attention-backend hierarchy, resolved across modules.

Import styles all lead to the same class id (`module.Qualname`): `from x import A as B`,
`import x.base as base` + `base.A`, relative imports, re-exports through packages.
Unresolvable bases (third-party classes) keep their dotted source name.
"""

from __future__ import annotations

import ast
import dataclasses
import fnmatch
import re
import sys
import textwrap
import warnings
from typing import Callable, Iterable, Iterator, Optional

from seqguard.config import DEFAULT_SOURCE_ROOTS
from seqguard.lint.analysis import parameter_uses
from seqguard.lint.model import DeclKind, FlagState, MirrorAccess, ClassFacts, DeepFacts, FlagValue, ScanFacts

MAX_REEXPORT_HOPS = 12
# How far a mirror value is followed through calls that pass it on (f -> g -> h): deep
# enough for a helper that forwards to a kernel wrapper, bounded so lint stays fast.
MAX_CALL_DEPTH = 3


@dataclasses.dataclass(frozen=True)
class CalleeRead:
    """A function that reads, without a None guard, the parameter a mirror is passed to."""
    callee: str       # as written at the call site
    relpath: str      # of the file that reads it
    line: int


@dataclasses.dataclass
class ResolvedClass:
    id: str
    relpath: str
    module: str
    facts: ClassFacts
    bases: list[str] = dataclasses.field(default_factory=list)  # class ids or external names
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


def module_names(relpaths: Iterable[str], source_roots: Iterable[str] = DEFAULT_SOURCE_ROOTS) -> dict[str, str]:
    """relpath -> dotted module, as the import system names it with each source root on
    `sys.path`: every folder below a root is a package, regular (`__init__.py`) or PEP 420
    namespace (none), so `sglang/srt/layers/x.py` is `sglang.srt.layers.x` although
    `sglang/srt` has no `__init__.py`. A file lies under the deepest root that holds it;
    a root that is itself a regular package is no root (`src/__init__.py` makes `src` a
    package name, not a source folder)."""
    relpaths = list(relpaths)
    packages = {p.rsplit("/", 1)[0] if "/" in p else "" for p in relpaths if p.endswith("__init__.py")}
    roots = sorted({r.strip("/") for r in (_normalise_root(r) for r in source_roots)
                    if r == "" or r not in packages}, key=len, reverse=True)
    result = {}
    for rel in relpaths:
        root = next((r for r in roots if r == "" or rel.startswith(r + "/")), "")
        inner = rel[len(root) + 1:] if root else rel
        parts = (inner[:-3] if inner.endswith(".py") else inner).split("/")
        if parts[-1] == "__init__" and len(parts) > 1:
            parts.pop()
        result[rel] = ".".join(parts)
    return result


def _normalise_root(root: str) -> str:
    root = root.replace("\\", "/").strip("/")
    while root.startswith("./"):
        root = root[2:]
    return "" if root in (".", "") else root


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


class ProjectIndex:
    def __init__(self, deep: dict[str, DeepFacts], modules: dict[str, str],
                 backend_bases: Iterable[str], load: Callable[[str], Optional[DeepFacts]],
                 source: Callable[[str], Optional[str]] = lambda _: None,
                 device_attribute: str = "seq_lens",
                 scanned_classes: Optional[dict[str, frozenset]] = None,
                 backend_classes: Iterable[str] = (),
                 imported: Optional[dict[str, frozenset]] = None) -> None:
        """`deep`: facts of the parsed files; `modules`: relpath -> module for every
        project file; `load(relpath)` analyses a file on demand (for re-exports);
        `source(relpath)` reads one (for reads through calls)."""
        self._deep = deep
        self._load = load
        # relpath -> class names the byte scan saw: a base found there needs no parse, and
        # (see candidate_backend_names) such a class neither is a backend nor passes a flag on
        self._scanned_classes = scanned_classes or {}
        self._scanned_ids: set[str] = set()
        self._imported = imported or {}  # relpath -> words of its import statements
        self._source = source
        self._device_attribute = device_attribute
        self._functions_by_file: dict[str, dict[str, tuple[ast.FunctionDef, Optional[str]]]] = {}
        self._text_spans: dict[str, tuple[tuple[str, int, int], ...]] = {}
        self._uses: dict[tuple[str, str], dict] = {}
        self._call_reads: dict[tuple, Optional[tuple[str, int]]] = {}
        self._relpath_of = {m: r for r, m in modules.items()}
        self._module_of = modules
        self._suffixes: dict[str, str] = {}
        for module in self._relpath_of:
            parts = module.split(".")
            for i in range(1, len(parts)):
                self._suffixes.setdefault(".".join(parts[i:]), module)
        # classes the aggregator counts although they derive from no base (globs allowed)
        self._counted = tuple(backend_classes)
        self._plain_bases = {b for b in backend_bases if "." not in b}
        self._qualified_bases = {b for b in backend_bases if "." in b}
        self.classes: dict[str, ResolvedClass] = {}
        self._children: Optional[dict[str, list[ResolvedClass]]] = None
        self._children_size = 0
        # the engine model's judge of mirror reads (`lint.contract`), set by whoever builds
        # the index with a configuration
        self.contract = None
        self._by_file: dict[str, dict[str, ResolvedClass]] = {}
        for relpath, facts in deep.items():
            self._add_file(relpath, facts)
        for cls in list(self.classes.values()):
            self._resolve_bases(cls)
        for cls in self.classes.values():
            self._classify(cls, set())
        for cls in self.classes.values():
            self._settle_flag(cls, set())

    # ---- building ----------------------------------------------------------------
    def _add_file(self, relpath: str, facts: DeepFacts) -> None:
        module = self._module_of.get(relpath, relpath)
        per_file = self._by_file.setdefault(relpath, {})
        for class_facts in facts.classes:
            cls = ResolvedClass(id=f"{module}.{class_facts.qualname}", relpath=relpath,
                                module=module, facts=class_facts)
            self.classes[cls.id] = cls
            per_file[class_facts.qualname] = cls

    def _facts_of_module(self, module: str) -> Optional[DeepFacts]:
        relpath = self._relpath_of.get(module)
        if relpath is None:
            return None
        if relpath not in self._deep:
            loaded = self._load(relpath)
            if loaded is None:
                return None
            self._deep[relpath] = loaded
            self._add_file(relpath, loaded)
            for cls in self._by_file[relpath].values():
                self._resolve_bases(cls)
        return self._deep[relpath]

    def _resolve_bases(self, cls: ResolvedClass) -> None:
        cls.bases = [self._resolve(cls.module, b, local=cls.facts.local_imports, own=cls.facts.qualname)
                     for b in cls.facts.bases if b]

    def _project_module(self, dotted: str) -> Optional[str]:
        if dotted in self._relpath_of:
            return dotted
        return self._suffixes.get(dotted)

    def _declares_class(self, relpath: str, name: str) -> bool:
        """Whether an unparsed file defines class `name` (the scan's list, or its text:
        the scan sees only classes with a base list)."""
        if name in self._scanned_classes.get(relpath, ()):
            return True
        if not self._scanned_classes:
            return False  # no scan (one in-memory file): parse instead
        text = self._source(relpath)
        return text is not None and re.search(rf"^[ \t]*class[ \t]+{re.escape(name)}\b", text, re.M) is not None

    def _absolute(self, module: str, level: int, target: str) -> str:
        if level == 0:
            return target
        relpath = self._relpath_of.get(module, "")
        parts = module.split(".")
        if not relpath.endswith("__init__.py"):
            parts = parts[:-1]
        parts = parts[: len(parts) - (level - 1)] if level > 1 else parts
        return ".".join(p for p in [*parts, target] if p)

    def _resolve(self, module: str, dotted: str, hops: int = 0, local: tuple = (), own: Optional[str] = None) -> str:
        """A base's source name in `module` -> a project class id or an external name.
        `local`: imports of the function a class is defined in, which shadow the module's;
        `own`: the class whose base this is (`class Opt(Opt):` names the imported `Opt`)."""
        facts = self._facts_of_module(module)
        head, _, rest = dotted.partition(".")
        if facts is None:
            return dotted
        imports = dict(local)
        if head in facts.top_level_classes and head not in imports and head != own:
            return f"{module}.{dotted}"
        aliased = dict(facts.name_aliases).get(head)
        if aliased is not None and head not in imports and hops < MAX_REEXPORT_HOPS and aliased != dotted:
            return self._resolve(module, f"{aliased}.{rest}" if rest else aliased, hops + 1)  # `Parent2 = Parent`
        imports = {**dict(facts.imports), **imports}
        imported = imports.get(head)
        if imported is None:
            for star in (i for key, i in facts.imports if i.name == "*"):
                found = self._canonical(f"{self._absolute(module, star.level, star.module)}.{dotted}", hops + 1)
                if found in self.classes or hops >= MAX_REEXPORT_HOPS:
                    return found
            return dotted
        if imported.name is not None:
            full = f"{self._absolute(module, imported.level, imported.module)}.{imported.name}"
        else:
            full = self._absolute(module, imported.level, imported.module)
        if rest:
            full = f"{full}.{rest}"
        return self._canonical(full, hops)

    def _canonical(self, full: str, hops: int) -> str:
        parts = full.split(".")
        for split in range(len(parts) - 1, 0, -1):
            module = self._project_module(".".join(parts[:split]))
            if module is None:
                continue
            remainder = parts[split:]
            relpath = self._relpath_of.get(module)
            if len(remainder) == 1 and relpath not in self._deep and self._declares_class(relpath, remainder[0]):
                self._scanned_ids.add(f"{module}.{remainder[0]}")
                return f"{module}.{remainder[0]}"
            if len(remainder) == 1 and hops < MAX_REEXPORT_HOPS:
                facts = self._facts_of_module(module)
                if facts is not None:
                    if remainder[0] in facts.top_level_classes:
                        return f"{module}.{remainder[0]}"
                    if any(name == remainder[0] or i.name == "*" for name, i in facts.imports) \
                            or remainder[0] in dict(facts.name_aliases):
                        return self._resolve(module, remainder[0], hops + 1)
            return full
        return full

    # ---- classification ----------------------------------------------------------
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
        for base in cls.bases:
            parent = self.classes.get(base)
            if parent is not None:
                if self._classify(parent, visiting):
                    cls.is_backend = True
            elif self.matches_configured_base(base):
                cls.is_backend = True
        return cls.is_backend

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

    # ---- reads through calls -----------------------------------------------------
    def read_through_call(self, relpath: str, access: MirrorAccess) -> Optional[CalleeRead]:
        """The function (in the project) that reads the value `access` hands it, if any."""
        if access.passed_to is None:
            return None
        callee, slot = access.passed_to
        module = self._module_of.get(relpath, relpath)
        target = self._callable(module, relpath, access.class_qualname, callee)
        if target is None:
            return None
        found = self._reads(target, slot, MAX_CALL_DEPTH, set())[0]
        return CalleeRead(callee, *found) if found is not None else None

    def _reads(self, target, slot, depth: int, active: set) -> tuple[Optional[tuple[str, int]], bool]:
        """(file, line) where the parameter of `target` at `slot` is read unguarded,
        directly or after at most `depth` calls that pass it on; and whether the answer
        met a call chain still being worked out (a cycle), so it must not be cached."""
        relpath, function, owner, skip = target
        parameter = _parameter_for(function, slot, skip)
        if parameter is None:
            return None, False
        key = (relpath, id(function), parameter, depth)
        if key in self._call_reads:
            return self._call_reads[key], False
        if key in active:
            return None, True
        use = self._parameter_uses(relpath, function, owner).get(parameter)
        found, cyclic = None, False
        if use is not None and use.reads:
            found = (relpath, use.reads[0][0])
        elif use is not None and depth > 0:
            active.add(key)
            module = self._module_of.get(relpath, relpath)
            for next_callee, next_slot, _ in use.passed:
                next_target = self._callable(module, relpath, owner, next_callee)
                if next_target is None:
                    continue
                found, met_cycle = self._reads(next_target, next_slot, depth - 1, active)
                cyclic |= met_cycle
                if found is not None:
                    break
            active.discard(key)
        if found is not None or not cyclic:
            self._call_reads[key] = found
        return found, cyclic and found is None

    def _parameter_uses(self, relpath: str, function: ast.FunctionDef, owner: Optional[str]) -> dict:
        key = (relpath, f"{owner}.{function.name}" if owner else function.name)
        if key not in self._uses:
            try:
                self._uses[key] = parameter_uses(function, owner, self._device_attribute)
            except RecursionError:
                self._uses[key] = {}
        return self._uses[key]

    def function_at(self, relpath: str, line: int) -> Optional[ast.FunctionDef]:
        """The innermost function holding `line` of a file, found within the module-level
        function or method of a module-level class that holds it (only those lines are
        parsed); None outside them."""
        facts = self._deep.get(relpath) or self._load(relpath)
        spans = [(q, first, last) for q, first, last in (facts.functions if facts else ()) if first <= line <= last]
        if not spans:
            return None
        qualname = min(spans, key=lambda span: span[2] - span[1])[0]
        function = self._functions(relpath).get(qualname, (None, None))[0]
        best = function
        stack = list(function.body) if function is not None else []
        while stack:  # statements only: a nested function is one
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    node.lineno <= line <= (node.end_lineno or node.lineno) and node.lineno >= best.lineno:
                best = node
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                stack.extend(getattr(node, field, ()))
        return best

    def _functions(self, relpath: str) -> dict[str, tuple[ast.FunctionDef, Optional[str]]]:
        """qualname -> (def, owning class) for the module-level functions and the methods
        of module-level classes of one file, each parsed on first need from its own lines
        (parsing whole files here cost a third of lint's time on SGLang)."""
        if relpath not in self._functions_by_file:
            self._functions_by_file[relpath] = _LazyFunctions(relpath, self.function_spans(relpath), self._source)
        return self._functions_by_file[relpath]

    def function_spans(self, relpath: str) -> tuple[tuple[str, int, int], ...]:
        """(qualname, first line, last line) of a file's module-level functions and the
        methods of its module-level classes: from its facts when it was parsed, else read
        off its text (a file that never mentions a mirror is not worth a parse to find
        where a caller of some helper sits in it). A span the text gets wrong only makes
        that function fail to parse alone, and so not count."""
        facts = self._deep.get(relpath)
        if facts is not None:
            return facts.functions
        if relpath not in self._text_spans:
            text = self._source(relpath)
            self._text_spans[relpath] = _spans_from_text(text) if text is not None else ()
        return self._text_spans[relpath]

    def _callable(self, module: str, relpath: str, class_qualname: Optional[str],
                  callee: str) -> Optional[tuple[str, ast.FunctionDef, Optional[str], int]]:
        """(file, def, owning class, leading parameters the call does not fill) for a
        callee the project defines: `self.m`, a function or class of this module, or one
        imported (through re-exports)."""
        head, _, rest = callee.partition(".")
        if head in ("<self>", "<super>"):
            cls = self.classes.get(f"{module}.{class_qualname}") if class_qualname else None
            if cls is None or "." in rest:
                return None
            for owner in ((cls,) if head == "<self>" else ()) + tuple(self.ancestors(cls)):
                hit = self._functions(owner.relpath).get(f"{owner.facts.qualname}.{rest}")
                if hit is not None and hit[0] is not None:
                    return owner.relpath, hit[0], hit[1], 0 if _decorated(hit[0], "staticmethod") else 1
            return None
        facts = self._facts_of_module(module)
        if facts is None:
            return None
        if head in facts.top_level_functions or head in facts.top_level_classes:
            return self._defined_in(relpath, callee)
        if head not in dict(facts.imports):
            return None  # a builtin, a local variable's method, ...: nothing to look into
        return self._callable_at(self._resolve(module, callee), 0)

    def _defined_in(self, relpath: str, name: str) -> Optional[tuple[str, ast.FunctionDef, Optional[str], int]]:
        """A function or method `name` of one file, or the constructor of its class `name`
        (a def that could not be parsed on its own is not followed)."""
        functions = self._functions(relpath)
        function, owner = functions.get(name, (None, None))
        if function is not None:
            return relpath, function, owner, _skip_for_class_call(function) if owner else 0
        constructor = functions.get(f"{name}.__init__", (None, None))[0] if "." not in name else None
        return (relpath, constructor, name, 1) if constructor is not None else None

    def _callable_at(self, full: str, hops: int) -> Optional[tuple[str, ast.FunctionDef, Optional[str], int]]:
        parts = full.split(".")
        for split in range(len(parts) - 1, 0, -1):
            module = self._project_module(".".join(parts[:split]))
            if module is None:
                continue
            relpath = self._relpath_of[module]
            remainder = parts[split:]
            name = ".".join(remainder)
            found = self._defined_in(relpath, name)
            if found is not None:
                return found
            facts = self._facts_of_module(module)
            if facts is not None and hops < MAX_REEXPORT_HOPS and remainder[0] in dict(facts.imports):
                return self._callable_at(self._resolve(module, name, hops + 1), hops + 1)
            return None
        return None

    # ---- queries -----------------------------------------------------------------
    def callable_named(self, relpath: str, class_qualname: Optional[str], callee: str
                       ) -> Optional[tuple[str, ast.FunctionDef, Optional[str], int]]:
        """(file, def, owning class, leading parameters a call does not fill) of the
        project function `callee` names in `relpath` (`<self>.m` for a method of
        `class_qualname`), or None."""
        return self._callable(self.module_of(relpath), relpath, class_qualname, callee)

    def functions_of(self, relpath: str) -> dict[str, tuple[Optional[ast.FunctionDef], Optional[str]]]:
        """qualname -> (def, owning class) of a file's module-level functions and methods
        of module-level classes, each parsed on first use."""
        return self._functions(relpath)

    def imported_words(self) -> Iterator[tuple[str, frozenset]]:
        """(relpath, every word of its import statements) for each project file."""
        return iter(self._imported.items())

    def relpath_of(self, module: str) -> Optional[str]:
        return self._relpath_of.get(module)

    def facts_of(self, relpath: str) -> Optional[DeepFacts]:
        return self._deep.get(relpath) or self._load(relpath)

    def parsed_files(self) -> Iterator[tuple[str, DeepFacts]]:
        return iter(list(self._deep.items()))

    def is_scanned_class(self, class_id: str) -> bool:
        """A class the byte scan saw in a file that was not parsed."""
        return class_id in self._scanned_ids

    def resolve_name(self, module: str, dotted: str) -> str:
        """A name as written in `module` (`Batch`, `info.Batch`) -> the id of the project
        class it refers to (through imports and re-exports), else the name itself."""
        return self._resolve(module, dotted)

    def module_of(self, relpath: str) -> str:
        return self._module_of.get(relpath, relpath)

    def source(self, relpath: str) -> Optional[str]:
        """The text of a project file (None when it cannot be read)."""
        return self._source(relpath)

    def locate_class(self, class_id: str) -> Optional[tuple[str, str]]:
        """(relpath, qualname) of a project class id, also one only the byte scan saw."""
        cls = self.classes.get(class_id)
        if cls is not None:
            return cls.relpath, cls.facts.qualname
        parts = class_id.split(".")
        for split in range(len(parts) - 1, 0, -1):
            relpath = self._relpath_of.get(".".join(parts[:split]))
            if relpath is not None:
                return relpath, ".".join(parts[split:])
        return None

    def classes_in(self, relpath: str) -> dict[str, ResolvedClass]:
        return self._by_file.get(relpath, {})

    def backends(self) -> Iterator[ResolvedClass]:
        return (c for c in self.classes.values() if c.is_backend)

    def ancestors(self, cls: ResolvedClass) -> Iterator[ResolvedClass]:
        seen, stack = {cls.id}, list(reversed(cls.bases))
        while stack:  # depth first, first base first: the method resolution order, near enough
            parent = self.classes.get(stack.pop())
            if parent is None or parent.id in seen:
                continue
            seen.add(parent.id)
            yield parent
            stack.extend(reversed(parent.bases))

    def descendants(self, cls: ResolvedClass) -> Iterator[ResolvedClass]:
        """Every project class deriving from `cls`, transitively (of the parsed files)."""
        if self._children is None or self._children_size != len(self.classes):
            self._children = {}
            self._children_size = len(self.classes)
            for candidate in self.classes.values():
                for base in candidate.bases:
                    self._children.setdefault(base, []).append(candidate)
        seen, stack = {cls.id}, list(self._children.get(cls.id, ()))
        while stack:
            child = stack.pop()
            if child.id in seen:
                continue
            seen.add(child.id)
            yield child
            stack.extend(self._children.get(child.id, ()))


def _decorated(function: ast.FunctionDef, name: str) -> bool:
    return any(isinstance(d, ast.Name) and d.id == name for d in function.decorator_list)


def _skip_for_class_call(function: ast.FunctionDef) -> int:
    """`Class.method(...)`: a classmethod gets `cls` for free; a plain method is handed
    its `self` explicitly, a staticmethod has none."""
    return 1 if _decorated(function, "classmethod") else 0


def _parameter_for(function: ast.FunctionDef, slot, skip: int) -> Optional[str]:
    args = function.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)][skip:]
    if isinstance(slot, int):
        return positional[slot] if slot < len(positional) else None
    named = {a.arg for a in (*args.args, *args.kwonlyargs)}
    return slot if slot in named else None


class _LazyFunctions(dict):
    """A file's functions by qualname, parsed one at a time from their line ranges."""

    def __init__(self, relpath: str, spans: Iterable[tuple[str, int, int]],
                 source: Callable[[str], Optional[str]]) -> None:
        super().__init__()
        self._ranges = {q: (first, last) for q, first, last in spans}
        self._relpath = relpath
        self._source = source
        self._lines: Optional[list[str]] = None

    def __contains__(self, qualname: object) -> bool:
        return qualname in self._ranges

    def get(self, qualname, default=None):
        return self[qualname] if qualname in self._ranges else default

    def __missing__(self, qualname: str):
        if qualname not in self._ranges:
            raise KeyError(qualname)
        if self._lines is None:
            self._lines = (self._source(self._relpath) or "").splitlines(keepends=True)
        first, last = self._ranges[qualname]
        # blank lines in front put every node on its line in the file (cheaper than
        # renumbering the tree); columns are those of the dedented text
        segment = "\n" * (first - 1) + textwrap.dedent("".join(self._lines[first - 1:last]))
        function = None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                parsed = ast.parse(segment)
            if parsed.body and isinstance(parsed.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
                function = parsed.body[0]
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            function = None  # a string dedent cannot handle: not followed
        value = (function, qualname.rsplit(".", 1)[0] if "." in qualname else None)
        self[qualname] = value
        return value


_HEADER = re.compile(r"([ \t]*)(?:async[ \t]+)?(def|class)[ \t]+(\w+)")


def _spans_from_text(text: str) -> tuple[tuple[str, int, int], ...]:
    """`DeepFacts.functions` read off the text: a module-level `def` (decorators
    included) runs until the next line of code at column 0; a class's methods are the
    `def`s at the indentation of its body."""
    lines = text.splitlines()
    code = [i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")]
    spans: list[tuple[str, int, int]] = []

    def block_end(start: int, indent: int) -> int:
        """The last code line (0-based) of the block whose header is at `start`."""
        last = start
        for i in code:
            if i <= start:
                continue
            if len(lines[i]) - len(lines[i].lstrip()) <= indent and not lines[i].lstrip().startswith((")", "]", "}")):
                break
            last = i
        return last

    def first_line(header: int, indent: int) -> int:
        first = header
        while first > 0 and lines[first - 1].startswith(" " * indent + "@"):
            first -= 1
        return first

    for i in code:
        match = _HEADER.match(lines[i])
        if not match or match.group(1):
            continue
        kind, name = match.group(2), match.group(3)
        end = block_end(i, 0)
        if kind == "def":
            spans.append((name, first_line(i, 0) + 1, end + 1))
            continue
        body = [j for j in code if i < j <= end]
        if not body:
            continue
        indent = len(lines[body[0]]) - len(lines[body[0]].lstrip())
        for j in body:
            inner = _HEADER.match(lines[j])
            if inner and len(inner.group(1)) == indent and inner.group(2) == "def":
                spans.append((f"{name}.{inner.group(3)}", first_line(j, indent) + 1, block_end(j, indent) + 1))
    return tuple(spans)


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
