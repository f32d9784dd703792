"""Receiver types: the walk's type terms (`analysis.terms`) resolved against the whole
project, on demand.

A type is a project class id (`pkg.mod.Class`), a namespace id (`ns:<file>:<line>:<col>`,
one per `SimpleNamespace(...)` call) or a class object's (`class:pkg.mod.Class`): ids are
dictionary keys all over the contract, so they stay strings, and only this module
writes or reads their prefixes (`describe`). `UNKNOWN` stands for "could be any object": a
parameter without an annotation, a call into another library. Attribute types come from
class-level annotations and from `self.attr = ...` in the class's methods; what a call
returns, from its return annotation and `return` statements (`init_new` returns
`cls(...)`); both are read lazily, from the one function or class they need.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Iterable, Optional

from seqguard.lint.analysis.classes import record_imports
from seqguard.lint.analysis.names import bound_names, dotted
from seqguard.lint.analysis.source import split_lines
from seqguard.lint.analysis.terms import annotation_terms, expression_terms
from seqguard.lint.model import Callee, CalleeHead

if TYPE_CHECKING:
    from seqguard.lint.index import ProjectIndex

UNKNOWN = "?"
_MAX_DEPTH = 8
_NAMESPACE, _CLASS_OBJECT = "ns:", "class:"


def describe(type_id: str) -> str:
    """A type as a message names it: `Buffers`, `SimpleNamespace built at m.py:13`."""
    if type_id.startswith(_NAMESPACE):
        relpath, line, _ = type_id[len(_NAMESPACE):].rsplit(":", 2)
        return f"SimpleNamespace built at {relpath}:{line}"
    return type_id.rsplit(".", 1)[-1]


class Types:
    def __init__(self, index: "ProjectIndex") -> None:
        self.index = index
        self._returns: dict[tuple[str, str], frozenset[str]] = {}
        self._attributes: dict[tuple[str, str], frozenset[str]] = {}
        self._environments: dict[tuple[str, int], dict[str, tuple[str, ...]]] = {}
        self._imports: dict[tuple[str, int], dict[str, str]] = {}
        self._locals: dict[tuple[str, int, Optional[str], str], tuple[str, ...]] = {}
        self._resolved: dict[tuple[str, tuple[str, ...]], frozenset[str]] = {}

    # ---- terms -> types ---------------------------------------------------------------
    def resolve(self, relpath: str, terms: Iterable[str], depth: int = 0) -> frozenset[str]:
        """The types `terms` (written in file `relpath`) can stand for; {UNKNOWN} when
        there are none or one cannot be told."""
        terms = tuple(terms)
        if not terms:
            return frozenset({UNKNOWN})
        key = (relpath, terms)
        found = self._resolved.get(key)
        if found is None:
            out: set[str] = set()
            for term in terms:
                out |= self._term(relpath, term, depth)
            found = frozenset(out)
            if depth == 0:
                self._resolved[key] = found  # deeper answers may be cut by a recursion in progress
        return found

    def _term(self, relpath: str, term: str, depth: int) -> frozenset[str]:
        if depth > _MAX_DEPTH:
            return frozenset({UNKNOWN})
        kind, _, body = term.partition(":")
        module = self.index.module_of(relpath)
        if kind == "C":
            return frozenset({f"{module}.{body}"})
        if kind == "S":
            return frozenset({f"{_NAMESPACE}{relpath}:{body}"})
        if kind == "A":
            return self._class_named(module, body)
        if kind == "N":
            found = self._class_named(module, body)
            if UNKNOWN not in found:
                return found
            target = self.index.callable_named(relpath, None, Callee(CalleeHead.NAME, body))
            if target is None:
                return frozenset({UNKNOWN})
            return self.returns(target[0], target[1], target[2], depth + 1)
        if kind in ("F", "M"):
            name, _, inner = body.partition("|")
            owners = self._term(relpath, inner, depth + 1)
            out: set[str] = set()
            for owner in owners:
                if owner == UNKNOWN:
                    out.add(UNKNOWN)
                elif kind == "F":
                    out |= self.attribute(owner, name, depth + 1)
                else:
                    out |= self.method_returns(owner, name, depth + 1)
            return frozenset(out)
        if kind == "T":  # element `i` of the tuple a call returns (`buffers, bs = self.make()`)
            position, _, inner = body.partition("|")
            return self._element(relpath, int(position), inner, depth + 1)
        if kind == "K":
            return frozenset({f"{_CLASS_OBJECT}{module}.{body}"})
        if kind == "I":  # a name the function imported itself, made absolute
            resolved = self.index.resolve_absolute(body)
            if resolved in self.index.classes or self.index.is_scanned_class(resolved):
                return frozenset({resolved})
            target = self.index.callable_at(body)
            if target is None or target[2] is not None:
                return frozenset({UNKNOWN})
            return self.returns(target[0], target[1], None, depth + 1)
        return frozenset({UNKNOWN})

    def _element(self, relpath: str, index: int, inner: str, depth: int) -> frozenset[str]:
        kind, _, body = inner.partition(":")
        if kind == "M":
            name, _, receiver = body.partition("|")
            out: set[str] = set()
            for owner in self._term(relpath, receiver, depth + 1):
                out |= {UNKNOWN} if owner == UNKNOWN else self.method_returns(owner, name, depth + 1, index)
            return frozenset(out)
        if kind == "N" and UNKNOWN in self._class_named(self.index.module_of(relpath), body):
            target = self.index.callable_named(relpath, None, Callee(CalleeHead.NAME, body))
            if target is not None:
                return self.returns(target[0], target[1], target[2], depth + 1, index)
        if kind == "I":
            target = self.index.callable_at(body)
            if target is not None and target[2] is None:
                return self.returns(target[0], target[1], None, depth + 1, index)
        return frozenset({UNKNOWN})

    def _class_named(self, module: str, dotted: str) -> frozenset[str]:
        resolved = self.index.resolve_name(module, dotted)
        if resolved in self.index.classes or self.index.is_scanned_class(resolved):
            return frozenset({resolved})
        return frozenset({UNKNOWN})

    # ---- what calls return ------------------------------------------------------------
    def returns(self, relpath: str, function: ast.FunctionDef, owner: Optional[str], depth: int,
                index: Optional[int] = None) -> frozenset[str]:
        """What calling `function` gives: its return annotation when it names a class
        (trusted), else the join of its `return` expressions; a constructor its class.
        With `index`: element `index` of the tuple it returns."""
        key = (relpath, f"{owner}.{function.name}" if owner else function.name, index)
        if key not in self._returns:
            self._returns[key] = frozenset({UNKNOWN})  # a recursion meets this
            if index is not None:
                result = self._returned_elements(relpath, function, owner, depth, index)
            elif owner is not None and function.name == "__init__":
                result = self.resolve(relpath, (f"C:{owner}",), depth)
            elif annotation_terms(function.returns) and UNKNOWN not in (
                    annotated := self.resolve(relpath, annotation_terms(function.returns), depth)):
                result = annotated
            else:  # no annotation, or one naming no project class (`-> SimpleNamespace`): the returns
                env, self_name, cls_name = self.environment(relpath, function, owner)
                self_class = owner if self_name is not None or cls_name is not None else None
                imports = self.local_imports(relpath, function)
                found: set[str] = set()
                for node in _statements(function.body):
                    if isinstance(node, ast.Return) and node.value is not None and not _is_none(node.value):
                        terms = _localised(expression_terms(node.value, env, self_name, self_class, cls_name),
                                           imports)
                        found |= self.resolve(relpath, terms, depth) if terms else {UNKNOWN}
                result = frozenset(found) or frozenset({UNKNOWN})
            self._returns[key] = result
        return self._returns[key]

    def _returned_elements(self, relpath: str, function: ast.FunctionDef, owner: Optional[str], depth: int,
                           index: int) -> frozenset[str]:
        """Element `index` of what `function` returns: from a `Tuple[A, B]` annotation, else
        the join of that element of each `return (a, b)`. A None element holds no object;
        a return of anything but a tuple display (a name, a call) cannot be split."""
        annotation = function.returns
        if isinstance(annotation, ast.Subscript) and dotted(annotation.value) in ("Tuple", "typing.Tuple", "tuple"):
            elements = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
            if index < len(elements) and not any(isinstance(e, ast.Constant) and e.value is Ellipsis
                                                  for e in elements):
                terms = annotation_terms(elements[index])
                annotated = self.resolve(relpath, terms, depth) if terms else frozenset({UNKNOWN})
                if UNKNOWN not in annotated:
                    return annotated  # `Tuple[Buffers, int]`; `Tuple[Any, int]` says nothing
        env, self_name, cls_name = self.environment(relpath, function, owner)
        self_class = owner if self_name is not None or cls_name is not None else None
        imports = self.local_imports(relpath, function)
        found: set[str] = set()
        split = False
        for node in _statements(function.body):
            if not isinstance(node, ast.Return) or node.value is None or _is_none(node.value):
                continue
            value = node.value
            if not isinstance(value, ast.Tuple) or index >= len(value.elts) or \
                    any(isinstance(e, ast.Starred) for e in value.elts):
                return frozenset({UNKNOWN})
            split = True
            element = value.elts[index]
            if _is_none(element):
                continue  # `return None, None`: no object there (the caller tests it)
            terms = _localised(expression_terms(element, env, self_name, self_class, cls_name), imports)
            found |= self.resolve(relpath, terms, depth) if terms else {UNKNOWN}
        # only Nones in that place: no object at all (an override may add one)
        return frozenset(found) if split else frozenset({UNKNOWN})

    def method_returns(self, type_id: str, name: str, depth: int, index: Optional[int] = None) -> frozenset[str]:
        """What method `name` returns on an object of type `type_id`: the definition it
        inherits or has, joined with every override in a subclass (the object may be one)."""
        if type_id.startswith(_CLASS_OBJECT):
            cls = self.index.class_of(type_id[len(_CLASS_OBJECT):])
        else:
            cls = self.index.class_of(type_id)
        if cls is None:
            return frozenset({UNKNOWN})
        out: set[str] = set()
        for owner in (cls, *self.index.ancestors(cls)):
            hit = self.index.functions_of(owner.relpath).get(f"{owner.facts.qualname}.{name}")
            if hit is not None and hit[0] is not None:
                out |= self.returns(owner.relpath, hit[0], owner.facts.qualname, depth, index)
                break
        else:
            out.add(UNKNOWN)
        # the subclasses, parsed or not (read off every file's scan by name), and what
        # one that does not define it may take from another of its bases first (a
        # mixin: `class Eager(BatchMixin, BaseRunner)`)
        subclasses = self.index.maybe_subclasses(cls.name)
        lineage = {cls.name, *(sub for _, sub in subclasses)}
        for relpath, sub in subclasses:
            hit = self.index.functions_of(relpath).get(f"{sub}.{name}")
            if hit is not None and hit[0] is not None:
                out |= self.returns(relpath, hit[0], sub, depth, index)
                continue
            for base_id in self.index.scanned_bases(relpath, sub):
                located = self.index.locate_class(base_id)
                if located is None or located[1].rsplit(".", 1)[-1] in lineage:
                    continue  # not the project's, or the line down from `cls`
                mixin_path, mixin = located
                hit = self.index.functions_of(mixin_path).get(f"{mixin}.{name}")
                if hit is not None and hit[0] is not None:
                    out |= self.returns(mixin_path, hit[0], mixin, depth, index)
        return frozenset(out)

    # ---- what attributes hold ---------------------------------------------------------
    def attribute(self, type_id: str, attr: str, depth: int) -> frozenset[str]:
        key = (type_id, attr)
        if key in self._attributes:
            return self._attributes[key]
        self._attributes[key] = frozenset({UNKNOWN})
        cls = self.index.class_of(type_id)
        if cls is None:
            return self._attributes[key]
        out: set[str] = set()
        for owner in (cls, *self.index.ancestors(cls)):
            for name, terms in owner.facts.fields:
                if name == attr:
                    out |= self.resolve(owner.relpath, terms, depth)
            out |= self._assigned_in_methods(owner, attr, depth)
        self._attributes[key] = frozenset(out) if out else frozenset({UNKNOWN})
        return self._attributes[key]

    def _assigned_in_methods(self, cls, attr: str, depth: int) -> set[str]:
        """Types of `self.<attr> = value` in the methods of `cls` (lines that say so are
        found in the text first; only those methods are parsed)."""
        source = self.index.source(cls.relpath)
        if source is None:
            return {UNKNOWN}
        lines = split_lines(source)  # as Python numbers them (not at form feeds)
        pattern = re.compile(rf"\.{re.escape(attr)}\s*(:[^=]+)?=(?!=)")
        prefix = cls.facts.qualname + "."
        out: set[str] = set()
        for qualname, first, last in self.index.function_spans(cls.relpath):
            if not qualname.startswith(prefix) or "." in qualname[len(prefix):]:
                continue
            if not any(pattern.search(line) for line in lines[first - 1:last]):
                continue
            function = self.index.functions_of(cls.relpath).get(qualname, (None, None))[0]
            if function is None:
                out.add(UNKNOWN)
                continue
            env, self_name, cls_name = self.environment(cls.relpath, function, cls.facts.qualname)
            imports = self.local_imports(cls.relpath, function)
            for node in _statements(function.body):  # an attribute is assigned by statements only
                targets = node.targets if isinstance(node, ast.Assign) else \
                    [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else []
                for target in targets:
                    if (isinstance(target, ast.Attribute) and target.attr == attr
                            and isinstance(target.value, ast.Name) and target.value.id == self_name
                            and not _is_none(node.value)):  # `self.x = None` holds no object to read
                        terms = _localised(expression_terms(node.value, env, self_name, cls.facts.qualname,
                                                            cls_name), imports)
                        out |= self.resolve(cls.relpath, terms, depth) if terms else {UNKNOWN}
        return out

    # ---- a function's local names -----------------------------------------------------
    def environment(self, relpath: str, function: ast.FunctionDef, owner: Optional[str],
                    wanted: Optional[set[str]] = None
                    ) -> tuple[dict[str, tuple[str, ...]], Optional[str], Optional[str]]:
        """(local name -> terms, the name of `self`, the name of `cls`): parameter
        annotations and every assignment to a name, whatever the order (a name bound to
        two types has both). `wanted`: the names asked about (the walk is of statements
        only, and keeps the assignments that bind them or what they are built from)."""
        args = function.args
        positional = [*args.posonlyargs, *args.args]
        decorators = {_decorator(d) for d in function.decorator_list}
        self_name = cls_name = None
        if owner is not None and positional and "staticmethod" not in decorators:
            if "classmethod" in decorators:
                cls_name = positional[0].arg
            else:
                self_name = positional[0].arg
        key = (relpath, id(function))
        env = self._environments.get(key)
        if env is None:
            env = {}
            imports = self.local_imports(relpath, function)
            for arg in (*positional, *args.kwonlyargs):
                terms = annotation_terms(arg.annotation)  # evaluated where the def is: the module's names
                if terms:
                    env[arg.arg] = terms
            assigned = list(_assignments(function))
            for _ in range(2):  # `a = make(); b = a.buffers`: a second pass sees a's type
                for name, value, position in assigned:
                    terms = _bound_terms(value, position, env, self_name, owner, cls_name, imports)
                    if terms:
                        env[name] = tuple(dict.fromkeys((*env.get(name, ()), *terms)))
            self._environments[key] = env
        return env, self_name, cls_name

    def local_terms(self, relpath: str, function: ast.FunctionDef, owner: Optional[str],
                    name: str) -> tuple[str, ...]:
        """The terms of local `name` over the whole function (`environment`), but only
        when every binding of it is an assignment the environment reads: a loop or
        `with` target, or a second import, could bind it to anything else."""
        key = (relpath, id(function), owner, name)
        if key not in self._locals:
            self._locals[key] = self._local_terms(relpath, function, owner, name)
        return self._locals[key]

    def _local_terms(self, relpath: str, function: ast.FunctionDef, owner: Optional[str],
                     name: str) -> tuple[str, ...]:
        env, self_name, cls_name = self.environment(relpath, function, owner)
        terms = env.get(name, ())
        if not terms:
            return ()
        imports = self.local_imports(relpath, function)
        assigned = 0
        for bound, value, position in _assignments(function):
            if bound != name:
                continue
            # one binding of no known type (`dummy = batches[0]`) may hold anything
            if not _bound_terms(value, position, env, self_name, owner, cls_name, imports):
                return ()
            assigned += 1
        # `del buffers` unbinds: it gives the name no other value
        deleted = sum(1 for n in ast.walk(function)
                      if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Del))
        return terms if bound_names(function, nested=True).get(name, 0) == assigned + deleted else ()

    def local_imports(self, relpath: str, function: ast.FunctionDef) -> dict[str, str]:
        """Name -> absolute dotted name of what the function's own import statements
        bind (nested blocks included, nested functions not). A name bound any other way
        too (a second import, a parameter, an assignment, a loop or `with` target) may
        hold either: it is left out, as of unknown type."""
        key = (relpath, id(function))
        found = self._imports.get(key)
        if found is None:
            imports: dict = {}
            for node in _statements(function.body):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    record_imports(node, imports)
            bound = bound_names(function) if imports else {}   # most functions import nothing
            module = self.index.module_of(relpath)
            found = {name: self.index.imported_name(module, imported) for name, imported in imports.items()
                     if not name.startswith("*") and bound.get(name) == 1}
            self._imports[key] = found
        return found


def _bound_terms(value: ast.expr, position: Optional[int], env: dict, self_name: Optional[str],
                 owner: Optional[str], cls_name: Optional[str], imports: dict[str, str]) -> tuple[str, ...]:
    """The terms one assignment gives its name (`position`: its place in a tuple
    target, `buffers, bs = self.make()`)."""
    terms = _localised(expression_terms(value, env, self_name, owner, cls_name), imports)
    if position is not None:
        terms = tuple(f"T:{position}|{t}" for t in terms if t[:2] in ("M:", "N:", "I:"))
    return terms


def _localised(terms: tuple[str, ...], imports: dict[str, str]) -> tuple[str, ...]:
    """`terms` with a name the function imported itself made absolute: the innermost
    term (`N:Runner` in `F:x|N:Runner`) becomes `I:pkg.runner.Runner`."""
    if not imports or not terms:
        return terms
    out = []
    for term in terms:
        outer, bar, base = term.rpartition("|")
        kind, _, body = base.partition(":")
        head, dot, rest = body.partition(".")
        if kind == "N" and head in imports:  # a call written in the body (an annotation is the module's)
            base = f"I:{imports[head]}{dot}{rest}"
        out.append(f"{outer}{bar}{base}")
    return tuple(out)


def _assignments(function: ast.FunctionDef):
    """(name, value, position) for each `name = value` of the function's statements
    (position None), and for each name of a `a, b = value` unpacking (its position)."""
    for n in _statements(function.body):
        if isinstance(n, ast.Assign) and len(n.targets) == 1:
            target = n.targets[0]
            if isinstance(target, ast.Name):
                yield target.id, n.value, None
            elif isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in target.elts):
                for position, element in enumerate(target.elts):
                    yield element.id, n.value, position
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value is not None:
            yield n.target.id, n.value, None


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _decorator(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _statements(body: list[ast.stmt]):
    """The statements of a function body, nested blocks included, not nested functions."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(node, field, ()) or ():
                if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    stack.append(child)
