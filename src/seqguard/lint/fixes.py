"""`--fix` and `--fix --diff`: the fixes each finding carries (`Diagnostic.fix`),
grouped by file, written or shown as a diff. Each fix's statement is inserted into its
class body with libcst, so the file's encoding, BOM, line endings, indentation style
and final newline are kept by `Module.bytes` rather than by hand. Nothing here prints:
the CLI prints what these functions return.

The diffs (`file_patch`, `codemod --diff`'s too) are what `git apply` and `patch -p1`
take: computed on the file's bytes and split where git splits lines, at `\\n` only (a
lone `\\r` stays inside its line, as git sees it); a last line without its newline is
followed by git's `\\ No newline at end of file`; a name git would quote (a control
character, `"`, `\\`, or a byte past ASCII, with git's default `core.quotePath`) is
quoted as git's `quote_c_style` writes it, and a header whose name holds a space ends
with a tab, as git's own do. The text holds a file's bytes as `surrogateescape` decodes
them, so a file that is not UTF-8 comes back byte for byte when the caller encodes the
diff the same way (the command line does)."""

from __future__ import annotations

import dataclasses
import difflib
import os
from typing import Optional, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from seqguard.diagnostics import Diagnostic
from seqguard.fileio import FileChangedError, atomic_write, read_bytes
from seqguard.lint.discovery import Target


def planned_fixes(diagnostics: Sequence[Diagnostic], targets: Sequence[Target]) -> dict[str, list[tuple[int, str]]]:
    """abspath -> distinct (line, text) insertions of the fixable findings of checked
    files, files in the order of their first finding."""
    by_display = {t.display: t for t in targets}
    fixes: dict[str, set[tuple[int, str]]] = {}
    for diagnostic in diagnostics:
        target = by_display.get(diagnostic.path)
        if diagnostic.fix is not None and target is not None:
            fixes.setdefault(target.abspath, set()).add(diagnostic.fix)
    return {path: sorted(edits) for path, edits in fixes.items()}


@dataclasses.dataclass
class Applied:
    count: int              # fixes written
    errors: list[str]       # "path: fix not applied: why", one per file left alone


def apply_fixes(diagnostics: Sequence[Diagnostic], targets: Sequence[Target], *, force: bool = False,
                max_file_size: Optional[int] = None) -> Applied:
    """Write every planned fix; a file that changed since it was analysed, no longer
    parses, or would grow past `max_file_size` (every later run would refuse it) is left
    alone and named in `errors`."""
    display = {t.abspath: t.display for t in targets}
    applied = Applied(0, [])
    for abspath, edits in planned_fixes(diagnostics, targets).items():
        try:
            original = read_bytes(abspath)
            new = insert_statements(original, edits)
            problem = growth_problem(new, max_file_size)
            if problem:
                applied.errors.append(f"{display.get(abspath, abspath)}: fix not applied: {problem}")
                continue
            atomic_write(abspath, new, expected=original, force=force)
            applied.count += len(edits)
        except (OSError, FileChangedError, UnicodeDecodeError, SyntaxError) as e:
            applied.errors.append(f"{display.get(abspath, abspath)}: fix not applied: {e}")
        except Exception as e:  # one file's trouble, whatever it is: the others are still fixed
            applied.errors.append(f"{display.get(abspath, abspath)}: fix not applied: "
                                  f"{failure_reason(e, 'add the line by hand')}")
    return applied


def growth_problem(new: bytes, max_file_size: Optional[int]) -> Optional[str]:
    """Why a rewrite that makes a file `new` must not be written: past the size lint
    reads, the file would be refused by every later run."""
    if max_file_size is not None and len(new) > max_file_size:
        return (f"the rewritten file would be {len(new)} bytes, past max-file-size ({max_file_size}); "
                f"raise max-file-size in [tool.seqguard], or edit it by hand")
    return None


@dataclasses.dataclass
class Diff:
    text: str               # a unified diff of every file a fix would change
    count: int              # fixes it shows
    warnings: list[str]     # "path: fix not shown: why"


def diff_fixes(diagnostics: Sequence[Diagnostic], targets: Sequence[Target]) -> Diff:
    """What `apply_fixes` would write, as a unified diff, files in path order."""
    display = {t.abspath: t.display for t in targets}
    relpaths = {t.abspath: t.relpath for t in targets}
    chunks: list[str] = []
    shown = Diff("", 0, [])
    for abspath, edits in sorted(planned_fixes(diagnostics, targets).items()):
        try:
            original = read_bytes(abspath)
            new = insert_statements(original, edits)
        except (OSError, UnicodeDecodeError, SyntaxError) as e:
            shown.warnings.append(f"{display[abspath]}: fix not shown: {e}")
            continue
        except Exception as e:
            shown.warnings.append(f"{display[abspath]}: fix not shown: {failure_reason(e, 'add the line by hand')}")
            continue
        # git's headers, relative to the project root: `git apply` there takes the diff
        chunks.append(file_patch(relpaths[abspath], original, new))
        shown.count += len(edits)
    shown.text = "".join(chunks)
    return shown


def exact_insertions(diagnostics: Sequence[Diagnostic],
                     targets: Sequence[Target]) -> dict[tuple[str, tuple[int, str]], tuple[int, int, str]]:
    """(path shown, fix) -> (line, lines replaced, text): where `apply_fixes` really
    puts each fix's statement, how many lines from there it replaces (a class body that
    was only `pass` loses it; else none) and the exact text it writes there (the class
    body's indentation, the file's line ending), for SARIF's `fixes`. Read from the file
    as `--diff` would show it; a file that cannot be read or fixed has none."""
    display = {t.abspath: t.display for t in targets}
    found: dict[tuple[str, tuple[int, str]], tuple[int, int, str]] = {}
    for abspath, edits in planned_fixes(diagnostics, targets).items():
        try:
            original = read_bytes(abspath)
            new = insert_statements(original, edits)
        except Exception:  # a file --fix cannot rewrite has no SARIF fix (--fix reports why)
            continue
        before = original.decode("utf-8", "replace").splitlines(keepends=True)
        after = new.decode("utf-8", "replace").splitlines(keepends=True)
        opcodes = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
        changes = [(i1 + 1, i2 - i1, "".join(after[j1:j2])) for tag, i1, i2, j1, j2 in opcodes
                   if tag in ("insert", "replace")]
        if any(tag == "delete" for tag, *_ in opcodes) or len(changes) != len(edits):
            continue
        for edit, where in zip(edits, changes):  # both in line order, one statement per class
            found[(display[abspath], edit)] = where
    return found


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


# ---- patches git applies ---------------------------------------------------------------

NO_NEWLINE = "\\ No newline at end of file\n"
# git's quote_c_style: these control characters get a letter; the rest of 0x00-0x1f
# and 0x7f (and every byte past ASCII) an octal escape; `"` and `\` a backslash.
_LETTERS = {0x07: "a", 0x08: "b", 0x09: "t", 0x0A: "n", 0x0B: "v", 0x0C: "f", 0x0D: "r", 0x22: '"', 0x5C: "\\"}


def git_lines(data: bytes) -> list[str]:
    """`data`'s lines as git counts them: each up to and including a `\\n` (a lone
    `\\r` stays inside its line), the last one possibly without it."""
    text = data.decode("utf-8", "surrogateescape")
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def quote_path(name: str) -> str:
    """`name` as git writes it in a diff header: as it is when no byte needs quoting,
    else in double quotes with C-style escapes (`"a/tab\\there.py"`)."""
    raw = os.fsencode(name)
    if not any(b < 0x20 or b >= 0x7F or b in _LETTERS for b in raw):
        return name
    out = []
    for b in raw:
        if b in _LETTERS:
            out.append("\\" + _LETTERS[b])
        elif b < 0x20 or b >= 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(chr(b))
    return '"' + "".join(out) + '"'


def file_patch(name: str, old: bytes, new: bytes) -> str:
    """The unified diff (three lines of context) that turns `old` into `new`, for the
    file at `name` (relative to the directory `git apply` runs in, `/` separated);
    "" when they are the same."""
    if old == new:
        return ""
    out = [_header("---", "a/", name), _header("+++", "b/", name)]
    lines = difflib.unified_diff(git_lines(old), git_lines(new), lineterm="\n")
    for number, line in enumerate(lines):
        if number < 2:
            continue  # difflib's own file headers, without names: ours are above
        out.append(line)
        if not line.endswith("\n"):
            out.append("\n" + NO_NEWLINE)
    return "".join(out)


def _header(marker: str, prefix: str, name: str) -> str:
    label = quote_path(prefix + name)
    # git ends the line with a tab when it holds a space (diff.c, emit_diff_symbol), so
    # that `git apply` does not take what follows the name for a timestamp
    tab = "\t" if " " in label else ""
    return f"{marker} {label}{tab}\n"
