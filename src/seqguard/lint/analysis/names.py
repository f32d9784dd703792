"""Names for expressions: the key that matches a guard with a read (`b.seq_lens_cpu`,
`getattr(b, "seq_lens_cpu", None)` alike), and the dotted name of a base or callee."""

from __future__ import annotations

import ast
from typing import Optional


def expression_key(node: ast.AST) -> Optional[str]:
    """A stable name for an expression, used to match a guard with a read.
    `getattr(x, "attr"[, default])` names the same thing as `x.attr`."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = expression_key(node.value)
        return f"{base}.{node.attr}" if base is not None else None
    getattr_of = getattr_target(node)
    if getattr_of is not None:
        base = expression_key(getattr_of[0])
        return f"{base}.{getattr_of[1]}" if base is not None else None
    try:
        return ast.unparse(node)
    except Exception:  # pragma: no cover - unparse handles every parsed node
        return None


def getattr_target(node: ast.AST) -> Optional[tuple[ast.expr, str]]:
    """(object, attribute) for `getattr(obj, "attr")` and `getattr(obj, "attr", None)`:
    the forms that evaluate to the attribute or to None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and 2 <= len(node.args) <= 3 and not node.keywords
            and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
            and (len(node.args) == 2 or is_none(node.args[2]))):
        return node.args[0], node.args[1].value
    return None


def is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def keys_of(node: ast.AST) -> set[str]:
    if isinstance(node, ast.NamedExpr):  # `(lens := b.seq_lens_cpu) is not None`
        return keys_of(node.target) | keys_of(node.value)
    key = expression_key(node)
    return {key} if key is not None else set()


def key_root(key: str) -> str:
    """The name an expression key starts with: `b` for `b.seq_lens_cpu`, `xs` for `xs[0].x`."""
    return key.split(".", 1)[0].split("[", 1)[0]


def is_under(key, rebound: str) -> bool:
    """Whether `key` is `rebound` or reached through it (`b.x`, `b[0]` under `b`). A
    path fact (`guards.Atom`) about `b.forward_mode` is under the name `b` only: storing
    another attribute of `b` does not undo a test already passed."""
    if type(key) is tuple:
        return key[2] == rebound
    return key == rebound or key.startswith((rebound + ".", rebound + "["))


def dotted(node: ast.AST) -> str:
    """`a.b.C` for a name or attribute chain (the class of `Base[T]`); "" for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    if isinstance(node, ast.Subscript):  # Generic[T], Base[...]: the class is the value
        return dotted(node.value)
    return ""
