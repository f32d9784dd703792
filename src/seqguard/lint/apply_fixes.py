"""`--fix`: insert each fix's statement into its class body with libcst, so the
file's encoding, BOM, line endings, indentation style and final newline are kept by
`Module.bytes` rather than by hand."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider


def insert_statements(data: bytes, insertions: list[tuple[int, str]]) -> bytes:
    """Insert each `text` (one statement; its leading spaces are ignored, the class
    body's own indentation is used) as a statement of the class whose body reaches
    `line`, before the first of its statements that starts at or after `line`.

    Raises SyntaxError when the file or a text does not parse."""
    try:
        module = cst.parse_module(data)
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        positions = wrapper.resolve(PositionProvider)
        config = module.config_for_parsing
        statements = [(line, cst.parse_statement(text.strip() + module.default_newline, config=config))
                      for line, text in insertions]
    except cst.ParserSyntaxError as e:
        raise SyntaxError(f"cannot parse: {e.message} (line {e.raw_line})") from None
    classes = [node for node in positions if isinstance(node, cst.ClassDef)
               and isinstance(node.body, cst.IndentedBlock)]
    plan: dict[int, list[tuple[int, cst.BaseStatement]]] = {}
    for line, statement in sorted(statements, key=lambda item: item[0]):
        holders = [c for c in classes if positions[c].start.line < line <= positions[c].end.line + 1]
        if not holders:
            raise SyntaxError(f"line {line}: no class body to insert `{module.code_for_node(statement).strip()}` "
                              f"into; the file changed since it was analysed")
        owner = max(holders, key=lambda c: positions[c].start.line)
        index = next((i for i, s in enumerate(owner.body.body) if positions[s].start.line >= line),
                     len(owner.body.body))
        plan.setdefault(id(owner), []).append((index, statement))
    return module.visit(_Insert(plan)).bytes


class _Insert(cst.CSTTransformer):
    def __init__(self, plan: dict[int, list[tuple[int, cst.BaseStatement]]]) -> None:
        super().__init__()
        self.plan = plan

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        inserts = self.plan.get(id(original_node))
        if not inserts:
            return updated_node
        body = list(updated_node.body.body)
        for index, statement in sorted(inserts, key=lambda item: item[0], reverse=True):
            body.insert(index, statement)
        return updated_node.with_changes(body=updated_node.body.with_changes(body=body))
