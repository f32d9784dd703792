"""Where each site's node is in the module: positions and parents for the statements
that hold a site, without laying out the rest of a large module (a method is laid
out alone and its positions shifted to where `ast` puts it)."""

from __future__ import annotations

import ast
import bisect

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

from seqguard.lint.analysis.source import first_line


class _Parents(cst.CSTVisitor):
    """Each node's parent, for the nodes whose lines hold a site (ParentNodeProvider
    would walk the whole module)."""

    def __init__(self, positions, lines: set[int]) -> None:
        super().__init__()
        self.positions = positions
        self.lines = sorted(lines)
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.stack:
            self.parents[node] = self.stack[-1]
        self.stack.append(node)
        span = self.positions.get(node)
        if span is None or isinstance(node, cst.IndentedBlock) or getattr(node, "decorators", None):
            return True  # a decorated def's position (and its block's) starts at `def`, after its decorators
        i = bisect.bisect_left(self.lines, span.start.line)
        return i < len(self.lines) and self.lines[i] <= span.end.line

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()


def locate(tree: cst.Module, code: str, lines: set[int]):
    """Positions and parents for the statements that hold `lines`; the rest of a
    large module is never laid out. Each such statement (a method of a class whose
    header holds no site, recursively, or else a top-level statement) is laid out as
    a module of its own and its positions shifted to where `ast` puts it in the file.
    The caller checks each site's text at its shifted position and falls back to
    `_locate_whole` when one does not match."""
    try:
        tops = ast.parse(code).body
    except (SyntaxError, ValueError):
        return locate_whole(tree, lines)
    positions: dict = {}
    parents: dict = {}
    if not _locate_block(tree, tree.body, tops, 0, tree, sorted(lines), positions, parents):
        return locate_whole(tree, lines)
    return positions, parents


def locate_whole(tree: cst.Module, lines: set[int]):
    positions = MetadataWrapper(tree, unsafe_skip_copy=True).resolve(PositionProvider)
    finder = _Parents(positions, lines)
    tree.visit(finder)
    return positions, finder.parents


def _locate_block(tree, body, ast_body, columns: int, holder, wanted: list[int], positions, parents) -> bool:
    i = 0
    for statement in body:
        count = len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
        if i + count > len(ast_body):
            return False
        first_ast, last_ast = ast_body[i], ast_body[i + count - 1]
        i += count
        first = first_line(first_ast)
        k = bisect.bisect_left(wanted, first)
        if not (k < len(wanted) and wanted[k] <= last_ast.end_lineno):
            continue
        parents[statement] = holder
        if isinstance(statement, cst.ClassDef) and isinstance(statement.body, cst.IndentedBlock) \
                and isinstance(first_ast, ast.ClassDef) and first_ast.body \
                and not any(first <= line < first_line(first_ast.body[0]) for line in wanted):
            block = statement.body
            parents[block] = statement
            indent = block.indent if block.indent is not None else tree.default_indent
            if not _locate_block(tree, block.body, first_ast.body, columns + len(indent), block, wanted,
                                 positions, parents):
                return False
            continue
        alone = cst.Module(body=[statement], default_indent=tree.default_indent,
                           default_newline=tree.default_newline)
        local = MetadataWrapper(alone, unsafe_skip_copy=True).resolve(PositionProvider)
        shift = first_ast.lineno - local[statement].start.line
        finder = _Parents(local, {line - shift for line in wanted})
        statement.visit(finder)
        parents.update(finder.parents)
        parents[statement] = holder
        for node, span in local.items():
            if node is not alone:
                positions[node] = CodeRange(CodePosition(span.start.line + shift, span.start.column + columns),
                                            CodePosition(span.end.line + shift, span.end.column + columns))
    return i == len(ast_body)
