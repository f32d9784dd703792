"""The project index: every parsed file's facts, resolved across modules. Split by
job (`lint/project/`): `modules` (names and imports), `hierarchy` (backends and their
flags), `calls` (callees, functions parsed from their lines); the engine model's
judgement of reads lives in `lint/contract`."""

from __future__ import annotations

import ast
from typing import Callable, Iterable, Mapping, Optional

from seqguard.config import DEFAULT_DEVICE_ATTRIBUTE
from seqguard.lint.model import DeepFacts, ScanFacts
from seqguard.lint.project.calls import MAX_CALL_DEPTH, CalleeRead, Calls, NestedDefs, SpanIndex
from seqguard.lint.project.hierarchy import Hierarchy, ResolvedClass, candidate_backend_names
from seqguard.lint.project.modules import MAX_REEXPORT_HOPS, Modules, module_names

__all__ = ["CalleeRead", "MAX_CALL_DEPTH", "MAX_REEXPORT_HOPS", "ProjectIndex", "ResolvedClass",
           "candidate_backend_names", "module_names"]


class ProjectIndex(Modules, Hierarchy, Calls):
    """Built once per run from the parsed files' facts; answers every cross-file question."""

    def __init__(self, deep: dict[str, DeepFacts], modules: dict[str, str],
                 backend_bases: Iterable[str], load: Callable[[str], Optional[DeepFacts]],
                 source: Callable[[str], Optional[str]] = lambda _: None,
                 device_attribute: str = DEFAULT_DEVICE_ATTRIBUTE,
                 scans: Optional[Mapping[str, ScanFacts]] = None,
                 backend_classes: Iterable[str] = ()) -> None:
        """`deep`: facts of the parsed files; `modules`: relpath -> module for every
        project file; `load(relpath)` analyses a file on demand (for re-exports);
        `source(relpath)` reads one (for reads through calls); `scans`: every project
        file's byte scan (its classes and import words), read as asked, not copied."""
        self._deep = deep
        # the files parsed before any question: what is known of a class hierarchy is
        # read from these and from the files a question names, never from what some
        # earlier question happened to parse
        self._upfront = frozenset(deep)
        self._load = load
        # the classes the byte scan saw: a base found there needs no parse, and (see
        # candidate_backend_names) such a class neither is a backend nor passes a flag on;
        # and the words of each file's imports (where callers can be)
        self._scans = scans or {}
        self._scanned_ids: set[str] = set()
        self._source = source
        self._device_attribute = device_attribute
        self._functions_by_file: dict[str, dict[str, tuple[ast.FunctionDef, Optional[str]]]] = {}
        self._text_spans: dict[str, tuple[tuple[str, int, int], ...]] = {}
        self._span_indexes: dict[str, SpanIndex] = {}
        self._nested_defs: dict[tuple[str, str], NestedDefs] = {}
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
        self._by_file: dict[str, dict[str, ResolvedClass]] = {}
        for relpath, facts in deep.items():
            self._add_file(relpath, facts)
        for cls in list(self.classes.values()):
            self._resolve_bases(cls)
        for cls in self.classes.values():
            self._classify(cls, set())
        for cls in self.classes.values():
            self._settle_flag(cls, set())
