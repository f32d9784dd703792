"""Which function holds a line, answered by bisection over positions sorted once per
file (and once per function, for the functions nested in it). Scanning every span, or
every statement of a long function, for each read made lint and explain quadratic in
the reads of one file (issue 37: 4,000 reads took 31 s)."""

from __future__ import annotations

import ast
import bisect
from typing import Optional, Sequence

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
