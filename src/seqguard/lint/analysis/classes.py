"""Classes and module-level names: flag declarations in every form Python allows,
host pulls inside a class, the import table and what a module binds at top level
(the project index resolves bases and callees through these)."""

from __future__ import annotations

import ast
import dataclasses
from typing import Iterable, Optional

from seqguard.config import DEFAULT_FLAG
from seqguard.lint.analysis.names import dotted
from seqguard.lint.analysis.source import first_line
from seqguard.lint.analysis.terms import annotation_terms
from seqguard.lint.model import Binding, ClassFacts, DeclKind, FlagDecl, FlagState, FlagValue, HostPull, Import

# the default name: a project names its own with `flag-attribute`
FLAG = DEFAULT_FLAG


@dataclasses.dataclass
class ModuleNames:
    """What a module binds at its top level."""
    imports: dict[str, Import] = dataclasses.field(default_factory=dict)
    top_level_classes: list[str] = dataclasses.field(default_factory=list)
    top_level_functions: list[str] = dataclasses.field(default_factory=list)
    functions: list[tuple[str, int, int]] = dataclasses.field(default_factory=list)  # (qualname, first, last line)
    name_aliases: dict[str, str] = dataclasses.field(default_factory=dict)           # `Parent2 = Parent`
    tried_bindings: list[tuple[str, Binding]] = dataclasses.field(default_factory=list)  # see DeepFacts


def names_defined(body: list[ast.stmt]) -> ModuleNames:
    """What a module body defines and imports (classes, functions, imported names)."""
    names = ModuleNames()
    _collect_names(body, names, fallback=False, tried=False)
    return names


def _collect_names(body: list[ast.stmt], names: ModuleNames, fallback: bool, tried: bool) -> None:
    """`fallback`: inside an `except` handler (what runs only where the `try:` failed);
    `tried`: inside a `try:` or `if` statement (each binding there is recorded as a
    branch: `if TYPE_CHECKING: from engine import Base` / `else: Base = object`)."""
    for stmt in body:
        if isinstance(stmt, ast.ClassDef):
            names.functions.extend((f"{stmt.name}.{m.name}", first_line(m), m.end_lineno or m.lineno)
                                   for m in stmt.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)))
            if tried:
                names.tried_bindings.append((stmt.name, Binding()))
            if fallback and _is_bound(names, stmt.name):
                # `try: from engine import Base` / `except ImportError: class Base: ...`:
                # a stand-in, defined only where the import failed (the first binding
                # wins, as it does for imports)
                continue
            names.top_level_classes.append(stmt.name)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.top_level_functions.append(stmt.name)
            names.functions.append((stmt.name, first_line(stmt), stmt.end_lineno or stmt.lineno))
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            if tried:
                found: dict[str, Import] = {}
                record_imports(stmt, found)
                names.tried_bindings.extend((name, Binding(imported=i)) for name, i in found.items()
                                            if i.name != "*")
            record_imports(stmt, names.imports, overwrite=not fallback)
        elif (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
              and dotted(_first_choice(stmt.value))):
            # `Parent2 = Parent`, `Base = Real if flag else Stub` (the first choice: a
            # stub in an `except ImportError:` handler or an `else` is no other class)
            if tried:
                names.tried_bindings.append((stmt.targets[0].id, Binding(alias=dotted(_first_choice(stmt.value)))))
            if not fallback:
                names.name_aliases.setdefault(stmt.targets[0].id, dotted(_first_choice(stmt.value)))
        elif isinstance(stmt, ast.Try):
            # `try: from a import X` / `except ImportError: from b import X`: the first wins
            for block in (stmt.body, stmt.orelse, stmt.finalbody):
                _collect_names(block, names, fallback, True)
            for handler in stmt.handlers:
                _collect_names(handler.body, names, True, True)
        elif isinstance(stmt, ast.If):
            for block in _child_blocks(stmt):
                _collect_names(block, names, fallback, True)
        elif isinstance(stmt, ast.With):
            for block in _child_blocks(stmt):
                _collect_names(block, names, fallback, tried)


def _is_bound(names: ModuleNames, name: str) -> bool:
    return (name in names.imports or name in names.name_aliases or name in names.top_level_classes
            or name in names.top_level_functions)


class Declarations:
    """The classes met during a walk, with their flag declarations and host pulls.
    The walk reports what it sees (`enter`, `method`, `assignment`, `setattr_call`);
    `facts` is read last, so `Cls.needs_cpu_seq_lens = False` after the class counts."""

    def __init__(self, flag: str = FLAG) -> None:
        self.flag = flag       # the attribute a backend declares (`flag-attribute`)
        self._stack: list[_ClassBuilder] = []
        self._builders: dict[str, _ClassBuilder] = {}

    def current(self, class_qualname: Optional[str]) -> Optional["_ClassBuilder"]:
        """The class being walked, if `class_qualname` (the walk's scope) is its body
        or one of its methods (not a class nested deeper)."""
        top = self._stack[-1] if self._stack else None
        return top if top is not None and top.qualname == class_qualname else None

    def enter(self, node: ast.ClassDef, qualname: str, local_imports: tuple[tuple[str, Import], ...]) -> None:
        flag = self.flag
        builder = _ClassBuilder(node, qualname, flag)
        builder.local_imports = local_imports
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == flag:
                builder.decls.append(FlagDecl(DeclKind.ANNOTATION, FlagState.INHERIT, stmt.lineno)
                                     if stmt.value is None else _class_decl(stmt.value, stmt.lineno))
            elif isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    for name, value in _paired(target, stmt.value):
                        if isinstance(name, ast.Name) and name.id == flag:
                            builder.decls.append(_class_decl(value, stmt.lineno))
            elif isinstance(stmt, ast.Delete) and any(isinstance(t, ast.Name) and t.id == flag for t in stmt.targets):
                # `del needs_cpu_seq_lens` in the body: the class no longer has its own; the
                # runtime's getattr finds the inherited one
                builder.decls = [d for d in builder.decls if d.kind not in (DeclKind.CLASS, DeclKind.ANNOTATION,
                                                                             DeclKind.FUNCTION)]
        self._stack.append(builder)

    def leave(self) -> None:
        builder = self._stack.pop()
        self._builders[builder.qualname] = builder

    def method(self, node: ast.FunctionDef | ast.AsyncFunctionDef, owner: "_ClassBuilder") -> None:
        """A method of `owner`; a declaration when it is named after the flag."""
        if node.name != self.flag:
            return
        if any(isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter") and isinstance(d.value, ast.Name)
               and d.value.id == self.flag for d in node.decorator_list):
            return  # `@needs_cpu_seq_lens.setter`: part of the property declared above it
        if any(_decorator_name(d) in ("property", "cached_property") for d in node.decorator_list):
            owner.decls.append(FlagDecl(DeclKind.PROPERTY, _property_value(node), node.lineno))
        else:
            # `getattr(backend, "needs_cpu_seq_lens")` is then a bound method: truthy
            owner.decls.append(FlagDecl(DeclKind.FUNCTION, True, node.lineno, node.col_offset))

    def assignment(self, target: ast.expr, value: Optional[ast.expr], scope, conditional: bool) -> None:
        """`target = value` in `scope` (the walk's; `conditional` when on some paths only)."""
        if isinstance(target, (ast.Tuple, ast.List)):
            for element, element_value in _paired(target, value):
                self.assignment(element, element_value, scope, conditional)
            return
        if (isinstance(target, ast.Name) and target.id == self.flag and conditional and self._stack
                and scope.name == self._stack[-1].qualname and scope.method_name is None):
            # `if cond: needs_cpu_seq_lens = False` in the class body: set on some paths only
            self._stack[-1].decls.append(FlagDecl(DeclKind.CLASS, FlagState.CONDITIONAL, target.lineno))
            return
        if not (isinstance(target, ast.Attribute) and target.attr == self.flag and isinstance(target.value, ast.Name)):
            return
        self._declare(target.value.id, value, target.lineno, scope, conditional)

    def augmented(self, target: ast.expr, scope) -> None:
        """`self.needs_cpu_seq_lens |= child.needs_cpu_seq_lens`: a value computed at run time."""
        if isinstance(target, ast.Attribute) and target.attr == self.flag and isinstance(target.value, ast.Name):
            self._declare(target.value.id, None, target.lineno, scope, True)
        elif (isinstance(target, ast.Name) and target.id == self.flag and self._stack
              and scope.name == self._stack[-1].qualname and scope.method_name is None):
            self._stack[-1].decls.append(FlagDecl(DeclKind.CLASS, FlagState.CONDITIONAL, target.lineno))

    def setattr_call(self, call: ast.Call, scope, conditional: bool) -> None:
        """`setattr(receiver, "needs_cpu_seq_lens", value)`."""
        if (isinstance(call.func, ast.Name) and call.func.id == "setattr" and len(call.args) == 3
                and isinstance(call.args[1], ast.Constant) and call.args[1].value == self.flag
                and isinstance(call.args[0], ast.Name)):
            self._declare(call.args[0].id, call.args[2], call.lineno, scope, conditional)

    def _declare(self, receiver: str, value: Optional[ast.expr], line: int, scope, conditional: bool) -> None:
        flag = FlagState.CONDITIONAL if conditional else _flag_value(value)
        if scope.name == "<module>" and receiver in self._builders:
            # `Backend.needs_cpu_seq_lens = False` after the class body
            self._builders[receiver].decls.append(FlagDecl(DeclKind.CLASS, flag, line))
        elif (scope.self_name is not None and receiver == scope.self_name
              and scope.method_name is not None and self._stack):
            # `self.needs_cpu_seq_lens = value` in a method of the class being walked
            kind = DeclKind.INIT if scope.method_name == "__init__" else DeclKind.METHOD
            self._stack[-1].decls.append(FlagDecl(kind, flag, line))

    def facts(self) -> list[ClassFacts]:
        return [builder.build() for builder in self._builders.values()]


class _ClassBuilder:
    """One class being walked: what is known of it so far."""

    def __init__(self, node: ast.ClassDef, qualname: str, flag: str = FLAG) -> None:
        self.node = node
        self.qualname = qualname
        self.flag = flag
        self.decls: list[FlagDecl] = []
        self.reads_mirror = False
        self.host_pulls: list[HostPull] = []
        self.local_imports: tuple[tuple[str, Import], ...] = ()

    def build(self) -> ClassFacts:
        node = self.node
        body = node.body
        first = body[0]
        insert_line: Optional[int]
        if first.lineno == node.lineno or any(
                isinstance(stmt, ast.Delete)
                and any(isinstance(t, ast.Name) and t.id == self.flag for t in stmt.targets)
                for stmt in body):
            insert_line = None  # one line, or a `del` of the flag below would undo the fix
        elif isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                and isinstance(first.value.value, str):
            insert_line = first.end_lineno + 1
        else:
            insert_line = first.lineno
        return ClassFacts(
            qualname=self.qualname, name=node.name, line=node.lineno, col=node.col_offset,
            bases=tuple(dotted(_first_choice(b)) for b in node.bases),
            decls=tuple(self.decls), reads_mirror=self.reads_mirror,
            host_pulls=tuple(self.host_pulls), insert_line=insert_line,
            insert_indent=first.col_offset, local_imports=self.local_imports,
            fields=tuple((s.target.id, annotation_terms(s.annotation)) for s in body
                         if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                         and annotation_terms(s.annotation)),
            end_line=node.end_lineno or node.lineno,
        )


def _class_decl(value: Optional[ast.expr], line: int) -> FlagDecl:
    """`needs_cpu_seq_lens = <value>` in a class body. A lambda there is a function
    attribute: on an instance, a bound method, always truthy (as a `def` would be)."""
    if isinstance(value, ast.Lambda):
        return FlagDecl(DeclKind.FUNCTION, True, line, value.col_offset)
    return FlagDecl(DeclKind.CLASS, _flag_value(value), line)


def _flag_value(node: Optional[ast.AST]) -> FlagValue:
    if isinstance(node, ast.Constant):  # `= 0`, `= None`: the aggregator tests truth
        return bool(node.value)
    return FlagState.CONDITIONAL


def _property_value(node: ast.FunctionDef | ast.AsyncFunctionDef) -> FlagValue:
    returns = [s for s in ast.walk(node) if isinstance(s, ast.Return)]
    values = {_flag_value(r.value) for r in returns}
    return values.pop() if len(values) == 1 else FlagState.CONDITIONAL


def _first_choice(value: ast.AST) -> ast.AST:
    """The class an expression that picks one names where the engine is installed:
    `Real if flag else Stub`'s first choice, `Real or object`'s first operand that is
    not a placeholder (`object`, `None`: what stands in where the import failed)."""
    if isinstance(value, ast.IfExp):
        return value.body
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or):
        named = [v for v in value.values if dotted(v) not in ("", "object", "builtins.object")]
        return named[0] if named else value.values[0]
    return value


def _child_blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    if isinstance(stmt, ast.If):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, ast.Try):
        return [stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody]
    if isinstance(stmt, ast.With):
        return [stmt.body]
    return []


def record_imports(stmt: ast.Import | ast.ImportFrom, imports: dict[str, Import], overwrite: bool = True) -> None:
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


