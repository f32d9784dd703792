"""None-narrowing: which expressions cannot be None at a point of a function.

A guard is a test (`x is not None`, truthiness, `isinstance`, `getattr(o, "a", None)`,
a local boolean holding one of these), an early exit, or an assignment from a value
that cannot be None. Facts are kept as sets of expression keys (`b.seq_lens_cpu`);
rebinding a name forgets every key reached through it.

The same sets carry *path facts* (`Atom`): every test that held (or failed) on all
paths to a point, whatever it tests (`fb.forward_mode.is_extend()`,
`self.spec_algorithm.is_none()`). The walk joins them exactly like the keys (kept
where every branch agrees), and the project's engine model decides what they mean
(which forward modes are still possible, whether a feature forcing the mirror on is
known to be active). Rebinding the name a test starts with forgets the test.
"""

from __future__ import annotations

import ast
from typing import Iterable, Mapping

from seqguard.lint.analysis.facts import Facts
from seqguard.lint.analysis.names import (
    expression_key, getattr_target, indexes_with, is_none, is_under, key_root, keys_of,
)

EXIT_STATEMENTS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


# Handlers that name what a read of None raises: the author expected None there. A broad
# `except Exception:` also catches it, but silently skips work, so it guards nothing.
_NONE_ERRORS = frozenset({"AttributeError", "TypeError"})


# A path fact: (the test's node, "+" held or "-" failed, the name it starts with). Nodes
# compare by identity, so the same test reached along two branches is one fact.
Atom = tuple
HELD, FAILED = "+", "-"


def atom(test: ast.AST, polarity: str) -> Atom:
    return (test, polarity, root_name(test))


def root_name(node: ast.AST) -> str:
    """`b` for `b.forward_mode.is_extend()`, `b.x[0] is None`; "" when it starts elsewhere."""
    while True:
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Compare):
            node = node.left
        elif isinstance(node, ast.Name):
            return node.id
        else:
            return ""


def is_atom(fact) -> bool:
    return type(fact) is tuple


# name -> what a local boolean's test tells (`gpu_only = b.seq_lens_cpu is None`): the keys
# non-None where it is true, and where it is false. Testing the name narrows like testing
# the expression, as Pyright's aliased conditions do. Stored computed, so a chain of
# booleans built from one another costs one step each, and `ok = ok and ...` cannot loop.
Conditions = Mapping[str, tuple[frozenset, frozenset]]
_NO_CONDITIONS: Conditions = {}


def nonnull_when_true(test: ast.AST, conditions: Conditions = _NO_CONDITIONS) -> set:
    """Expressions that cannot be None where `test` holds, and the path facts it adds."""
    if isinstance(test, ast.Compare):
        return _compared_with_none(test, (ast.IsNot, ast.NotEq)) | {atom(test, HELD)}
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And):
            return set().union(*(nonnull_when_true(v, conditions) for v in test.values))
        return {atom(test, HELD)}
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return nonnull_when_false(test.operand, conditions)
    if isinstance(test, ast.Name) and test.id in conditions:
        return {test.id} | conditions[test.id][0]
    if (isinstance(test, ast.Call) and isinstance(test.func, ast.Name)
            and test.func.id == "isinstance" and len(test.args) == 2):
        return keys_of(test.args[0]) | {atom(test, HELD)}
    if isinstance(test, (ast.Name, ast.Attribute)) or getattr_target(test) is not None:
        return keys_of(test) | {atom(test, HELD)}  # truthy implies not None
    if isinstance(test, ast.NamedExpr):
        return keys_of(test.target) | nonnull_when_true(test.value, conditions)
    return {atom(test, HELD)}


def nonnull_when_false(test: ast.AST, conditions: Conditions = _NO_CONDITIONS) -> set:
    """Expressions that cannot be None where `test` fails, and the path facts it adds."""
    if isinstance(test, ast.Compare):
        return _compared_with_none(test, (ast.Is, ast.Eq)) | {atom(test, FAILED)}
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.Or):
            return set().union(*(nonnull_when_false(v, conditions) for v in test.values))
        return {atom(test, FAILED)}
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return nonnull_when_true(test.operand, conditions)
    if isinstance(test, ast.Name) and test.id in conditions:
        return set(conditions[test.id][1])
    if isinstance(test, ast.NamedExpr):
        return nonnull_when_false(test.value, conditions)
    return {atom(test, FAILED)}


def _compared_with_none(test: ast.Compare, ops: tuple[type, ...]) -> set[str]:
    """The side of `x <op> None` (or `None <op> x`) when the operator is one of `ops`.
    A chain holds where each of its links holds (`None is not x > 0`), so for `is not`
    every link tells; it fails where any one link fails, so for `is` only a single one."""
    if len(test.ops) != 1 and ops[0] is not ast.IsNot:
        return set()
    operands = (test.left, *test.comparators)
    return set().union(*(compared_link(operands[i], op, operands[i + 1], ops)
                         for i, op in enumerate(test.ops)))


def compared_link(left: ast.AST, op: ast.cmpop, right: ast.AST, ops: tuple[type, ...]) -> set[str]:
    """The side of one link `left <op> right` of a comparison tested against None."""
    if not isinstance(op, ops):
        return set()
    if is_none(right):
        return keys_of(left)
    return keys_of(right) if is_none(left) else set()


def drop_keys_under(keys: set, rebound: Iterable[str]) -> None:
    """After `x = ...` nothing known about `x` or `x.attr...` holds any more, nor about
    `bs[x].attr`: the index names another element now (`i += 1`, `(i := i + 1)`,
    `self.idx += 1` for `self.batches[self.idx]`)."""
    if type(keys) is Facts:  # indexed by the name a key starts with: no scan of the rest
        for root in rebound:
            keys.drop_under(root)
        return
    for root in rebound:
        keys.difference_update([k for k in keys if is_under(k, root) or (
            type(k) is str and "[" in k and indexes_with(k, root))])


def indexes_any(keys: Iterable, rebound: Iterable[str]) -> bool:
    """Whether some key of `keys` is reached through an index that names one of
    `rebound` (`bs[i].seq_lens_cpu` for `i`): rebinding it drops that key."""
    if type(keys) is Facts:
        keys = keys.bracketed
    indexed = [k for k in keys if type(k) is str and "[" in k]
    return bool(indexed) and any(indexes_with(k, root) for k in indexed for root in rebound)


def guard_keys(facts: Iterable) -> set[str]:
    """The expression keys of a set of facts, without its path facts."""
    return {k for k in facts if type(k) is str}


# Methods and functions that always return a value (never None).
_VALUE_METHODS = frozenset({
    "clone", "cpu", "to", "cuda", "contiguous", "sum", "max", "min", "tolist", "item", "cumsum",
    "long", "int", "float", "index_select", "flatten", "view", "reshape", "detach", "numpy", "copy",
    "tensor", "zeros", "ones", "empty", "arange", "cat", "stack", "full", "zeros_like", "empty_like",
    "split", "strip", "join", "format", "encode", "decode", "keys", "values", "items",
})


_VALUE_BUILTINS = frozenset({"int", "float", "len", "sum", "list", "tuple", "sorted", "max", "min", "str",
                             "dict", "set", "bool", "abs", "round", "range"})


def is_never_none(node: ast.AST) -> bool:
    """Whether an expression certainly evaluates to something other than None."""
    if isinstance(node, ast.Constant):
        return node.value is not None
    if isinstance(node, (ast.BinOp, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.DictComp,
                         ast.SetComp, ast.GeneratorExp, ast.JoinedStr, ast.Compare, ast.UnaryOp)):
        return True
    if isinstance(node, ast.Subscript):
        # Indexing either raises or yields an element: `b.seq_lens_cpu = pinned[idx]`
        # leaves a tensor. (A container of None mirrors is no pattern engines use.)
        return True
    if isinstance(node, ast.Call):
        func = node.func
        if any(k.arg == "default" for k in node.keywords):
            return False  # `max(xs, default=None)`, `next(it, None)`-like: the default may be None
        if isinstance(func, ast.Name):
            return func.id in _VALUE_BUILTINS
        if isinstance(func, ast.Attribute):
            return func.attr in _VALUE_METHODS
    return False


def block_always_exits(body: list[ast.stmt]) -> bool:
    """True when control never falls out of the end of `body`."""
    for stmt in body:
        if isinstance(stmt, EXIT_STATEMENTS):
            return True
        if isinstance(stmt, ast.If) and stmt.orelse and block_always_exits(stmt.body) \
                and block_always_exits(stmt.orelse):
            return True
    return False


def mentioned_keys(node: ast.AST) -> set[str]:
    return {k for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute))
            for k in (expression_key(n),) if k is not None}


def bound_keys_of_target(target: ast.AST) -> set[str]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(bound_keys_of_target(e) for e in target.elts))
    if isinstance(target, ast.Starred):
        return bound_keys_of_target(target.value)
    return keys_of(target) if isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)) else set()


def own_nodes(body: list[ast.stmt], loops: bool = True) -> Iterable[ast.AST]:
    """Nodes of `body`, not descending into nested functions and classes (their own
    scopes), nor into nested loops unless `loops` (a `break` there is theirs)."""
    stop = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    if not loops:
        stop += (ast.For, ast.AsyncFor, ast.While)
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, stop))


def catches_none_errors(handler: ast.ExceptHandler) -> bool:
    caught = handler.type
    if caught is None:
        return False
    names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    return any((n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else "")
               in _NONE_ERRORS for n in names)


def bound_keys(body: list[ast.stmt]) -> set[str]:
    """Names and attributes a block (re)binds anywhere in its statements: assignments,
    loop and `with` targets, `except ... as`, imports, `del`. Statements only (walking
    every expression for a walrus cost a third of lint's time on SGLang)."""
    keys: set[str] = set()
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Assign):
            for target in node.targets:
                keys |= bound_keys_of_target(target)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            keys |= bound_keys_of_target(node.target)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            keys |= bound_keys_of_target(node.target)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    keys |= bound_keys_of_target(item.optional_vars)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                keys |= bound_keys_of_target(target)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            keys |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            keys.add(node.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            keys.add(node.name)
            continue  # their bodies are their own scopes
        elif isinstance(node, ast.match_case):
            for part in ast.walk(node.pattern):  # `case [b]:`, `case {**rest}:`, `case X() as b:`
                name = getattr(part, "name", None) if isinstance(part, (ast.MatchAs, ast.MatchStar)) \
                    else getattr(part, "rest", None) if isinstance(part, ast.MatchMapping) else None
                if name:
                    keys.add(name)
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            stack.extend(getattr(node, field, ()))
    return keys


def mentions_any(value: ast.AST, keys: set[str]) -> bool:
    """Whether `value` reads one of `keys` (`X = f(X)`); only names that could start one
    of them are turned into keys."""
    roots = {key_root(k) for k in keys}
    for node in ast.walk(value):
        if isinstance(node, ast.Name):
            if node.id in roots and node.id in keys:
                return True
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            root = node.value
            while isinstance(root, (ast.Attribute, ast.Subscript)):  # `xs[0].seq_lens_cpu` starts at `xs`
                root = root.value
            if isinstance(root, ast.Name) and root.id in roots and expression_key(node) in keys:
                return True
    return False
