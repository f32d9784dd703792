"""Type terms: what the walk can say, inside one file, about the type of an object.

A term is a short string the project index resolves later, when every module's names
are known (nothing here looks at another file):

- `C:<qualname>`   an instance of a class defined in this module (`self` in a method);
- `A:<dotted>`     an instance of the class an annotation names (`fb: ForwardBatch`);
- `N:<dotted>`     what calling a name returns: an instance for a class, the function's
                   return for a function (`ForwardBatch.init_new(...)`, `make()`);
- `S:<line>:<col>` the namespace object built at that call (`SimpleNamespace(...)`);
- `F:<attr>|<t>`   attribute `attr` of an object of term `t` (`self.buffers`);
- `M:<name>|<t>`   what method `name` returns, called on an object of term `t`;
- `K:<qualname>`   the class object itself (`cls` in a classmethod, for `cls.make()`).

An expression the walk cannot type has no terms (an empty tuple): the project then
treats it as possibly any class.
"""

from __future__ import annotations

import ast
from typing import Iterable, Mapping, Optional

from seqguard.lint.analysis.names import dotted, is_none

# Calls that build a plain attribute bag: each call site is a type of its own.
NAMESPACE_BUILDERS = frozenset({"SimpleNamespace", "types.SimpleNamespace", "argparse.Namespace"})
_WRAPPERS = frozenset({"Optional", "typing.Optional", "Final", "typing.Final", "ClassVar", "typing.ClassVar",
                       "Annotated", "typing.Annotated"})
_UNIONS = frozenset({"Union", "typing.Union"})

Terms = tuple[str, ...]


def annotation_terms(node: Optional[ast.AST]) -> Terms:
    """`ForwardBatch`, `Optional[ForwardBatch]`, `"ForwardBatch"`, `ForwardBatch | None`,
    `Union[A, B]` -> the classes named; containers and anything else -> ()."""
    if node is None:
        return ()
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return ()
        return annotation_terms(node)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _merge(annotation_terms(node.left), annotation_terms(node.right))
    if is_none(node):
        return ()
    if isinstance(node, ast.Subscript):
        head = dotted(node.value)
        inner = node.slice
        if head in _WRAPPERS:
            first = inner.elts[0] if isinstance(inner, ast.Tuple) and inner.elts else inner
            return annotation_terms(first)
        if head in _UNIONS:
            parts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            return _merge(*(annotation_terms(p) for p in parts))
        return ()
    name = dotted(node)
    return (f"A:{name}",) if name else ()


def is_optional_annotation(node: Optional[ast.AST]) -> bool:
    """Whether an annotation admits None (`Optional[T]`, `T | None`, `None`)."""
    if node is None:
        return True
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return "Optional" in node.value or "None" in node.value
    if is_none(node):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return is_optional_annotation(node.left) or is_optional_annotation(node.right)
    if isinstance(node, ast.Subscript):
        head = dotted(node.value)
        if head in ("Optional", "typing.Optional"):
            return True
        if head in _UNIONS:
            parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return any(is_optional_annotation(p) for p in parts)
    return False


def expression_terms(node: ast.AST, types: Mapping[str, Terms], self_name: Optional[str],
                     self_class: Optional[str], cls_name: Optional[str] = None) -> Terms:
    """The terms of the object `node` evaluates to, given what the scope knows of its
    local names (`types`), which name is `self` (an instance of `self_class`) and which
    is `cls` in a classmethod."""
    if isinstance(node, ast.Name):
        if node.id == self_name and self_class is not None:
            return (f"C:{self_class}",)
        return types.get(node.id, ())
    if isinstance(node, ast.Attribute):
        return tuple(f"F:{node.attr}|{t}" for t in expression_terms(node.value, types, self_name, self_class, cls_name))
    if isinstance(node, ast.Call):
        return call_terms(node, types, self_name, self_class, cls_name)
    # either side may be the value: one of unknown type makes the whole unknown
    if isinstance(node, ast.IfExp):
        return _every(expression_terms(node.body, types, self_name, self_class, cls_name),
                      expression_terms(node.orelse, types, self_name, self_class, cls_name))
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        return _every(*(expression_terms(v, types, self_name, self_class, cls_name) for v in node.values))
    if isinstance(node, ast.NamedExpr):
        return expression_terms(node.value, types, self_name, self_class, cls_name)
    return ()


def call_terms(call: ast.Call, types: Mapping[str, Terms], self_name: Optional[str],
               self_class: Optional[str], cls_name: Optional[str] = None) -> Terms:
    func = call.func
    name = dotted(func)
    if name in NAMESPACE_BUILDERS:
        return (f"S:{call.lineno}:{call.col_offset}",)
    if cls_name is not None and name == cls_name and self_class is not None:
        return (f"C:{self_class}",)  # `cls(...)` in a classmethod
    if isinstance(func, ast.Attribute):
        receiver = expression_terms(func.value, types, self_name, self_class, cls_name)
        if receiver:
            return tuple(f"M:{func.attr}|{t}" for t in receiver)
        if cls_name is not None and isinstance(func.value, ast.Name) and func.value.id == cls_name \
                and self_class is not None:
            return (f"M:{func.attr}|K:{self_class}",)  # `cls.make(...)`: the class's own factory
    if name and not (isinstance(func, ast.Name) and func.id in types):
        return (f"N:{name}",)
    return ()


def _every(*parts: Terms) -> Terms:
    """The terms of a value that is one of `parts`; none when one part has none."""
    return _merge(*parts) if all(parts) else ()


def _merge(*parts: Iterable[str]) -> Terms:
    out: list[str] = []
    for part in parts:
        for term in part:
            if term not in out:
                out.append(term)
    return tuple(out)
