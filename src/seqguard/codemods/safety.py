"""The codemod's own check before anything is written (Black's `--safe` idea): the
output parses, and its `ast` equals the input's once the guarded statements are
masked out on both sides. A result that fails it is refused, never written."""

from __future__ import annotations

import ast
import dataclasses
from typing import Callable

import libcst as cst


class GuardRefused(Exception):
    """The guarded module failed its own safety check; nothing should be written."""


@dataclasses.dataclass(frozen=True)
class Applied:
    """What a rewrite changed, as the check needs it: the ids of the original nodes on
    the way to a change (`path`) and of the guarded statements (`touched`), the new
    nodes on the way to a change (`new_path`), and what each guarded statement became
    (`generated`); `code_for_node` renders an original node."""
    path: set
    new_path: set
    touched: set
    generated: dict
    code_for_node: Callable[[cst.CSTNode], str]


def check_same_outside_guards(old: cst.Module, new: cst.Module, plan: "Applied") -> None:
    """Black's --safe idea: the output parses, and its `ast` equals the input's
    once the guarded statements are masked out on both sides. Statements off the
    way to a change must be the very same objects in both trees; the statements on
    it are compared as code (descending through class bodies, so one method is
    laid out rather than the whole class)."""
    old_parts: list = []
    new_parts: list = []
    _pair(old.body, new.body, old_parts, new_parts, plan)
    old_masked = cst.Module(body=old_parts).visit(_Mask({key: [key] for key in plan.touched}, plan.path))
    new_masked = cst.Module(body=new_parts).visit(
        _Mask({key: [id(n) for n in nodes] for key, nodes in plan.generated.items()}, plan.new_path))
    try:
        new_masked_tree = ast.parse(new_masked.code)
    except SyntaxError as e:
        raise GuardRefused(f"the guarded file would not parse ({e.msg}, line {e.lineno}); not written")
    if ast.dump(ast.parse(old_masked.code)) != ast.dump(new_masked_tree):
        raise GuardRefused(_DIFFERS)

def _pair(old_body, new_body, old_parts: list, new_parts: list, plan: "Applied") -> None:
    kept_old = [s for s in old_body if id(s) not in plan.path]
    kept_new = [s for s in new_body if id(s) not in plan.new_path]
    if len(kept_old) != len(kept_new) or any(a is not b for a, b in zip(kept_old, kept_new)):
        raise GuardRefused(_DIFFERS)
    changed_old = [s for s in old_body if id(s) in plan.path]
    changed_new = [s for s in new_body if id(s) in plan.new_path]
    classes = len(changed_old) == len(changed_new) and all(
        isinstance(o, cst.ClassDef) and isinstance(n, cst.ClassDef) and id(o) not in plan.touched
        and isinstance(o.body, cst.IndentedBlock) and isinstance(n.body, cst.IndentedBlock)
        for o, n in zip(changed_old, changed_new))
    if not classes:
        old_parts.extend(changed_old)
        new_parts.extend(changed_new)
        return
    for o, n in zip(changed_old, changed_new):
        header = plan.code_for_node
        if header(o.with_changes(body=o.body.with_changes(body=[]))) != \
                header(n.with_changes(body=n.body.with_changes(body=[]))):
            raise GuardRefused(_DIFFERS)
        _pair(o.body.body, n.body.body, old_parts, new_parts, plan)


_DIFFERS = "the result differs from the input outside the guarded statements; not written"


class _Mask(cst.CSTTransformer):
    """Replaces each group of statements (keyed by the original statement) by one
    numbered placeholder, so two trees can be compared outside those statements."""

    def __init__(self, groups: dict[int, list[int]], path: set[int]) -> None:
        super().__init__()
        self.path = path  # the nodes on the way to a group: nothing else can hold one
        self.first, self.rest = {}, set()
        for number, (_, ids) in enumerate(sorted(groups.items())):
            if ids:
                self.first[ids[0]] = number
                self.rest.update(ids[1:])

    def on_visit(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Module) or id(node) in self.path

    def on_leave(self, original_node, updated_node):
        key = id(original_node)
        if key in self.first:
            if isinstance(original_node, cst.MatchCase):
                # a `case ... if <read>:` guard: the placeholder must be a case (a value
                # pattern, which may stand before other cases)
                match = cst.parse_statement(f"match _:\n    case __seqguard__.guarded_{self.first[key]}:\n        "
                                            f"pass\n")
                return match.cases[0]
            return cst.parse_statement(f"__seqguard_guarded_{self.first[key]}__\n")
        if key in self.rest:
            return cst.RemovalSentinel.REMOVE
        return updated_node
