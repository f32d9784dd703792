"""Names for expressions: the key that matches a guard with a read (`b.seq_lens_cpu`,
`getattr(b, "seq_lens_cpu", None)` alike), and the dotted name of a base or callee."""

from __future__ import annotations

import ast
from typing import Iterable, Optional


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


def indexes_with(key: str, name: str) -> bool:
    """Whether `name` appears inside the index of `key` (`i` in `bs[i].x`)."""
    inside = key[key.index("["):]
    start = inside.find(name)
    while start != -1:
        before = inside[start - 1] if start else " "
        end = start + len(name)
        after = inside[end] if end < len(inside) else " "
        if not (before.isalnum() or before in "_.") and not (after.isalnum() or after == "_"):
            return True
        start = inside.find(name, end)
    return False


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


def decorated_with(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """Whether `function` carries `@name` (`staticmethod`, `classmethod`), also written
    `@builtins.name`."""
    return any(dotted(d) in (name, f"builtins.{name}") for d in function.decorator_list)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def bound_names(function: ast.FunctionDef | ast.AsyncFunctionDef, nested: bool = False) -> dict[str, int]:
    """How many times each name is bound in a function: its parameters, assignments
    and every other target (loops, `with`, walrus, comprehensions, `del`), `except`
    and `match` names, imports, nested `def`s and classes; a `global`/`nonlocal`
    counts twice (bound elsewhere too). With `nested`, the bindings of nested functions, lambdas and classes count
    as well (a closure may rebind a name through `nonlocal`)."""
    counts: dict[str, int] = {}

    def add(name: str, times: int = 1) -> None:
        counts[name] = counts.get(name, 0) + times

    def parameters(args: ast.arguments) -> None:
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is not None:
                add(arg.arg)

    parameters(function.args)
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            add(node.id)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                add(name, 2)
        if isinstance(node, _SCOPES):
            if not isinstance(node, ast.Lambda):
                add(node.name)  # `def Runner():` binds the name where it stands
            if not nested:
                continue
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                parameters(node.args)
        stack.extend(ast.iter_child_nodes(node))
    return counts


def names_host_copy(name: str, host_words: Iterable[str]) -> bool:
    """Whether a name says its value is on the host: one of `host_words` (the engine
    model's `host-name-words`: `cpu`, `host`) as one of its words (`seq_lens_cpu_int`,
    `host_lens`; not `cpuset`)."""
    words = name.split("_")
    return any(word in words for word in host_words)
