"""What a block of code binds, stores into or deletes, and the methods it calls: the
codemod asks before it takes a host copy out of a loop (a loop that rebinds the
object, stores into it or updates its lengths in place would see a stale copy) or
falls back to a device tensor the function changed."""

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


class Targets(cst.CSTVisitor):
    """What a block binds or deletes (assignment, loop, `with ... as`, walrus and `del`
    targets), and its method calls."""

    def __init__(self) -> None:
        super().__init__()
        self.targets: list[cst.CSTNode] = []
        self.calls: list[cst.Call] = []
        self.assigns: list[cst.Assign] = []

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

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute):
            self.calls.append(node)


def unpacked(target: cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return [t for element in target.elements for t in unpacked(element.value)]
    if isinstance(target, cst.StarredElement):
        return unpacked(target.value)
    return [target]
