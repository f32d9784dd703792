"""Editing with libcst: nodes swapped in one pass (lint's `--add-ignore` and the
codemod swap nodes they found in a first walk), `--fix`'s statements inserted into
class bodies (`insert_statements`), and a module's bytes with the last line's ending
libcst loses (`module_bytes`)."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider


class ReplaceNodes(cst.CSTTransformer):
    """Replaces nodes, keyed by the identity of the original node, in one pass."""

    def __init__(self, replacements: dict[int, cst.CSTNode]) -> None:
        super().__init__()
        self.replacements = replacements

    def on_leave(self, original_node, updated_node):
        return self.replacements.get(id(original_node), updated_node)


def module_bytes(module: cst.Module, original: bytes) -> bytes:
    """`module.bytes`, with the file's last line ending kept: libcst (1.x) parses a file
    whose last line ends in a lone `\r` as one without a final newline and writes it
    without that `\r` (it sees a final newline only in `\n`). Put back when the
    original ended so and the module says it has no final newline (the lost byte)."""
    new = module.bytes
    if module.has_trailing_newline:
        return new
    cr = "\r".encode(module.encoding)
    return new + cr if original.endswith(cr) else new


def insert_statements(data: bytes, insertions: list[tuple[int, str]]) -> bytes:
    """Insert each `text` (one statement; its leading spaces are ignored, the class
    body's own indentation is used) as a statement of the class whose body reaches
    `line`, before the first of its statements that starts at or after `line`.

    Raises SyntaxError when the file or a text does not parse, or is nested too deeply
    for libcst (one file's trouble, reported for that file alone)."""
    try:
        return _insert_statements(data, insertions)
    except SyntaxError:
        raise
    except Exception as e:  # libcst's trouble with one file (a KeyError unwinding a RecursionError...)
        raise SyntaxError(failure_reason(e, "add the line by hand")) from None


def failure_reason(error: BaseException, remedy: str) -> str:
    """Why one file could not be rewritten, in one line ending with `remedy`: nesting
    too deep for libcst's recursion (a RecursionError or MemoryError, or an error
    raised while one unwound), else the error's type and the start of its message."""
    chain, seen = [], error
    while seen is not None and len(chain) < 16:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    if any(isinstance(e, (RecursionError, MemoryError)) for e in chain):
        return f"nested too deeply for libcst to rewrite (RecursionError); {remedy}"
    try:
        text = str(error)
    except Exception:  # a message naming a deep node can fail to render
        text = ""
    lines = text.strip().splitlines()
    first = lines[0][:120] if lines else ""
    return f"could not be rewritten ({type(error).__name__}{': ' + first if first else ''}); {remedy}"


def _insert_statements(data: bytes, insertions: list[tuple[int, str]]) -> bytes:
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
    return module_bytes(module.visit(_Insert(plan)), data)


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
            _space_as_formatters_do(body, index)
        if len(body) == 2 and _is_bare_pass(body[1]):
            del body[1]  # the `pass` held an empty class body; the new line does now
        return updated_node.with_changes(body=updated_node.body.with_changes(body=body))


def _space_as_formatters_do(body: list, index: int) -> None:
    """Blank lines around the statement just inserted at `index` as Black and `ruff
    format` write them: one after a class docstring, one before a `def` or `class`."""
    statement = body[index]
    if index > 0 and _is_docstring(body[index - 1]) and not statement.leading_lines:
        body[index] = statement.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
    if index + 1 < len(body):
        after = body[index + 1]
        if isinstance(after, (cst.FunctionDef, cst.ClassDef)) and not after.leading_lines:
            body[index + 1] = after.with_changes(leading_lines=[cst.EmptyLine(indent=False)])


def _is_docstring(statement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and \
        isinstance(statement.body[0], cst.Expr) and isinstance(statement.body[0].value,
                                                             (cst.SimpleString, cst.ConcatenatedString))


def _is_bare_pass(statement) -> bool:
    """A line that is only `pass`: no comment on it or above it to lose."""
    return isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and \
        isinstance(statement.body[0], cst.Pass) and statement.trailing_whitespace.comment is None and \
        not any(line.comment for line in statement.leading_lines)
