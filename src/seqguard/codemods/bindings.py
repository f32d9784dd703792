"""What a block of code binds, stores into or deletes, and the calls it makes; what a
module declares `nonlocal` or `global` and whether it runs code that rebinds names out
of sight (`exec`, `globals()`, a frame's `f_locals`): the codemod asks before it takes
a host copy out of a loop (a loop that rebinds the object, stores into it or updates
its lengths in place, or calls what does, would see a stale copy) or falls back to a
device tensor the function changed."""

from __future__ import annotations

import libcst as cst

# The operator methods that change their object (`x += y` calls `__iadd__`).
_IN_PLACE_DUNDERS = frozenset({"__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__",
                               "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__",
                               "__imatmul__", "__setitem__", "__delitem__"})


def is_in_place(method: str) -> bool:
    """Does calling `method` change its object? torch's convention (`add_`, `copy_`,
    `fill_`: a trailing underscore, not a private or special name) and the in-place
    operator methods."""
    return method in _IN_PLACE_DUNDERS or (method.endswith("_") and not method.startswith("_"))


# Calls that can rebind a module's names where no assignment shows it.
_REBINDING_CALLS = frozenset({"exec", "eval", "globals", "vars", "locals"})
# Attributes through which a module's names are rebound: a frame's `f_globals`, a
# module's `__dict__`, `sys.modules[...]`.
_MODULE_NAMESPACES = frozenset({"f_globals", "__dict__", "modules"})


class Targets(cst.CSTVisitor):
    """What a block binds or deletes (assignment, loop, `with ... as`, `except ... as`,
    import, walrus, `match` capture, `def`/`class` name and `del` targets), its method
    calls and all its calls."""

    def __init__(self) -> None:
        super().__init__()
        self.targets: list[cst.CSTNode] = []
        self.calls: list[cst.Call] = []        # method calls (`x.f(...)`)
        self.every_call: list[cst.Call] = []
        self.assigns: list[cst.Assign] = []
        self.binds_any_name = False            # `from m import *`

    def visit_Assign(self, node: cst.Assign) -> None:
        self.assigns.append(node)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.targets.extend(unpacked(node.target))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.targets.append(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.targets.append(node.target)

    def visit_For(self, node: cst.For) -> None:
        self.targets.extend(unpacked(node.target))

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.targets.extend(unpacked(node.target))

    def visit_AsName(self, node: cst.AsName) -> None:
        self.targets.extend(unpacked(node.name))

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.targets.append(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self.targets.extend(unpacked(node.target))

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        if node.name is not None:
            self.targets.append(node.name)

    def visit_MatchStar(self, node: cst.MatchStar) -> None:
        if node.name is not None:
            self.targets.append(node.name)

    def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
        if node.rest is not None:
            self.targets.append(node.rest)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None:  # `import a.b` binds `a`
            name = node.name
            while isinstance(name, cst.Attribute):
                name = name.value
            self.targets.append(name)

    def visit_ImportStar(self, node: cst.ImportStar) -> None:
        self.binds_any_name = True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.targets.append(node.name)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.targets.append(node.name)

    def visit_Call(self, node: cst.Call) -> None:
        self.every_call.append(node)
        if isinstance(node.func, cst.Attribute):
            self.calls.append(node)


class Declarations(cst.CSTVisitor):
    """A module's `nonlocal` and `global` declarations (the names a function called from
    anywhere can rebind in another scope), the `global` names of each function, and
    whether it runs code that rebinds names out of sight: `exec`/`eval`, `globals()`,
    `vars()`, `locals()`, a frame's `f_globals`, a `__dict__`, `sys.modules[...]`,
    `setattr` on an imported name (a module's names), or a frame's `f_locals` (a
    function's locals too: written through since Python 3.13)."""

    def __init__(self) -> None:
        super().__init__()
        self.nonlocal_names: set[str] = set()
        self.global_names: set[str] = set()
        self.globals_of: dict[int, set[str]] = {}   # id(FunctionDef) -> the names it declares global
        self.rebinds_module_names = False
        self.rebinds_frame_locals = False
        self._functions: list[cst.FunctionDef] = []
        self._set_on: set[str] = set()     # names `setattr` is called on
        self._imported: set[str] = set()   # names an import binds

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._functions.pop()

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.nonlocal_names.update(item.name.value for item in node.names)

    def visit_Global(self, node: cst.Global) -> None:
        names = {item.name.value for item in node.names}
        self.global_names |= names
        if self._functions:
            self.globals_of.setdefault(id(self._functions[-1]), set()).update(names)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value in _REBINDING_CALLS:
            self.rebinds_module_names = True
        elif isinstance(node.func, cst.Name) and node.func.value == "setattr" and node.args:
            # `setattr(sys.modules[__name__], ...)` (seen through `modules` below) or
            # `setattr(mod, ...)` on a name an import binds: a module, maybe this one
            target = node.args[0].value
            if isinstance(target, cst.Name):
                self._set_on.add(target.value)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            self._imported.add(_bound_name(alias))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if not isinstance(node.names, cst.ImportStar):
            self._imported.update(_bound_name(alias) for alias in node.names)

    def leave_Module(self, original_node: cst.Module) -> None:
        if not self._set_on.isdisjoint(self._imported):
            self.rebinds_module_names = True

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "f_locals":
            self.rebinds_frame_locals = self.rebinds_module_names = True
        elif node.attr.value in _MODULE_NAMESPACES:
            self.rebinds_module_names = True


class _OwnBindings(Targets):
    """What a function's own scope binds: not the names its nested functions, classes,
    lambdas or comprehension variables bind (their own scopes), but their names and a
    walrus in a comprehension (bound in the function)."""

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.targets.append(node.name)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.targets.append(node.name)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_CompFor(self, node: cst.CompFor) -> None:
        pass


def local_names(function: cst.FunctionDef) -> set[str]:
    """The names local to `function` (its parameters and what its own scope binds),
    `global`/`nonlocal` declarations aside: any other name it reads is its module's
    (or an enclosing function's), which code elsewhere can rebind."""
    params = function.params
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
    finder = _OwnBindings()
    function.body.visit(finder)
    return {p.name.value for p in every} | {t.value for t in finder.targets if isinstance(t, cst.Name)}


def _bound_name(alias: cst.ImportAlias) -> str:
    """The name `import a.b` (`a`), `import a as b` or `from m import a as b` binds."""
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    name = alias.name
    while isinstance(name, cst.Attribute):
        name = name.value
    return name.value


def unpacked(target: cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return [t for element in target.elements for t in unpacked(element.value)]
    if isinstance(target, cst.StarredElement):
        return unpacked(target.value)
    return [target]
