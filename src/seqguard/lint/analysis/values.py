"""What a store gives a mirror attribute: the walk's half of nullability.

Each value is described by the ways it can turn out, joined by the project index:

- `NONE`: it can be None (the literal, `getattr(o, "x", None)`, an optional parameter);
- `NEVER`: it cannot (a tensor expression, a host copy, an element `pinned[idx]`);
- `MAYBE`: nothing is known (a call, an attribute of something else);
- a copy (`StoredValue(COPY, attr, term, source)`): another object's mirror, as
  nullable as that object's attribute is (`ForwardBatch(seq_lens_cpu=batch.seq_lens_cpu)`);
  the term is the source object's type (`terms`, empty when the walk cannot tell it) and
  the source its text (`batch`: a builder copying its parameter's mirror makes a guard
  on the argument hold for what it builds).
"""

from __future__ import annotations

import ast
from typing import Callable, Mapping

from seqguard.lint.analysis.guards import is_never_none
from seqguard.lint.analysis.names import expression_key, getattr_target, is_none
from seqguard.lint.analysis.terms import Terms
from seqguard.lint.model import StoredValue, ValueKind

NONE, NEVER, MAYBE = StoredValue(ValueKind.NONE), StoredValue(ValueKind.NEVER), StoredValue(ValueKind.MAYBE)
Values = tuple[StoredValue, ...]


def stored_values(node: ast.AST, mirrors: frozenset, locals_: Mapping[str, Values],
                  terms_of: Callable[[ast.AST], Terms]) -> Values:
    """What storing `node` into a mirror attribute can give it. `locals_` holds what the
    scope knows of its local names' values; `terms_of` types an object expression."""
    if is_none(node):
        return (NONE,)
    if isinstance(node, ast.IfExp):
        return _join(stored_values(node.body, mirrors, locals_, terms_of),
                     stored_values(node.orelse, mirrors, locals_, terms_of))
    if isinstance(node, ast.BoolOp):
        # `a or b` is one of them; `a and b` may stop at a falsy `a`
        return _join(*(stored_values(v, mirrors, locals_, terms_of) for v in node.values))
    if isinstance(node, ast.NamedExpr):
        return stored_values(node.value, mirrors, locals_, terms_of)
    if isinstance(node, ast.Attribute) and node.attr in mirrors:
        return _copies(node.attr, terms_of(node.value), node.value)
    target = getattr_target(node)
    if target is not None and target[1] in mirrors:
        copied = _copies(target[1], terms_of(target[0]), target[0])
        return _join(copied, (NONE,)) if len(node.args) == 3 else copied
    if isinstance(node, ast.Name):
        return locals_.get(node.id, (MAYBE,))
    if _of_a_mirror(node, mirrors) or is_never_none(node):
        return (NEVER,)  # `b.seq_lens_cpu[idx]`, `.clone()`: a None source raises first
    return (MAYBE,)


def _of_a_mirror(node: ast.AST, mirrors: frozenset) -> bool:
    """An element, slice or method result of a mirror: never None (a None one raises)."""
    if isinstance(node, ast.Subscript):
        inner = node.value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        inner = node.func.value
    else:
        return False
    return isinstance(inner, ast.Attribute) and inner.attr in mirrors


def _copies(attr: str, terms: Terms, source: ast.AST) -> Values:
    name = expression_key(source) or ""
    return tuple(StoredValue(ValueKind.COPY, attr, t, name) for t in terms) or \
        (StoredValue(ValueKind.COPY, attr, "", name),)


def _join(*parts: Values) -> Values:
    out: list[StoredValue] = []
    for part in parts:
        for value in part:
            if value not in out:
                out.append(value)
    if NONE in out or MAYBE in out:  # a copy or never beside them adds nothing to the verdict
        return tuple(v for v in out if v.kind is not ValueKind.NEVER)
    return tuple(out)
