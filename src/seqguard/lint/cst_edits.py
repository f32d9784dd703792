"""Editing a libcst tree in one pass: lint's `--add-ignore` and the codemod both swap
nodes they found in a first walk."""

from __future__ import annotations

import libcst as cst


class ReplaceNodes(cst.CSTTransformer):
    """Replaces nodes, keyed by the identity of the original node, in one pass."""

    def __init__(self, replacements: dict[int, cst.CSTNode]) -> None:
        super().__init__()
        self.replacements = replacements

    def on_leave(self, original_node, updated_node):
        return self.replacements.get(id(original_node), updated_node)
