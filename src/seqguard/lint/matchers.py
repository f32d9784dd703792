"""Finders shared by lint and codemod: where a host mirror is read, and whether a
`None` guard covers the read. No reporting and no file I/O here, so the codemod
rewrites exactly the sites lint reports.

Works on `ast` (about ten times faster to build than a concrete syntax tree); the
codemod maps the positions found here onto its libcst tree.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import re
from typing import Iterable, Mapping, Optional

from seqguard.lint.model import (
    CONDITIONAL, GUARD, INHERIT, PASS, READ, TRUTHINESS,
    ClassFacts, FlagDecl, HostPull, Import, MirrorAccess,
)

FLAG = "needs_cpu_seq_lens"
HOST_PULL_METHODS = frozenset({"cpu", "item", "tolist", "numpy"})
# Calls that consume their argument: handing them `None` raises or computes garbage.
CONSUMING_BUILTINS = frozenset({
    "int", "float", "len", "sum", "max", "min", "list", "tuple", "sorted", "range", "iter",
    "enumerate", "zip", "abs", "round", "any", "all", "set", "reversed", "map", "filter",
    "divmod", "pow", "next", "dict", "frozenset", "complex",
})
CONSUMING_MODULES = frozenset({"torch", "np", "numpy", "math", "F", "operator", "itertools"})
CONSUMING_METHODS = frozenset({"copy_", "extend", "add_", "sub_", "mul_", "div_", "index_select",
                               "append", "__getitem__"})
EXIT_STATEMENTS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_COMPOUND = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Try, ast.Match)
_UNREACHABLE: set[str] = set()  # identity marks "no path falls through"
# Handlers that name what a read of None raises: the author expected None there. A broad
# `except Exception:` also catches it, but silently skips work, so it guards nothing.
_NONE_ERRORS = frozenset({"AttributeError", "TypeError"})


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
            and (len(node.args) == 2 or _is_none(node.args[2]))):
        return node.args[0], node.args[1].value
    return None


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


# name -> what a local boolean's test tells (`gpu_only = b.seq_lens_cpu is None`): the keys
# non-None where it is true, and where it is false. Testing the name narrows like testing
# the expression, as Pyright's aliased conditions do. Stored computed, so a chain of
# booleans built from one another costs one step each, and `ok = ok and ...` cannot loop.
Conditions = Mapping[str, tuple[frozenset, frozenset]]
_NO_CONDITIONS: Conditions = {}


def nonnull_when_true(test: ast.AST, conditions: Conditions = _NO_CONDITIONS) -> set[str]:
    """Expressions that cannot be None where `test` holds."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, (ast.IsNot, ast.NotEq)):
            if _is_none(right):
                return _keys(left)
            if _is_none(left):
                return _keys(right)
        return set()
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return set().union(*(nonnull_when_true(v, conditions) for v in test.values))
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return nonnull_when_false(test.operand, conditions)
    if (isinstance(test, ast.Call) and isinstance(test.func, ast.Name)
            and test.func.id == "isinstance" and len(test.args) == 2):
        return _keys(test.args[0])
    if isinstance(test, ast.Name) and test.id in conditions:
        return {test.id} | conditions[test.id][0]
    if isinstance(test, (ast.Name, ast.Attribute)) or getattr_target(test) is not None:
        return _keys(test)  # truthy implies not None
    if isinstance(test, ast.NamedExpr):
        return _keys(test.target) | nonnull_when_true(test.value, conditions)
    return set()


def nonnull_when_false(test: ast.AST, conditions: Conditions = _NO_CONDITIONS) -> set[str]:
    """Expressions that cannot be None where `test` fails."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, (ast.Is, ast.Eq)):
            if _is_none(right):
                return _keys(left)
            if _is_none(left):
                return _keys(right)
        return set()
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return set().union(*(nonnull_when_false(v, conditions) for v in test.values))
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return nonnull_when_true(test.operand, conditions)
    if isinstance(test, ast.Name) and test.id in conditions:
        return set(conditions[test.id][1])
    if isinstance(test, ast.NamedExpr):
        return nonnull_when_false(test.value, conditions)
    return set()


def _keys(node: ast.AST) -> set[str]:
    if isinstance(node, ast.NamedExpr):  # `(lens := b.seq_lens_cpu) is not None`
        return _keys(node.target) | _keys(node.value)
    key = expression_key(node)
    return {key} if key is not None else set()


def _key_root(key: str) -> str:
    """The name an expression key starts with: `b` for `b.seq_lens_cpu`, `xs` for `xs[0].x`."""
    return key.split(".", 1)[0].split("[", 1)[0]


def _is_under(key: str, rebound: str) -> bool:
    """Whether `key` is `rebound` or reached through it (`b.x`, `b[0]` under `b`)."""
    return key == rebound or key.startswith((rebound + ".", rebound + "["))


def _drop_keys_under(keys: set[str], rebound: Iterable[str]) -> None:
    """After `x = ...` nothing known about `x` or `x.attr...` holds any more."""
    for root in rebound:
        keys.difference_update([k for k in keys if _is_under(k, root)])


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


def is_consuming_call(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in CONSUMING_BUILTINS
    if isinstance(func, ast.Attribute):
        root = func
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in CONSUMING_MODULES:
            return True
        return func.attr in CONSUMING_METHODS
    return False


class _Scope:
    """Per-function state: aliases of mirrors and names derived from device lengths."""

    def __init__(self, name: str, class_qualname: Optional[str], self_name: Optional[str],
                 method_name: Optional[str]) -> None:
        self.name = name
        self.class_qualname = class_qualname
        self.self_name = self_name
        self.method_name = method_name
        self.aliases: dict[str, tuple[str, str]] = {}  # local -> (mirror key, mirror attr)
        self.device_names: set[str] = set()
        self.stale: set[str] = set()  # aliases whose object has been rebound since
        self.conditions: dict[str, tuple[frozenset, frozenset]] = {}  # see Conditions
        self.condition_keys: dict[str, set[str]] = {}  # local boolean -> what its test mentions
        self.condition_roots: dict[str, set[str]] = {}  # ... and the names those start with
        self.imports: dict[str, Import] = {}       # imports inside the function (classes defined there use them)

    def forget(self, rebound: Iterable[str]) -> None:
        """`rebound` names or attributes were assigned: tests held about them are stale."""
        rebound = list(rebound)
        roots = {_key_root(r) for r in rebound}
        stale = [name for name in self.conditions
                 if name in rebound or (self.condition_roots[name] & roots and any(
                     _is_under(k, r) for k in self.condition_keys[name] for r in rebound))]
        for name in stale:
            del self.conditions[name]


class _ClassBuilder:
    def __init__(self, node: ast.ClassDef, qualname: str) -> None:
        self.node = node
        self.qualname = qualname
        self.decls: list[FlagDecl] = []
        self.reads_mirror = False
        self.host_pulls: list[HostPull] = []
        self.local_imports: tuple[tuple[str, Import], ...] = ()

    def build(self) -> ClassFacts:
        node = self.node
        body = node.body
        first = body[0]
        insert_line: Optional[int]
        if first.lineno == node.lineno:
            insert_line = None
        elif isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                and isinstance(first.value.value, str):
            insert_line = first.end_lineno + 1
        else:
            insert_line = first.lineno
        return ClassFacts(
            qualname=self.qualname, name=node.name, line=node.lineno, col=node.col_offset,
            bases=tuple(_dotted(b) for b in node.bases),
            decls=tuple(self.decls), reads_mirror=self.reads_mirror,
            host_pulls=tuple(self.host_pulls), insert_line=insert_line,
            insert_indent=first.col_offset, local_imports=self.local_imports,
        )


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    if isinstance(node, ast.Subscript):  # Generic[T], Base[...]: the class is the value
        return _dotted(node.value)
    return ""


def _flag_value(node: Optional[ast.AST]) -> object:
    if isinstance(node, ast.Constant):  # `= 0`, `= None`: the aggregator tests truth
        return bool(node.value)
    return CONDITIONAL


class ModuleAnalysis:
    """One walk over a module: mirror accesses with their guard state, classes with
    their flag declarations and host pulls, and the import table."""

    def __init__(self, mirrors: Iterable[str], device_attribute: str, source: Optional[str] = None) -> None:
        self.mirrors = frozenset(mirrors)
        # Lines that can matter; a function whose lines mention none of these holds no
        # access, flag or host pull, so its body is not walked (most of a parsed file).
        self._relevant_lines: Optional[list[int]] = None
        if source is not None:
            words = (*self.mirrors, FLAG, device_attribute, "class ")
            pattern = re.compile("|".join(re.escape(w) for w in words))
            lines, line, last = [], 1, 0
            for match in pattern.finditer(source):
                line += source.count("\n", last, match.start())
                last = match.start()
                if not lines or lines[-1] != line:
                    lines.append(line)
            self._relevant_lines = lines
        self.device_attribute = device_attribute
        self.accesses: list[MirrorAccess] = []
        self.classes: list[ClassFacts] = []
        self.imports: dict[str, Import] = {}
        self.top_level_classes: list[str] = []
        self.top_level_functions: list[str] = []
        self.functions: list[tuple[str, int, int]] = []
        self.name_aliases: dict[str, str] = {}
        self._class_stack: list[_ClassBuilder] = []
        self._builders: dict[str, _ClassBuilder] = {}
        self._scope = _Scope("<module>", None, None, None)
        self._conditional_depth = 0
        self._tolerant = 0  # inside `try:` bodies whose handlers catch what a None read raises

    # ---- entry -------------------------------------------------------------------
    def run(self, tree: ast.Module) -> "ModuleAnalysis":
        self._collect_module_names(tree.body)
        self._block(tree.body, set())
        # built last: `Cls.needs_cpu_seq_lens = False` after the class still declares it
        self.classes = [builder.build() for builder in self._builders.values()]
        return self

    def _collect_module_names(self, body: list[ast.stmt], fallback: bool = False) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                self.top_level_classes.append(stmt.name)
                self.functions.extend((f"{stmt.name}.{m.name}", _first_line(m), m.end_lineno or m.lineno)
                                      for m in stmt.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)))
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.top_level_functions.append(stmt.name)
                self.functions.append((stmt.name, _first_line(stmt), stmt.end_lineno or stmt.lineno))
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                _record_imports(stmt, self.imports, overwrite=not fallback)
            elif (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                  and isinstance(stmt.value, (ast.Name, ast.Attribute)) and _dotted(stmt.value)):
                self.name_aliases.setdefault(stmt.targets[0].id, _dotted(stmt.value))  # `Parent2 = Parent`
            elif isinstance(stmt, ast.Try):
                # `try: from a import X` / `except ImportError: from b import X`: the first wins
                for block in (stmt.body, stmt.orelse, stmt.finalbody):
                    self._collect_module_names(block, fallback)
                for handler in stmt.handlers:
                    self._collect_module_names(handler.body, True)
            elif isinstance(stmt, (ast.If, ast.With)):
                for block in _child_blocks(stmt):
                    self._collect_module_names(block, fallback)

    # ---- statements ------------------------------------------------------------
    def _true(self, test: ast.AST) -> set[str]:
        return nonnull_when_true(test, self._scope.conditions)

    def _false(self, test: ast.AST) -> set[str]:
        return nonnull_when_false(test, self._scope.conditions)

    def _block(self, body: list[ast.stmt], inherited: set[str]) -> Optional[set[str]]:
        """Walk `body`; the keys known non-None where control falls out of its end, or
        None when it never does (every path returns, raises, breaks or continues)."""
        nonnull = set(inherited)
        for stmt in body:
            after = self._stmt(stmt, nonnull)
            if after is _UNREACHABLE or isinstance(stmt, EXIT_STATEMENTS):
                return None
            if after is not None:
                nonnull = after
            elif isinstance(stmt, ast.Assert):
                nonnull |= self._true(stmt.test)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                self._assigned(targets, stmt.value, nonnull)
            elif isinstance(stmt, (ast.AugAssign, ast.Delete, ast.Import, ast.ImportFrom)) \
                    and (nonnull or self._scope.conditions):
                rebound = _bound_keys([stmt])
                _drop_keys_under(nonnull, rebound)
                self._scope.forget(rebound)
        return nonnull

    def _assigned(self, targets: list[ast.expr], value: ast.expr, nonnull: set[str]) -> None:
        """What `targets = value` does to the None-ness known so far, and to the tests
        that local booleans hold."""
        condition = None
        if len(targets) == 1 and isinstance(targets[0], ast.Name):
            # computed before the name is forgotten: `ok = ok and x is not None` builds on the old `ok`
            when_true, when_false = self._true(value) - {targets[0].id}, self._false(value)
            # only a test that says something about a mirror is worth keeping (each kept
            # one makes the rest of the function walked)
            if any(k.rsplit(".", 1)[-1] in self.mirrors or k in self._scope.aliases
                   for k in when_true | when_false):
                condition = (frozenset(when_true), frozenset(when_false))
        known = is_never_none(value)
        if not known and nonnull:  # keys are only worth building when something is guarded
            indexed = value.value if isinstance(value, ast.Subscript) else None
            known = (expression_key(value) in nonnull
                     or (indexed is not None and expression_key(indexed) in nonnull))
        for target in targets:
            if not (nonnull or known or self._scope.conditions):
                break  # nothing known that this could change (most assignments)
            target_keys = _keys(target) if isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)) \
                else _bound_keys_of_target(target)
            if self._scope.conditions:
                self._scope.forget(target_keys)
            if not (known or any(_is_under(k, t) for k in nonnull for t in target_keys)):
                continue
            if _mentions_any(value, target_keys):
                # `X = f(X)`: non-None afterwards only if X was before; otherwise a
                # guard that skips this statement would leave X None for what follows.
                if not target_keys <= nonnull:
                    _drop_keys_under(nonnull, target_keys)
                else:
                    _drop_keys_under(nonnull, {k + "." for k in target_keys})
            elif known and isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)):
                _drop_keys_under(nonnull, target_keys)
                nonnull |= target_keys
            else:
                _drop_keys_under(nonnull, target_keys)
        if condition is not None:
            name = targets[0].id
            self._scope.conditions[name] = condition
            self._scope.condition_keys[name] = keys = _mentioned_keys(value)
            self._scope.condition_roots[name] = {_key_root(k) for k in keys}

    def _stmt(self, stmt: ast.stmt, nonnull: set[str]) -> Optional[set[str]]:
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.Try, ast.Match, ast.With, ast.AsyncWith)) \
                or type(stmt).__name__ == "TryStar":
            # a body that may not run (or may stop anywhere) keeps the aliases it found
            before = dict(self._scope.aliases)
            after = self._walk_stmt(stmt, nonnull)
            self._scope.aliases = {**self._scope.aliases, **{k: v for k, v in before.items()
                                                             if k not in self._scope.aliases}}
            return after
        return self._walk_stmt(stmt, nonnull)

    def _walk_stmt(self, stmt: ast.stmt, nonnull: set[str]) -> Optional[set[str]]:
        """Walk one statement. A compound statement returns the keys non-None after it
        (the join of its branches; _UNREACHABLE when none falls through); a simple one
        returns None and `_block` applies its effect."""
        compound = isinstance(stmt, _COMPOUND)
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) and self._scope.name != "<module>":
            _record_imports(stmt, self._scope.imports)
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and not (self._scope.aliases or self._scope.device_names or self._scope.conditions) \
                and not self._is_relevant(stmt.lineno, stmt.end_lineno or stmt.lineno):
            # No mirror, flag or device-length name here, and no local alias of one in
            # scope (a read through an alias names neither): nothing here can matter,
            # except what it rebinds.
            if compound and (nonnull or self._scope.conditions):
                return self._without_rebound(stmt, nonnull)
            return None
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._function(stmt, nonnull)
        elif isinstance(stmt, ast.ClassDef):
            self._class(stmt)
        elif isinstance(stmt, ast.If):
            self._expr(stmt.test, nonnull, [stmt])
            self._conditional_depth += 1
            before = dict(self._scope.aliases)
            body_end = self._block(stmt.body, nonnull | self._true(stmt.test))
            after_body, self._scope.aliases = self._scope.aliases, dict(before)
            ends = [body_end, self._block(stmt.orelse, nonnull | self._false(stmt.test))]
            # a name is a mirror's alias after the `if` if it is one on either path
            self._scope.aliases = {**after_body, **self._scope.aliases}
            self._conditional_depth -= 1
            ends = [e for e in ends if e is not None]
            return set.intersection(*ends) if ends else _UNREACHABLE
        elif isinstance(stmt, ast.While):
            self._expr(stmt.test, nonnull, [stmt])
            self._conditional_depth += 1
            self._block(stmt.body, self._without_rebound(stmt, nonnull) | self._true(stmt.test))
            self._block(stmt.orelse, nonnull | self._false(stmt.test))
            self._conditional_depth -= 1
            after = self._without_rebound(stmt, nonnull)
            # `while b.seq_lens_cpu is None: b = nxt(b)`: without a break, the loop ends
            # only when its test fails.
            if not any(isinstance(n, ast.Break) for n in _own_nodes(stmt.body, loops=False)):
                after |= self._false(stmt.test)
            return after
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._expr(stmt.iter, nonnull, [stmt])
            self._bind(stmt.target, None)
            inside = self._without_rebound(stmt, nonnull)
            self._conditional_depth += 1
            self._block(stmt.body, inside)
            self._block(stmt.orelse, inside)
            self._conditional_depth -= 1
            return inside
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self._expr(item.context_expr, nonnull, [stmt])
            inside = set(nonnull)
            for item in stmt.items:
                if item.optional_vars is not None:
                    _drop_keys_under(inside, _bound_keys_of_target(item.optional_vars))
            end = self._block(stmt.body, inside)
            # a context manager may swallow what the body raised: its end is not certain
            return end if end is not None and not self._scope.conditions else self._without_rebound(stmt, nonnull)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            tolerant = any(_catches_none_errors(h) for h in stmt.handlers)
            inside = self._without_rebound(stmt, nonnull)
            self._conditional_depth += 1
            self._tolerant += tolerant
            self._block(stmt.body, set(nonnull))
            self._tolerant -= tolerant
            for handler in stmt.handlers:
                self._block(handler.body, set(inside))
            self._block(stmt.orelse, set(inside))
            self._block(stmt.finalbody, set(inside))
            self._conditional_depth -= 1
            return inside
        elif isinstance(stmt, ast.Match):
            self._expr(stmt.subject, nonnull, [stmt])
            inside = self._without_rebound(stmt, nonnull)
            self._conditional_depth += 1
            for case in stmt.cases:
                narrowed = set(inside)
                if case.guard is not None:
                    self._expr(case.guard, narrowed, [case])
                    narrowed |= self._true(case.guard)
                self._block(case.body, narrowed)
            self._conditional_depth -= 1
            return inside
        elif isinstance(stmt, ast.Assign):
            self._assign(stmt, stmt.targets, stmt.value, nonnull)
        elif isinstance(stmt, ast.AnnAssign):
            self._assign(stmt, [stmt.target], stmt.value, nonnull)
        elif isinstance(stmt, ast.AugAssign):
            self._aug_assign(stmt, nonnull)
        else:
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self._expr(child, nonnull, [stmt])
        return None

    def _without_rebound(self, stmt: ast.stmt, nonnull: set[str]) -> set[str]:
        """`nonnull` less what `stmt` may rebind somewhere inside it."""
        if not (nonnull or self._scope.conditions):
            return set()
        rebound = _bound_keys([stmt])
        self._scope.forget(rebound)
        kept = set(nonnull)
        _drop_keys_under(kept, rebound)
        return kept

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, nonnull: Optional[set[str]] = None) -> None:
        for decorator in node.decorator_list:
            self._expr(decorator, set(), [node])
        # defaults are evaluated where the function is defined
        for default in (*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)):
            self._expr(default, set(nonnull or ()), [node.args])
        owner = self._class_stack[-1] if self._class_stack else None
        is_method = owner is not None and self._scope.class_qualname == owner.qualname \
            and self._scope.method_name is None
        if is_method and node.name == FLAG:
            if any(_decorator_name(d) in ("property", "cached_property") for d in node.decorator_list):
                owner.decls.append(FlagDecl("property", _property_value(node), node.lineno))
            else:
                # `getattr(backend, "needs_cpu_seq_lens")` is then a bound method: truthy
                owner.decls.append(FlagDecl("function", True, node.lineno, node.col_offset))
        args = node.args.posonlyargs + node.args.args
        self_name = args[0].arg if is_method and args else self._scope.self_name
        outer = self._scope
        self._scope = _Scope(
            name=node.name if outer.name == "<module>" else f"{outer.name}.{node.name}",
            class_qualname=outer.class_qualname,
            self_name=self_name,
            method_name=node.name if is_method else outer.method_name,
        )
        self._scope.imports = dict(outer.imports)  # a closure sees the names of the function it is in
        depth, self._conditional_depth = self._conditional_depth, 0
        if self._is_relevant(node.lineno, node.end_lineno or node.lineno):
            # A closure defined after `if x is None: return` runs where x is not None
            # (unless x is rebound later: Pyright's rule for captured narrowing, relaxed).
            closure = nonnull is not None and outer.name != "<module>" and not is_method
            self._block(node.body, set(nonnull) if closure else set())
        self._conditional_depth = depth
        self._scope = outer

    def _is_relevant(self, first: int, last: int) -> bool:
        if self._relevant_lines is None:
            return True
        i = bisect.bisect_left(self._relevant_lines, first)
        return i < len(self._relevant_lines) and self._relevant_lines[i] <= last

    def _class(self, node: ast.ClassDef) -> None:
        for expr in [*node.bases, *node.decorator_list, *(k.value for k in node.keywords)]:
            self._expr(expr, set(), [node])
        outer = self._scope
        in_function = outer.name != "<module>" and outer.class_qualname != outer.name
        qualname = node.name if outer.name == "<module>" else (
            f"{outer.name}.<locals>.{node.name}" if in_function else f"{outer.name}.{node.name}")
        builder = _ClassBuilder(node, qualname)
        builder.local_imports = tuple(outer.imports.items())
        self._class_stack.append(builder)
        self._scope = _Scope(qualname, qualname, None, None)
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == FLAG:
                builder.decls.append(FlagDecl("annotation", INHERIT, stmt.lineno) if stmt.value is None
                                     else FlagDecl("class", _flag_value(stmt.value), stmt.lineno))
            elif isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    for name, value in _paired(target, stmt.value):
                        if isinstance(name, ast.Name) and name.id == FLAG:
                            builder.decls.append(FlagDecl("class", _flag_value(value), stmt.lineno))
        self._block(node.body, set())
        self._scope = outer
        self._class_stack.pop()
        self._builders[qualname] = builder

    def _assign(self, stmt: ast.stmt, targets: list[ast.expr], value: Optional[ast.expr],
                nonnull: set[str]) -> None:
        if value is not None:
            self._expr(value, nonnull, [stmt])
        for target in targets:
            self._flag_assignment(target, value)
            if not isinstance(target, ast.Name):
                self._expr(target, nonnull, [stmt])
            self._bind(target, value, nonnull)

    def _flag_assignment(self, target: ast.expr, value: Optional[ast.expr]) -> None:
        scope = self._scope
        if isinstance(target, (ast.Tuple, ast.List)):
            for element, element_value in _paired(target, value):
                self._flag_assignment(element, element_value)
            return
        if (isinstance(target, ast.Attribute) and target.attr == FLAG and isinstance(target.value, ast.Name)
                and scope.name == "<module>" and target.value.id in self._builders):
            # `Backend.needs_cpu_seq_lens = False` after the class body
            flag = CONDITIONAL if self._conditional_depth else _flag_value(value)
            self._builders[target.value.id].decls.append(FlagDecl("class", flag, target.lineno))
            return
        self._self_flag(target.value.id if isinstance(target, ast.Attribute) and target.attr == FLAG
                        and isinstance(target.value, ast.Name) else None, value, target.lineno)

    def _self_flag(self, receiver: Optional[str], value: Optional[ast.expr], line: int) -> None:
        """`self.needs_cpu_seq_lens = value` (or `setattr(self, "needs_cpu_seq_lens", value)`)
        in a method of the class being walked."""
        scope = self._scope
        if (receiver is not None and scope.self_name is not None and receiver == scope.self_name
                and scope.method_name is not None and self._class_stack):
            kind = "init" if scope.method_name == "__init__" else "method"
            flag = CONDITIONAL if self._conditional_depth else _flag_value(value)
            self._class_stack[-1].decls.append(FlagDecl(kind, flag, line))

    def _setattr_flag(self, call: ast.Call) -> None:
        if (isinstance(call.func, ast.Name) and call.func.id == "setattr" and len(call.args) == 3
                and isinstance(call.args[1], ast.Constant) and call.args[1].value == FLAG):
            receiver = call.args[0]
            if isinstance(receiver, ast.Name) and self._scope.name == "<module>" and receiver.id in self._builders:
                self._builders[receiver.id].decls.append(FlagDecl("class", _flag_value(call.args[2]), call.lineno))
            elif isinstance(receiver, ast.Name):
                self._self_flag(receiver.id, call.args[2], call.lineno)

    def _bind(self, target: ast.expr, value: Optional[ast.expr], nonnull: Optional[set[str]] = None) -> None:
        """Track `name = mirror` aliases and names holding device lengths."""
        scope = self._scope
        if not isinstance(target, ast.Name):
            if isinstance(target, (ast.Tuple, ast.List)):
                for element in target.elts:
                    self._bind(element, None)
            return
        previous = scope.aliases.pop(target.id, None)
        scope.stale.discard(target.id)
        for alias, (key, _) in scope.aliases.items():
            if _key_root(key) == target.id:
                scope.stale.add(alias)  # the object the alias came from is another one now
        scope.device_names.discard(target.id)
        if value is None:
            return
        if nonnull is None:
            nonnull = set()
        mirror = self._mirror_of(value)
        if mirror is None and previous is not None and _receiver_root(value) == target.id:
            # `lens = lens[idx]`: still the mirror's data (or None, where a guard skipped
            # the statement), so reads after it are reads of the mirror
            scope.aliases[target.id] = previous
        elif mirror is not None:
            scope.aliases[target.id] = mirror
            if _key_root(mirror[0]) == target.id:
                scope.stale.add(target.id)  # `x = x.seq_lens_cpu`: the alias replaced its object
            if mirror[0] in nonnull:
                nonnull.add(target.id)  # bound under a guard: the alias is safe there too
            else:
                nonnull.discard(target.id)  # whatever the name held before, it may be None now
        elif self._mentions_device_lengths(value):
            scope.device_names.add(target.id)

    def _aug_assign(self, stmt: ast.AugAssign, nonnull: set[str]) -> None:
        self._expr(stmt.value, nonnull, [stmt])
        target = stmt.target
        mirror = self._mirror_of(target, store_ok=True)
        if mirror is not None:
            self._record(target, mirror, READ, nonnull)
        elif not isinstance(target, ast.Name):
            self._expr(target, nonnull, [stmt])

    # ---- expressions -------------------------------------------------------------
    def _mirror_of(self, node: ast.AST, store_ok: bool = False) -> Optional[tuple[str, str]]:
        """(key, attr) when `node` evaluates to a mirror: `x.seq_lens_cpu`,
        `getattr(x, "seq_lens_cpu"[, None])` or an alias."""
        if isinstance(node, ast.Attribute) and node.attr in self.mirrors \
                and (store_ok or isinstance(node.ctx, ast.Load)):
            key = expression_key(node)
            return (key, node.attr) if key is not None else None
        if isinstance(node, ast.Call) and self.mirrors:
            target = getattr_target(node)
            if target is not None and target[1] in self.mirrors:
                key = expression_key(node)
                return (key, target[1]) if key is not None else None
        if isinstance(node, ast.Name) and (store_ok or isinstance(node.ctx, ast.Load)):
            return self._scope.aliases.get(node.id)
        return None

    def _expr(self, node: ast.AST, nonnull: set[str], chain: list[ast.AST]) -> None:
        mirror = self._mirror_of(node)
        if mirror is not None:
            usage = self._usage(node, chain)
            if usage is not None:
                passed = self._passed_to(node, chain) if usage == PASS else None
                self._record(node, mirror, usage, nonnull, passed)
            if isinstance(node, ast.Name):
                return
        if isinstance(node, ast.Call):
            self._host_pull(node)
            self._setattr_flag(node)
        if isinstance(node, ast.BoolOp):
            chain.append(node)
            narrowed = set(nonnull)
            for value in node.values:
                self._expr(value, narrowed, chain)
                narrowed |= (self._true(value) if isinstance(node.op, ast.And)
                             else self._false(value))
            chain.pop()
            return
        if isinstance(node, ast.IfExp):
            chain.append(node)
            self._expr(node.test, nonnull, chain)
            self._expr(node.body, nonnull | self._true(node.test), chain)
            self._expr(node.orelse, nonnull | self._false(node.test), chain)
            chain.pop()
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            chain.append(node)
            narrowed = set(nonnull)
            for generator in node.generators:
                chain.append(generator)
                self._expr(generator.iter, narrowed, chain)
                chain.pop()
                for condition in generator.ifs:
                    self._expr(condition, narrowed, chain)
                    narrowed |= self._true(condition)
            for element in ((node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,)):
                self._expr(element, narrowed, chain)
            chain.pop()
            return
        if isinstance(node, ast.Lambda):
            # runs later; like a closure it keeps the guards around its definition
            for default in (*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)):
                self._expr(default, nonnull, [node.args])
            chain.append(node)
            self._expr(node.body, set(nonnull), chain)
            chain.pop()
            return
        if isinstance(node, ast.NamedExpr):
            # `(lens := b.seq_lens_cpu).max()`: the value is used as the walrus is, and bound
            mirror = self._mirror_of(node.value)
            if mirror is not None:
                usage = self._usage(node, chain)
                if usage is not None:
                    self._record(node.value, mirror, usage, nonnull)
                self._bind(node.target, node.value, nonnull)
                return
            self._bind(node.target, node.value, nonnull)
        chain.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.expr, ast.keyword, ast.comprehension, ast.arguments)):
                self._expr(child, nonnull, chain)
        chain.pop()

    def _usage(self, node: ast.AST, chain: list[ast.AST]) -> Optional[str]:
        """How the mirror value `node` is used by its parent."""
        parent = chain[-1] if chain else None
        if isinstance(parent, ast.Attribute):
            return READ
        if isinstance(parent, ast.Subscript):
            return READ
        if isinstance(parent, (ast.BinOp,)):
            return READ
        if isinstance(parent, ast.UnaryOp):
            return TRUTHINESS if isinstance(parent.op, ast.Not) else READ
        if isinstance(parent, ast.Compare):
            others = [parent.left, *parent.comparators]
            if all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops) or \
                    any(_is_none(o) for o in others):
                return GUARD
            if all(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops) and node is parent.left:
                return PASS
            return READ
        if isinstance(parent, ast.Call):
            if node is parent.func:
                return READ
            if isinstance(parent.func, ast.Name) and parent.func.id == "bool":
                return TRUTHINESS
            return READ if is_consuming_call(parent) else PASS
        if isinstance(parent, ast.Starred):
            return READ  # `f(*lens)`, `[*lens]`: iterated
        if isinstance(parent, ast.YieldFrom):
            return READ
        if isinstance(parent, (ast.List, ast.Tuple, ast.Set)):
            for ancestor in reversed(chain[:-1]):
                if isinstance(ancestor, (ast.List, ast.Tuple, ast.Set, ast.Starred)):
                    continue
                if isinstance(ancestor, ast.Call) and is_consuming_call(ancestor):
                    return READ
                break
            return PASS
        if isinstance(parent, ast.comprehension):
            return READ if node is parent.iter else PASS
        if isinstance(parent, (ast.For, ast.AsyncFor)):
            return READ
        if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)) and node is parent.test:
            return TRUTHINESS
        if isinstance(parent, ast.BoolOp):
            return TRUTHINESS
        if isinstance(parent, (ast.ListComp, ast.GeneratorExp, ast.SetComp)) and len(chain) >= 2 \
                and isinstance(chain[-2], ast.comprehension):
            return TRUTHINESS  # a comprehension condition
        if isinstance(parent, ast.AugAssign):
            return READ  # `total += b.seq_lens_sum` is arithmetic
        if isinstance(parent, (ast.Assign, ast.AnnAssign)):
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            if node is parent.value and any(isinstance(t, (ast.Tuple, ast.List)) for t in targets):
                return READ  # `a, *rest = lens`: unpacking iterates
            if len(targets) == 1 and isinstance(targets[0], ast.Name) and node is parent.value:
                return None  # an alias binding: its reads are tracked instead
            return PASS
        return PASS

    def _passed_to(self, node: ast.AST, chain: list[ast.AST]) -> Optional[tuple[str, object]]:
        """(callee, position or keyword) when `node` is an argument of a call whose callee
        is a plain name or attribute chain."""
        parent = chain[-1] if chain else None
        if isinstance(parent, ast.keyword) and parent.arg is not None and len(chain) >= 2 \
                and isinstance(chain[-2], ast.Call):
            call, slot = chain[-2], parent.arg
        elif isinstance(parent, ast.Call) and node is not parent.func and node in parent.args:
            call = parent
            position = parent.args.index(node)
            if any(isinstance(a, ast.Starred) for a in parent.args[:position + 1]):
                return None
            slot = position
        else:
            return None
        func = call.func
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) and not func.value.args
                and isinstance(func.value.func, ast.Name) and func.value.func.id == "super"):
            return f"<super>.{func.attr}", slot  # `super().method(x)`: the next class in the bases
        callee = _dotted(func)
        if not callee:
            return None
        head, dot, rest = callee.partition(".")
        if dot and head == self._scope.self_name:
            callee = f"<self>.{rest}"
        return callee, slot

    def _record(self, node: ast.AST, mirror: tuple[str, str], usage: str, nonnull: set[str],
                passed_to: Optional[tuple[str, object]] = None) -> None:
        key, attr = mirror
        subject = node.id if isinstance(node, ast.Name) else key
        guarded = subject in nonnull or key in nonnull or self._tolerant > 0
        scope = self._scope
        self.accesses.append(MirrorAccess(
            line=node.lineno, col=node.col_offset, end_line=node.end_lineno, end_col=node.end_col_offset,
            attr=attr, usage=usage, guarded=guarded, subject=subject,
            alias_of=key if isinstance(node, ast.Name) else None,
            scope=scope.name, class_qualname=scope.class_qualname, passed_to=passed_to,
            object_rebound=isinstance(node, ast.Name) and node.id in scope.stale,
        ))
        if self._class_stack and scope.class_qualname == self._class_stack[-1].qualname:
            self._class_stack[-1].reads_mirror = True

    # ---- device lengths pulled to the host ----------------------------------------
    def _mentions_device_lengths(self, node: ast.AST) -> bool:
        """Whether the tensor `node` evaluates to comes from device sequence lengths."""
        return any(self._is_device_name(name) for name in _data_roots(node))

    def _is_device_name(self, name: str) -> bool:
        if name in self.mirrors or name.endswith(("_cpu", "_cpu_list")):
            return False
        return self.device_attribute in name or name in self._scope.device_names

    def _host_pull(self, call: ast.Call) -> None:
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr in HOST_PULL_METHODS):
            return
        if func.attr == "cpu" and call.args:
            return
        if not self._class_stack or self._scope.class_qualname != self._class_stack[-1].qualname:
            return
        if self._mentions_device_lengths(func.value):
            receiver = ast.unparse(func.value)
            if len(receiver) > 60:
                receiver = receiver[:57] + "..."
            self._class_stack[-1].host_pulls.append(
                HostPull(call.lineno, call.col_offset, func.attr, receiver))


# Host-side metadata of a tensor: reading it never synchronises.
_METADATA_ATTRIBUTES = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "layout"})
_METADATA_METHODS = frozenset({"size", "numel", "dim", "stride", "element_size", "data_ptr"})


def _data_roots(node: ast.AST) -> list[str]:
    """Names of the tensors an expression's value is computed from, following
    receivers of methods, subscripts and arguments of module functions."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        if node.attr in _METADATA_ATTRIBUTES:
            return []
        return [node.attr, *_data_roots(node.value)] if isinstance(node.value, ast.Name) \
            else [node.attr] if "seq_lens" in node.attr else _data_roots(node.value)
    if isinstance(node, ast.Subscript):
        return _data_roots(node.value)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr in _METADATA_METHODS:
                return []
            if isinstance(func.value, ast.Name) and func.value.id in CONSUMING_MODULES:
                return [r for a in node.args for r in _data_roots(a)]
            return _data_roots(func.value)
        return [r for a in node.args for r in _data_roots(a)]
    if isinstance(node, ast.BinOp):
        return _data_roots(node.left) + _data_roots(node.right)
    return []


def _property_value(node: ast.FunctionDef | ast.AsyncFunctionDef) -> object:
    returns = [s for s in ast.walk(node) if isinstance(s, ast.Return)]
    values = {_flag_value(r.value) for r in returns}
    return values.pop() if len(values) == 1 else CONDITIONAL


def _child_blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    if isinstance(stmt, ast.If):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, ast.Try):
        return [stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody]
    if isinstance(stmt, ast.With):
        return [stmt.body]
    return []


def _mentioned_keys(node: ast.AST) -> set[str]:
    return {k for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute))
            for k in (expression_key(n),) if k is not None}


def _bound_keys_of_target(target: ast.AST) -> set[str]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_bound_keys_of_target(e) for e in target.elts))
    if isinstance(target, ast.Starred):
        return _bound_keys_of_target(target.value)
    return _keys(target) if isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)) else set()


def _own_nodes(body: list[ast.stmt], loops: bool = True) -> Iterable[ast.AST]:
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


def _catches_none_errors(handler: ast.ExceptHandler) -> bool:
    caught = handler.type
    if caught is None:
        return False
    names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    return any((n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else "")
               in _NONE_ERRORS for n in names)


def _bound_keys(body: list[ast.stmt]) -> set[str]:
    """Names and attributes a block (re)binds anywhere in its statements: assignments,
    loop and `with` targets, `except ... as`, imports, `del`. Statements only (walking
    every expression for a walrus cost a third of lint's time on SGLang)."""
    keys: set[str] = set()
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Assign):
            for target in node.targets:
                keys |= _bound_keys_of_target(target)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            keys |= _bound_keys_of_target(node.target)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            keys |= _bound_keys_of_target(node.target)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    keys |= _bound_keys_of_target(item.optional_vars)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                keys |= _bound_keys_of_target(target)
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


def _record_imports(stmt: ast.Import | ast.ImportFrom, imports: dict[str, Import], overwrite: bool = True) -> None:
    found = {}
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname:
                found[alias.asname] = Import(0, alias.name, None)
            else:
                first = alias.name.split(".")[0]
                found[first] = Import(0, first, None)
    else:
        for alias in stmt.names:
            # `from m import *` is kept under a key no identifier can take, so a name
            # defined nowhere else can be looked up in `m`.
            key = f"*{stmt.module or ''}#{stmt.level}" if alias.name == "*" else alias.asname or alias.name
            found[key] = Import(stmt.level, stmt.module or "", alias.name)
    for key, value in found.items():
        if overwrite or key not in imports:
            imports[key] = value


PARAMETER = "<parameter>"  # the `attr` of accesses to a tracked parameter


@dataclasses.dataclass(frozen=True)
class ParameterUse:
    """How a function uses one parameter: unguarded reads, and calls it is handed to."""
    reads: tuple[tuple[int, int], ...]              # (line, col) of unguarded reads
    passed: tuple[tuple[str, object, int], ...]     # (callee, slot, line) where passed on unguarded


def parameter_uses(function: ast.FunctionDef | ast.AsyncFunctionDef, class_qualname: Optional[str],
                   device_attribute: str) -> dict[str, ParameterUse]:
    """For each parameter of `function`: where it is read without a None guard, by the
    same definition of a read as for the mirrors, and where it is passed on."""
    analysis = ModuleAnalysis((), device_attribute)
    args = function.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    scope = _Scope(function.name, class_qualname, names[0] if class_qualname and names else None,
                   function.name if class_qualname else None)
    for name in names:
        scope.aliases[name] = (name, PARAMETER)
    analysis._scope = scope
    analysis._block(function.body, set())
    uses: dict[str, tuple[list, list]] = {}
    for access in analysis.accesses:
        if access.attr != PARAMETER or access.guarded or access.alias_of is None:
            continue
        reads, passed = uses.setdefault(access.alias_of, ([], []))
        if access.usage == READ:
            reads.append((access.line, access.col))
        elif access.usage == PASS and access.passed_to is not None:
            passed.append((*access.passed_to, access.line))
    return {name: ParameterUse(tuple(r), tuple(p)) for name, (r, p) in uses.items()}


def _receiver_root(node: ast.AST) -> Optional[str]:
    """`lens` for `lens[idx]`, `lens.clone()`, `lens[idx].to(d)`: the name whose data the
    value is."""
    while True:
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        elif isinstance(node, ast.Attribute) and node.attr not in ("shape", "dtype", "device"):
            node = node.value
        else:
            return node.id if isinstance(node, ast.Name) else None


def _paired(target: ast.AST, value: Optional[ast.AST]) -> Iterable[tuple[ast.AST, Optional[ast.AST]]]:
    """(target, value) pairs of an assignment, element-wise for `a, b = x, y`."""
    if isinstance(target, (ast.Tuple, ast.List)):
        values = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) \
            and not any(isinstance(e, ast.Starred) for e in target.elts) else [None] * len(target.elts)
        for element, element_value in zip(target.elts, values):
            yield from _paired(element, element_value)
    else:
        yield target, value


def _decorator_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _first_line(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def _mentions_any(value: ast.AST, keys: set[str]) -> bool:
    """Whether `value` reads one of `keys` (`X = f(X)`); only names that could start one
    of them are turned into keys."""
    roots = {_key_root(k) for k in keys}
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
