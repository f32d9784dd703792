"""Module names and name resolution across the project: every import style leads to
the same id (`module.Qualname`): `from x import A as B`, `import x.base as base` +
`base.A`, relative imports, re-exports through packages, star imports. A name that
resolves outside the project keeps its dotted source name."""

from __future__ import annotations

import re
from typing import Iterable, Iterator, Optional

from seqguard.config import DEFAULT_SOURCE_ROOTS
from seqguard.lint.model import DeepFacts

MAX_REEXPORT_HOPS = 12


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


class Modules:
    """The name-resolution half of `ProjectIndex` (its state is set up there)."""

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
            added = list(self._by_file[relpath].values())
            for cls in added:
                self._resolve_bases(cls)
            # as the index did for the files parsed up front: a class met now may be a
            # backend, and inherit an opt-out (`class Lite(NoMirror, Reader)`)
            for cls in added:
                self._classify(cls, set())
            for cls in added:
                self._settle_flag(cls, set())
        return self._deep[relpath]

    def _project_module(self, dotted: str) -> Optional[str]:
        if dotted in self._relpath_of:
            return dotted
        return self._suffixes.get(dotted)

    def _declares_class(self, relpath: str, name: str) -> bool:
        """Whether an unparsed file defines class `name` (the scan's list, or its text:
        the scan sees only classes with a base list)."""
        scanned = self._scans.get(relpath)
        if scanned is not None and any(found == name for found, _ in scanned.classes):
            return True
        if not self._scans:
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
        if level - 1 > len(parts):
            return f"<beyond the top package>.{target}"  # Python's ImportError: names nothing here
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

    def _tried_choices(self, module: str, dotted: str, local: tuple = ()) -> list[str]:
        """What else a base's source name may be when a branch binds its head or a name
        it aliases (`try: from engine import Base` / `except ImportError: class Base:
        ...`, or the other way round; `if TYPE_CHECKING: from engine import Base` /
        `else: Base = object`; `Base = _Base` after such branches bind `_Base`): each
        branch's resolution, in order, less the one `_resolve` picks. Empty for a name
        the class's own function imports."""
        facts = self._facts_of_module(module)
        if facts is None or not facts.tried_bindings or dotted.partition(".")[0] in dict(local):
            return []
        primary = self._resolve(module, dotted, local=local)
        choices: list[str] = []
        for choice in self._branch_choices(module, dotted, facts, 0):
            if choice != primary and choice not in choices:
                choices.append(choice)
        return choices

    def _branch_choices(self, module: str, dotted: str, facts: DeepFacts, hops: int) -> list[str]:
        """Each resolution of `dotted` a branch binding of its head gives, and those of
        the names it is an alias of (`Base = _Base`), in order."""
        head, _, rest = dotted.partition(".")
        found: list[str] = []
        if hops >= MAX_REEXPORT_HOPS:
            return found
        aliases = [b.alias for name, b in facts.tried_bindings if name == head and b.alias]
        aliased = dict(facts.name_aliases).get(head)
        if aliased is not None:
            aliases.append(aliased)
        for name, binding in facts.tried_bindings:
            if name != head:
                continue
            if binding.imported is not None:
                full = self.imported_name(module, binding.imported)
                found.append(self._canonical(f"{full}.{rest}" if rest else full, 1))
            elif binding.alias:
                if binding.alias.partition(".")[0] == head:
                    found.append(dotted)
                else:
                    found.append(self._resolve(module, f"{binding.alias}.{rest}" if rest else binding.alias, 1))
            else:
                found.append(f"{module}.{dotted}")
        for alias in aliases:
            if alias.partition(".")[0] != head:
                found.extend(self._branch_choices(module, f"{alias}.{rest}" if rest else alias, facts, hops + 1))
        return found

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

    def resolve_name(self, module: str, dotted: str) -> str:
        """A name as written in `module` (`Batch`, `info.Batch`) -> the id of the project
        class it refers to (through imports and re-exports), else the name itself."""
        return self._resolve(module, dotted)

    def imported_name(self, module: str, imported) -> str:
        """The absolute dotted name an `Import` made in `module` binds (`from .runner
        import Runner` in `pkg.worker` -> `pkg.runner.Runner`)."""
        base = self._absolute(module, imported.level, imported.module)
        return f"{base}.{imported.name}" if imported.name is not None else base

    def resolve_absolute(self, dotted: str) -> str:
        """An absolute dotted name (`pkg.runner.Runner`) -> the id of the project class
        it refers to (through re-exports), else the name itself."""
        return self._canonical(dotted, 0)

    def module_of(self, relpath: str) -> str:
        return self._module_of.get(relpath, relpath)

    def relpath_of(self, module: str) -> Optional[str]:
        return self._relpath_of.get(module)

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

    def scanned_bases(self, relpath: str, name: str) -> list[str]:
        """The base classes of class `name` of a file, as its byte scan names them,
        resolved in the file's module (for a class the file's parse was not needed for)."""
        scan = self._scans.get(relpath)
        module = self.module_of(relpath)
        for cls_name, bases in (scan.classes if scan is not None else ()):
            if cls_name == name:
                return [self.resolve_name(module, b) for b in bases]
        return []

    def facts_of(self, relpath: str) -> Optional[DeepFacts]:
        return self._deep.get(relpath) or self._load(relpath)

    def parsed_files(self) -> Iterator[tuple[str, DeepFacts]]:
        return iter(list(self._deep.items()))

    def is_scanned_class(self, class_id: str) -> bool:
        """A class the byte scan saw in a file that was not parsed."""
        return class_id in self._scanned_ids

    def files_annotating(self, name: str) -> tuple[list[str], list[str]]:
        """(the project files that annotate `name` anywhere, those that store or
        annotate it as an attribute), as the byte scan saw (names holding a device word
        only)."""
        annotating, storing = [], []
        for relpath, facts in self._scans.items():
            if name in facts.annotated:
                words = facts.annotated.split()
                if name in words:
                    annotating.append(relpath)
                if f".{name}" in words:
                    storing.append(relpath)
        return sorted(annotating), sorted(storing)

    def imported_words(self) -> Iterator[tuple[str, str]]:
        """(relpath, every word of its import statements, space-separated) for each
        project file."""
        return ((relpath, facts.imported) for relpath, facts in self._scans.items())

    def defines_class(self, relpath: str, name: str) -> bool:
        """Whether a project file defines a class `name` (parsed, else as its byte scan
        or its text says: nothing is parsed for the asking)."""
        if relpath in self._deep:
            return any(c.qualname == name for c in self._deep[relpath].classes)
        return self._declares_class(relpath, name) if self._scans else False

    def names_class(self, name: str) -> bool:
        """Whether any project file defines a class `name` with a base list, or names
        `name` in a class's base list, as the byte scans saw."""
        return any(name == found or name in bases for facts in self._scans.values() for found, bases in facts.classes)

    def attribute_words(self) -> Iterator[tuple[str, str]]:
        """(relpath, every word it names as an attribute, space-separated) for each
        project file."""
        return ((relpath, facts.attributes) for relpath, facts in self._scans.items())
