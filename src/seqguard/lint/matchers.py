"""Finders shared by lint and codemod: where a host mirror is read, and whether a
`None` guard covers the read. No reporting and no file I/O here, so the codemod
rewrites exactly the sites lint reports.

Works on `ast` (about ten times faster to build than a concrete syntax tree); the
codemod maps the positions found here onto its libcst tree.
"""

from __future__ import annotations

import ast
import bisect
import re
from typing import Iterable, Optional

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


def expression_key(node: ast.AST) -> Optional[str]:
    """A stable name for an expression, used to match a guard with a read."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = expression_key(node.value)
        return f"{base}.{node.attr}" if base is not None else None
    try:
        return ast.unparse(node)
    except Exception:  # pragma: no cover - unparse handles every parsed node
        return None


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def nonnull_when_true(test: ast.AST) -> set[str]:
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
        return set().union(*(nonnull_when_true(v) for v in test.values))
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return nonnull_when_false(test.operand)
    if (isinstance(test, ast.Call) and isinstance(test.func, ast.Name)
            and test.func.id == "isinstance" and len(test.args) == 2):
        return _keys(test.args[0])
    if isinstance(test, (ast.Name, ast.Attribute)):
        return _keys(test)  # truthy implies not None
    if isinstance(test, ast.NamedExpr):
        return _keys(test.target) | nonnull_when_true(test.value)
    return set()


def nonnull_when_false(test: ast.AST) -> set[str]:
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
        return set().union(*(nonnull_when_false(v) for v in test.values))
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return nonnull_when_true(test.operand)
    return set()


def _keys(node: ast.AST) -> set[str]:
    key = expression_key(node)
    return {key} if key is not None else set()


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


class _ClassBuilder:
    def __init__(self, node: ast.ClassDef, qualname: str) -> None:
        self.node = node
        self.qualname = qualname
        self.decls: list[FlagDecl] = []
        self.reads_mirror = False
        self.host_pulls: list[HostPull] = []

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
            insert_indent=first.col_offset,
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
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return node.value
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
        self._class_stack: list[_ClassBuilder] = []
        self._scope = _Scope("<module>", None, None, None)
        self._conditional_depth = 0

    # ---- entry -------------------------------------------------------------------
    def run(self, tree: ast.Module) -> "ModuleAnalysis":
        self._collect_module_names(tree.body)
        self._block(tree.body, set())
        return self

    def _collect_module_names(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                self.top_level_classes.append(stmt.name)
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        self.imports[alias.asname] = Import(0, alias.name, None)
                    else:
                        first = alias.name.split(".")[0]
                        self.imports[first] = Import(0, first, None)
            elif isinstance(stmt, ast.ImportFrom):
                for alias in stmt.names:
                    # `from m import *` is kept under a key no identifier can take, so a
                    # name defined nowhere else can be looked up in `m`.
                    key = f"*{stmt.module or ''}#{stmt.level}" if alias.name == "*" else alias.asname or alias.name
                    self.imports[key] = Import(stmt.level, stmt.module or "", alias.name)
            elif isinstance(stmt, (ast.If, ast.Try, ast.With)):
                for block in _child_blocks(stmt):
                    self._collect_module_names(block)

    # ---- statements ------------------------------------------------------------
    def _block(self, body: list[ast.stmt], inherited: set[str]) -> None:
        nonnull = set(inherited)
        for stmt in body:
            self._stmt(stmt, nonnull)
            if isinstance(stmt, ast.If):
                if block_always_exits(stmt.body) and not block_always_exits(stmt.orelse):
                    nonnull |= nonnull_when_false(stmt.test)
                elif stmt.orelse and block_always_exits(stmt.orelse):
                    nonnull |= nonnull_when_true(stmt.test)
            elif isinstance(stmt, ast.Assert):
                nonnull |= nonnull_when_true(stmt.test)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                known = is_never_none(stmt.value)
                if not known and nonnull:  # keys are only worth building when something is guarded
                    value_key = expression_key(stmt.value)
                    indexed = stmt.value.value if isinstance(stmt.value, ast.Subscript) else None
                    known = (value_key in nonnull
                             or (indexed is not None and expression_key(indexed) in nonnull))
                for target in targets:
                    target_keys = _keys(target)
                    if not (target_keys & nonnull or known):
                        continue
                    mentioned = {expression_key(n) for n in ast.walk(stmt.value)
                                 if isinstance(n, (ast.Name, ast.Attribute))}
                    if target_keys & mentioned:
                        # `X = f(X)`: non-None afterwards only if X was before; otherwise a
                        # guard that skips this statement would leave X None for what follows.
                        if not target_keys <= nonnull:
                            nonnull -= target_keys
                    elif known:
                        nonnull |= _keys(target)
                    else:
                        nonnull -= _keys(target)

    def _stmt(self, stmt: ast.stmt, nonnull: set[str]) -> None:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and not (self._scope.aliases or self._scope.device_names) \
                and not self._is_relevant(stmt.lineno, stmt.end_lineno or stmt.lineno):
            # No mirror, flag or device-length name here, and no local alias of one in
            # scope (a read through an alias names neither): nothing here can matter.
            return
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._function(stmt)
        elif isinstance(stmt, ast.ClassDef):
            self._class(stmt)
        elif isinstance(stmt, (ast.If, ast.While)):
            self._expr(stmt.test, nonnull, [stmt])
            self._conditional_depth += 1
            self._block(stmt.body, nonnull | nonnull_when_true(stmt.test))
            self._block(stmt.orelse, nonnull | nonnull_when_false(stmt.test))
            self._conditional_depth -= 1
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._expr(stmt.iter, nonnull, [stmt])
            self._bind(stmt.target, None)
            self._conditional_depth += 1
            self._block(stmt.body, nonnull)
            self._block(stmt.orelse, nonnull)
            self._conditional_depth -= 1
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self._expr(item.context_expr, nonnull, [stmt])
            self._block(stmt.body, nonnull)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            self._conditional_depth += 1
            self._block(stmt.body, nonnull)
            for handler in stmt.handlers:
                self._block(handler.body, nonnull)
            self._block(stmt.orelse, nonnull)
            self._block(stmt.finalbody, nonnull)
            self._conditional_depth -= 1
        elif isinstance(stmt, ast.Match):
            self._expr(stmt.subject, nonnull, [stmt])
            self._conditional_depth += 1
            for case in stmt.cases:
                self._block(case.body, nonnull)
            self._conditional_depth -= 1
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

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            self._expr(decorator, set(), [node])
        owner = self._class_stack[-1] if self._class_stack else None
        is_method = owner is not None and self._scope.class_qualname == owner.qualname \
            and self._scope.method_name is None
        if is_method and node.name == FLAG:
            owner.decls.append(FlagDecl("property", _property_value(node), node.lineno))
        args = node.args.posonlyargs + node.args.args
        self_name = args[0].arg if is_method and args else self._scope.self_name
        outer = self._scope
        self._scope = _Scope(
            name=node.name if outer.name == "<module>" else f"{outer.name}.{node.name}",
            class_qualname=outer.class_qualname,
            self_name=self_name,
            method_name=node.name if is_method else outer.method_name,
        )
        depth, self._conditional_depth = self._conditional_depth, 0
        if self._is_relevant(node.lineno, node.end_lineno or node.lineno):
            self._block(node.body, set())
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
        qualname = node.name if outer.name == "<module>" else f"{outer.name}.{node.name}"
        builder = _ClassBuilder(node, qualname)
        self._class_stack.append(builder)
        self._scope = _Scope(qualname, qualname, None, None)
        for stmt in node.body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if any(isinstance(t, ast.Name) and t.id == FLAG for t in targets):
                    if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
                        builder.decls.append(FlagDecl("annotation", INHERIT, stmt.lineno))
                    else:
                        builder.decls.append(FlagDecl("class", _flag_value(stmt.value), stmt.lineno))
        self._block(node.body, set())
        self._scope = outer
        self._class_stack.pop()
        self.classes.append(builder.build())

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
        if (isinstance(target, ast.Attribute) and target.attr == FLAG
                and isinstance(target.value, ast.Name) and scope.self_name is not None
                and target.value.id == scope.self_name and scope.method_name is not None
                and self._class_stack):
            kind = "init" if scope.method_name == "__init__" else "method"
            flag = CONDITIONAL if self._conditional_depth else _flag_value(value)
            self._class_stack[-1].decls.append(FlagDecl(kind, flag, target.lineno))

    def _bind(self, target: ast.expr, value: Optional[ast.expr], nonnull: Optional[set[str]] = None) -> None:
        """Track `name = mirror` aliases and names holding device lengths."""
        scope = self._scope
        if not isinstance(target, ast.Name):
            if isinstance(target, (ast.Tuple, ast.List)):
                for element in target.elts:
                    self._bind(element, None)
            return
        scope.aliases.pop(target.id, None)
        scope.device_names.discard(target.id)
        if value is None:
            return
        if nonnull is None:
            nonnull = set()
        mirror = self._mirror_of(value)
        if mirror is not None:
            scope.aliases[target.id] = mirror
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
        """(key, attr) when `node` evaluates to a mirror: `x.seq_lens_cpu` or an alias."""
        if isinstance(node, ast.Attribute) and node.attr in self.mirrors \
                and (store_ok or isinstance(node.ctx, ast.Load)):
            key = expression_key(node)
            return (key, node.attr) if key is not None else None
        if isinstance(node, ast.Name) and (store_ok or isinstance(node.ctx, ast.Load)):
            return self._scope.aliases.get(node.id)
        return None

    def _expr(self, node: ast.AST, nonnull: set[str], chain: list[ast.AST]) -> None:
        mirror = self._mirror_of(node)
        if mirror is not None:
            usage = self._usage(node, chain)
            if usage is not None:
                self._record(node, mirror, usage, nonnull)
            if isinstance(node, ast.Name):
                return
        if isinstance(node, ast.Call):
            self._host_pull(node)
        if isinstance(node, ast.BoolOp):
            chain.append(node)
            narrowed = set(nonnull)
            for value in node.values:
                self._expr(value, narrowed, chain)
                narrowed |= (nonnull_when_true(value) if isinstance(node.op, ast.And)
                             else nonnull_when_false(value))
            chain.pop()
            return
        if isinstance(node, ast.IfExp):
            chain.append(node)
            self._expr(node.test, nonnull, chain)
            self._expr(node.body, nonnull | nonnull_when_true(node.test), chain)
            self._expr(node.orelse, nonnull | nonnull_when_false(node.test), chain)
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
                    narrowed |= nonnull_when_true(condition)
            for element in ((node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,)):
                self._expr(element, narrowed, chain)
            chain.pop()
            return
        if isinstance(node, ast.Lambda):
            return  # runs later, in another context
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
        if isinstance(parent, (ast.List, ast.Tuple, ast.Set, ast.Starred)):
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
            if len(targets) == 1 and isinstance(targets[0], ast.Name) and node is parent.value:
                return None  # an alias binding: its reads are tracked instead
            return PASS
        return PASS

    def _record(self, node: ast.AST, mirror: tuple[str, str], usage: str, nonnull: set[str]) -> None:
        key, attr = mirror
        subject = node.id if isinstance(node, ast.Name) else key
        guarded = subject in nonnull or key in nonnull
        scope = self._scope
        self.accesses.append(MirrorAccess(
            line=node.lineno, col=node.col_offset, end_line=node.end_lineno, end_col=node.end_col_offset,
            attr=attr, usage=usage, guarded=guarded, subject=subject,
            alias_of=key if isinstance(node, ast.Name) else None,
            scope=scope.name, class_qualname=scope.class_qualname,
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
