"""Calls across the project: which function a call names, functions parsed one at a
time from their lines, and mirror values followed into the callees they are handed to."""

from __future__ import annotations

import ast
import bisect
import dataclasses
import textwrap
import warnings
from typing import Callable, Iterable, Optional, Sequence

from seqguard.lint.analysis.walk import parameter_uses
from seqguard.lint.analysis.names import decorated_with
from seqguard.lint.analysis.skeleton import def_spans
from seqguard.lint.analysis.source import split_lines
from seqguard.lint.model import Callee, CalleeHead, MirrorAccess
from seqguard.lint.project.modules import MAX_REEXPORT_HOPS

# How far a mirror value is followed through calls that pass it on (f -> g -> h): deep
# enough for a helper that forwards to a kernel wrapper, bounded so lint stays fast.
MAX_CALL_DEPTH = 3
# blank lines put in front of a function parsed alone, at most (plus 20 a line of it):
# beyond, its tree is renumbered (see `_LazyFunctions`)
_MOST_BLANK_LINES = 2000


@dataclasses.dataclass(frozen=True)
class CalleeRead:
    """A function that reads, without a None guard, the parameter a mirror is passed to."""
    callee: Callee    # what the call site names
    relpath: str      # of the file that reads it
    line: int


class Calls:
    """The call half of `ProjectIndex` (its state is set up there)."""

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
        parsed); None outside them. Both steps bisect positions sorted once (`SpanIndex`,
        `NestedDefs`)."""
        facts = self._deep.get(relpath) or self._load(relpath)
        qualname = self._span_index(relpath, facts.functions if facts else ()).innermost(line)
        if qualname is None:
            return None
        function = self._functions(relpath).get(qualname, (None, None))[0]
        if function is None:
            return None
        key = (relpath, qualname)
        nested = self._nested_defs.get(key)
        if nested is None or nested.function is not function:
            nested = self._nested_defs[key] = NestedDefs(function)
        return nested.innermost(line)

    def function_names(self, relpath: str) -> frozenset[str]:
        """The qualnames of `function_spans(relpath)`."""
        return self._span_index(relpath, self.function_spans(relpath)).names

    def functions_holding(self, relpath: str, line: int) -> list[str]:
        """The qualnames of `function_spans(relpath)` whose lines hold `line`."""
        return [q for q, _, _ in self._span_index(relpath, self.function_spans(relpath)).holding(line)]

    def _span_index(self, relpath: str, spans: tuple[tuple[str, int, int], ...]) -> SpanIndex:
        """The index of `spans`, built once per tuple of spans a file has."""
        index = self._span_indexes.get(relpath)
        if index is None or index.spans is not spans:
            index = self._span_indexes[relpath] = SpanIndex(spans)
        return index

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
                  callee: Callee) -> Optional[tuple[str, ast.FunctionDef, Optional[str], int]]:
        """(file, def, owning class, leading parameters the call does not fill) for a
        callee the project defines: `self.m`, a function or class of this module, or one
        imported (through re-exports)."""
        if callee.head is CalleeHead.VALUE:
            return None
        if callee.head is not CalleeHead.NAME:
            rest = callee.name
            cls = self.class_of(f"{module}.{class_qualname}") if class_qualname else None
            if cls is None or "." in rest:
                return None
            for owner in ((cls,) if callee.head is CalleeHead.SELF else ()) + tuple(self.ancestors(cls)):
                hit = self._functions(owner.relpath).get(f"{owner.facts.qualname}.{rest}")
                if hit is not None and hit[0] is not None:
                    return owner.relpath, hit[0], hit[1], 0 if decorated_with(hit[0], "staticmethod") else 1
            return None
        facts = self._facts_of_module(module)
        if facts is None:
            return None
        head = callee.name.partition(".")[0]
        if head in facts.top_level_functions or head in facts.top_level_classes:
            return self._defined_in(relpath, callee.name)
        if head not in dict(facts.imports):
            return None  # a builtin, a local variable's method, ...: nothing to look into
        return self._callable_at(self._resolve(module, callee.name), 0)

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

    def callable_named(self, relpath: str, class_qualname: Optional[str], callee: Callee
                       ) -> Optional[tuple[str, ast.FunctionDef, Optional[str], int]]:
        """(file, def, owning class, leading parameters a call does not fill) of the
        project function `callee` names in `relpath` (`self.m` a method of
        `class_qualname`), or None."""
        return self._callable(self.module_of(relpath), relpath, class_qualname, callee)

    def callable_at(self, dotted: str) -> Optional[tuple[str, ast.FunctionDef, Optional[str], int]]:
        """As `callable_named`, for an absolute dotted name (`pkg.runner.make`)."""
        return self._callable_at(dotted, 0)

    def functions_of(self, relpath: str) -> dict[str, tuple[Optional[ast.FunctionDef], Optional[str]]]:
        """qualname -> (def, owning class) of a file's module-level functions and methods
        of module-level classes, each parsed on first use."""
        return self._functions(relpath)


def _skip_for_class_call(function: ast.FunctionDef) -> int:
    """`Class.method(...)`: a classmethod gets `cls` for free; a plain method is handed
    its `self` explicitly, a staticmethod has none."""
    return 1 if decorated_with(function, "classmethod") else 0


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
            # split where Python ends lines (str.splitlines also splits at form feeds,
            # which shifts every later function off its own lines)
            self._lines = [line + "\n" for line in split_lines(self._source(self._relpath) or "")]
        first, last = self._ranges[qualname]
        # columns are those of the dedented text. Blank lines in front put every node on
        # its line in the file (cheaper than renumbering the tree) where they are few next
        # to the function; far down a file, a tokenizer pass over every line above each
        # function is quadratic in its functions, and the tree is renumbered instead
        segment = textwrap.dedent("".join(self._lines[first - 1:last]))
        prefix = first - 1 <= _MOST_BLANK_LINES + 20 * (last - first + 1)
        function = None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                parsed = ast.parse("\n" * (first - 1) + segment) if prefix else \
                    ast.increment_lineno(ast.parse(segment), first - 1)
            if parsed.body and isinstance(parsed.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
                function = parsed.body[0]
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            function = None  # a string dedent cannot handle: not followed
        value = (function, qualname.rsplit(".", 1)[0] if "." in qualname else None)
        self[qualname] = value
        return value


def _spans_from_text(text: str) -> tuple[tuple[str, int, int], ...]:
    """`DeepFacts.functions` read off the text (`skeleton.def_spans`), numbered as
    Python numbers lines."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return tuple((span.qualname, span.first, span.last) for span in def_spans(text))


# Which function holds a line, answered by bisection over positions sorted once per
# file (and once per function, for the functions nested in it). Scanning every span, or
# every statement of a long function, for each read made lint and explain quadratic in
# the reads of one file (issue 37: 4,000 reads took 31 s).
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
# the statement lists a nested def can sit in (expressions hold none: a lambda is no def)
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


class SpanIndex:
    """A file's (qualname, first line, last line) spans, asked which hold a line. The
    spans of module-level functions and methods of module-level classes never overlap,
    so one bisection finds the only one; spans read off a file's text may, and are then
    searched one by one, as before."""

    # counts the spans visited by `holding`: the scaling tests (tests/test_scaling.py)
    # read it to check the work per read does not grow with the file
    visited = 0

    def __init__(self, spans: Sequence[tuple[str, int, int]]) -> None:
        self.spans = spans
        self.names = frozenset(q for q, _, _ in spans)
        ordered = sorted(range(len(spans)), key=lambda i: (spans[i][1], spans[i][2]))
        self._disjoint = all(spans[a][2] < spans[b][1] for a, b in zip(ordered, ordered[1:]))
        self._order = ordered
        self._firsts = [spans[i][1] for i in ordered]

    def holding(self, line: int) -> list[tuple[str, int, int]]:
        """The spans holding `line`, in the order given."""
        if not self._disjoint:
            SpanIndex.visited += len(self.spans)
            return [span for span in self.spans if span[1] <= line <= span[2]]
        at = bisect.bisect_right(self._firsts, line) - 1
        SpanIndex.visited += 1
        if at < 0:
            return []
        span = self.spans[self._order[at]]
        return [span] if line <= span[2] else []

    def innermost(self, line: int) -> Optional[str]:
        """The qualname of the shortest span holding `line` (the first given, on a tie)."""
        holding = self.holding(line)
        return min(holding, key=lambda span: span[2] - span[1])[0] if holding else None


class NestedDefs:
    """The functions defined inside one function, at any depth (in its statements, and
    in the classes and functions among them), asked which is the innermost holding a
    line. Nested defs nest or stand apart, never overlap: the innermost holding a line
    is the last to start at or before it, or one of that one's enclosing defs."""

    visited = 0   # defs looked at by `innermost` (tests/test_scaling.py)

    def __init__(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.function = function
        found: list[tuple[int, int, ast.AST, int]] = []   # (line, last line, def, parent's place or -1)
        stack: list[tuple[ast.AST, Optional[ast.AST]]] = [(s, None) for s in reversed(function.body)]
        parents: dict[int, ast.AST] = {}
        while stack:
            node, parent = stack.pop()
            inner = parent
            if isinstance(node, _DEFS):
                if parent is not None:
                    parents[id(node)] = parent
                found.append((node.lineno, node.end_lineno or node.lineno, node, -1))
                inner = node
            for field in _BODIES:
                stack.extend((child, inner) for child in reversed(getattr(node, field, ())))
        found.sort(key=lambda entry: entry[0])
        place = {id(entry[2]): i for i, entry in enumerate(found)}
        self._defs = [(first, last, node, place[id(parents[id(node)])] if id(node) in parents else -1)
                      for first, last, node, _ in found]
        self._firsts = [entry[0] for entry in self._defs]

    def innermost(self, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef:
        """The innermost def holding `line`: a nested one, else the function itself."""
        at = bisect.bisect_right(self._firsts, line) - 1
        while at >= 0:
            NestedDefs.visited += 1
            first, last, node, parent = self._defs[at]
            if line <= last:
                return node
            at = parent
        return self.function
