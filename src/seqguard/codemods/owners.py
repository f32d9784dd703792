"""Whether the object a fallback reads from really has the device attribute.

The fallback of `spec_info.seq_lens_cpu` is `spec_info.seq_lens`: right for a batch,
wrong for a class without that field (sglang 0.5.23 `two_batch_overlap.py` annotates
`spec_info: Optional[EagleVerifyInput]`, which has `seq_lens_cpu` but no `seq_lens`).
When the project tells the object's class (`self`, or a parameter's annotation naming
a project class), every class in its hierarchy is known, and they declare the mirror
being read, the fallback is written only if one of them defines the device attribute
too; otherwise the site is listed for a manual fix with the reason. An object whose
class cannot be told keeps the usual fallback.
"""

from __future__ import annotations

import ast
import warnings
from typing import Optional

from seqguard.lint.model import MirrorAccess
from seqguard.lint.index import ProjectIndex
from seqguard.lint.rule import FileContext

# Bases that define no instance attributes a batch would carry.
_PLAIN_BASES = frozenset({"object", "ABC", "abc.ABC", "Generic", "typing.Generic", "Protocol", "typing.Protocol"})
# A class with these can answer any attribute: nothing can be said about it.
_DYNAMIC = frozenset({"__getattr__", "__getattribute__"})


class Owners:
    """Answers for one project index, kept for the whole run: each class file is parsed
    and each class's attributes collected once, not once per file that reads a mirror."""

    def __init__(self, index: ProjectIndex) -> None:
        self.index = index
        self._trees: dict[str, Optional[ast.Module]] = {}
        self._attributes: dict[str, Optional[frozenset[str]]] = {}

    # ---- the question ------------------------------------------------------------
    def missing(self, ctx: FileContext, access: MirrorAccess, attribute: str) -> Optional[str]:
        """Why `<object>.<attribute>` would name nothing, or None (it exists, or the
        object's class cannot be told)."""
        expression = access.alias_of or access.subject
        if "." not in expression:
            return None
        obj = expression.rsplit(".", 1)[0]
        if not obj.isidentifier():
            return None  # `self.buffers`, `batches[0]`: the class of an attribute is not tracked
        found = self._class_of(ctx, access, obj)
        if found is None:
            return None
        class_id, where = found
        attributes = self.attributes(class_id)
        if attributes is None or attribute in attributes or access.attr not in attributes:
            # (a class that does not declare the mirror either gets its attributes from
            # elsewhere, so its declarations say nothing about the device tensor)
            return None
        name = class_id.rsplit(".", 1)[-1]
        return (f"`{obj}` is a `{name}` ({where}), which has no `{attribute}`: the fallback "
                f"`{obj}.{attribute}` would fail; guard it by hand")

    # ---- the object's class ------------------------------------------------------
    def _class_of(self, ctx: FileContext, access: MirrorAccess, obj: str) -> Optional[tuple[str, str]]:
        function = self.index.function_at(ctx.relpath, access.line)
        if function is None:
            return None
        if _rebinds(function, obj):
            return None
        if obj == "self":
            cls = ctx.class_of(access)
            if cls is None or next(iter(self.index.descendants(cls)), None) is not None:
                return None  # a mixin's or base's `self` is whatever subclass it is mixed into
            return cls.id, "the class of the method, which no class of the project derives from"
        for arg in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]:
            if arg.arg == obj and arg.annotation is not None:
                name = _class_name(arg.annotation)
                if name is None:
                    return None
                class_id = self.index.resolve_name(self.index.module_of(ctx.relpath), name)
                if self.index.locate_class(class_id) is None:
                    return None  # not a project class (torch, a third-party type)
                return class_id, f"annotated on line {arg.lineno}"
        return None

    # ---- the class's attributes --------------------------------------------------
    def attributes(self, class_id: str, depth: int = 0) -> Optional[frozenset[str]]:
        """Every attribute the class or its bases define (class body, methods,
        `self.x = ...` in any method, `__slots__`), or None when some of it is unknown
        (a base outside the project, `__getattr__`, `setattr` with a computed name)."""
        if class_id in self._attributes:
            return self._attributes[class_id]
        self._attributes[class_id] = None  # a cycle is unknown
        result = self._collect(class_id, depth)
        self._attributes[class_id] = result
        return result

    def _collect(self, class_id: str, depth: int) -> Optional[frozenset[str]]:
        index = self.index
        located = index.locate_class(class_id)
        if located is None or depth > 20:
            return None
        relpath, qualname = located
        node = self._class_node(relpath, qualname)
        if node is None:
            return None
        names = _own_attributes(node)
        if names is None:
            return None
        module = index.module_of(relpath)
        for base in node.bases:
            try:
                written = ast.unparse(base.value if isinstance(base, ast.Subscript) else base)
            except (AttributeError, ValueError):  # pragma: no cover - unparse handles every expression
                return None
            if written in _PLAIN_BASES:
                continue
            base_id = index.resolve_name(module, written)
            inherited = self.attributes(base_id, depth + 1) if index.locate_class(base_id) else None
            if inherited is None:
                return None
            names |= inherited
        return frozenset(names)

    def _class_node(self, relpath: str, qualname: str) -> Optional[ast.ClassDef]:
        tree = self._tree(relpath)
        body = tree.body if tree is not None else []
        node = None
        for part in qualname.split("."):
            node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
            if node is None:
                return None
            body = node.body
        return node

    def _tree(self, relpath: str) -> Optional[ast.Module]:
        if relpath not in self._trees:
            source = self.index.source(relpath)
            tree = None
            if source is not None:
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        tree = ast.parse(source)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    tree = None
            self._trees[relpath] = tree
        return self._trees[relpath]


def _class_name(annotation: ast.expr) -> Optional[str]:
    """The one class an annotation names (`X`, `"X"`, `m.X`, `Optional[X]`, `X | None`,
    `Union[X, None]`), else None."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        parts = [annotation.left, annotation.right]
    elif isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value) in (
            "Optional", "typing.Optional", "Union", "typing.Union"):
        inner = annotation.slice
        parts = list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
    else:
        parts = [annotation]
    named = [p for p in parts if not (isinstance(p, ast.Constant) and p.value is None)]
    if len(named) != 1:
        return None
    if len(parts) > 1:
        return _class_name(named[0])
    node = named[0]
    if isinstance(node, (ast.Name, ast.Attribute)):
        return ast.unparse(node)
    return None


def _own_attributes(node: ast.ClassDef) -> Optional[set[str]]:
    names: set[str] = set()
    for statement in node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if statement.name in _DYNAMIC:
                return None
            names.add(statement.name)
        elif isinstance(statement, ast.Assign):
            for target in statement.targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            if any(isinstance(t, ast.Name) and t.id == "__slots__" for t in statement.targets):
                names.update(c.value for c in ast.walk(statement.value)
                             if isinstance(c, ast.Constant) and isinstance(c.value, str))
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            names.add(statement.target.id)
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store) and \
                isinstance(sub.value, ast.Name) and sub.value.id in ("self", "cls"):
            names.add(sub.attr)
        elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "setattr":
            if len(sub.args) < 2 or not (isinstance(sub.args[1], ast.Constant) and isinstance(sub.args[1].value, str)):
                return None  # an attribute named at run time
            names.add(sub.args[1].value)
        elif isinstance(sub, ast.Attribute) and sub.attr == "__dict__":
            return None
    return names


def _rebinds(function, name: str) -> bool:
    """Whether `name` is assigned in the function (then its annotation no longer tells)."""
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
            return True
    return False

