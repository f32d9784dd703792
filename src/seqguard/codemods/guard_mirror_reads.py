"""Guard every read of a host mirror that lint reports (SG002/SG003) so it survives
`None`, without changing behaviour when the mirror is present.

Three kinds of site:
- maintenance: the mirror is updated from itself and stored back. Wrapped in
  `if <mirror> is not None:` so an absent mirror stays absent (and, when the stored
  value mixes several mirrors, set to None if any is absent). No host sync.
- consumer: a value is computed from the mirror. The read becomes
  `(m if m is not None else <fallback>)`, the fallback computing the same value from
  the device tensor on the same object (a host sync, reported), or a clear error
  (`--fallback raise`).
- pass-through: handed on unchanged; lint does not report it and nothing changes.

Positions come from the lint matcher (`ast`); edits are made on the exact source
lines, so every byte outside the guarded statements is preserved.
"""

from __future__ import annotations

import ast
import dataclasses
import warnings
from typing import Iterable, Optional, Sequence

from seqguard.codemods.source_text import SourceText, line_ending
from seqguard.lint.model import MirrorAccess

MAINTENANCE = "maintenance"
CONSUMER = "consumer"
HELPER_MODULE = "seqguard.runtime.fallback"


@dataclasses.dataclass(frozen=True)
class CodemodOptions:
    style: str = "inline"               # inline | helper
    fallback: str = "device"            # device | raise
    device_attribute: str = "seq_lens"
    mirrors: tuple[str, ...] = ("seq_lens_cpu", "seq_lens_sum")
    templates: tuple[tuple[str, str], ...] = ()   # attr -> "expression using {obj}"


@dataclasses.dataclass(frozen=True)
class Site:
    line: int
    column: int
    kind: str
    subject: str
    host_sync: bool     # the guard falls back to a device-to-host copy


@dataclasses.dataclass
class FileOutcome:
    status: str                          # changed | unchanged | skipped
    new_data: Optional[bytes] = None
    sites: list[Site] = dataclasses.field(default_factory=list)
    manual: list[tuple[int, str]] = dataclasses.field(default_factory=list)  # (line, why) left as is
    reason: Optional[str] = None


class _Edits:
    def __init__(self) -> None:
        self.spans: list[tuple[int, int, int, str]] = []   # (line, start, end, text)
        self.blocks: list[tuple[int, int, list[str]]] = []  # (first, last, replacement lines)
        self.insert_before: dict[int, list[str]] = {}


def guard_mirror_reads(data: bytes, reads: Sequence[MirrorAccess], options: CodemodOptions) -> FileOutcome:
    if not reads:
        return FileOutcome("unchanged")
    try:
        source = SourceText.decode(data)
    except (UnicodeDecodeError, SyntaxError, LookupError) as e:
        return FileOutcome("skipped", reason=f"cannot decode: {e}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source.text)
    except (SyntaxError, ValueError) as e:
        return FileOutcome("skipped", reason=f"cannot parse: {e}")
    planner = _Planner(source, tree, options)
    for statement, group in _by_statement(tree, reads):
        planner.plan(statement, group)
    if not planner.sites:
        return FileOutcome("unchanged", manual=planner.manual)
    new_source = planner.apply()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(new_source.text, "<seqguard>", "exec", dont_inherit=True)
    except SyntaxError as e:  # never write code that does not compile
        return FileOutcome("skipped", reason=f"internal: the guarded file would not compile ({e.msg}, "
                                             f"line {e.lineno}); please report this")
    return FileOutcome("changed", new_source.encode(), planner.sites, planner.manual)


def _statements(tree: ast.AST) -> list[ast.stmt]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]


def _contains(node: ast.AST, line: int, col: int) -> bool:
    return (node.lineno, node.col_offset) <= (line, col) <= (node.end_lineno, node.end_col_offset)


def _by_statement(tree: ast.AST, reads: Sequence[MirrorAccess]) -> list[tuple[ast.stmt, list[MirrorAccess]]]:
    statements = _statements(tree)
    groups: dict[int, tuple[ast.stmt, list[MirrorAccess]]] = {}
    for read in reads:
        holders = [s for s in statements if _contains(s, read.line, read.col)]
        if not holders:
            continue
        innermost = min(holders, key=lambda s: (s.end_lineno - s.lineno, s.end_col_offset - s.col_offset))
        groups.setdefault(id(innermost), (innermost, []))[1].append(read)
    return sorted(groups.values(), key=lambda g: (g[0].lineno, g[0].col_offset))


def _object_of(read: MirrorAccess) -> Optional[str]:
    """The expression the mirror hangs on (`fb` for `fb.seq_lens_cpu`, also via an alias)."""
    source = read.alias_of if read.alias_of is not None else read.subject
    if "." not in source:
        return None
    return source.rsplit(".", 1)[0]


def _is_pure(expression: str) -> bool:
    """Evaluating it twice is harmless: names, attributes, constant subscripts."""
    try:
        node = ast.parse(expression, mode="eval").body
    except SyntaxError:
        return False
    for sub in ast.walk(node):
        if not isinstance(sub, (ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.Load)):
            return False
    return True


class _Planner:
    def __init__(self, source: SourceText, tree: ast.Module, options: CodemodOptions) -> None:
        self.source = source
        self.tree = tree
        self.options = options
        self.templates = dict(options.templates)
        self.edits = _Edits()
        self.sites: list[Site] = []
        self.manual: list[tuple[int, str]] = []
        self.helpers_used: set[str] = set()

    # ---- planning ----------------------------------------------------------------
    def plan(self, statement: ast.stmt, reads: list[MirrorAccess]) -> None:
        for read in reads:
            if not _is_pure(read.subject):
                self._leave(reads, "the mirror's object is computed (a call); guard it by hand")
                return
        if self._is_maintenance(statement, reads):
            self._plan_maintenance(statement, reads)
        elif self.options.fallback == "raise":
            self._plan_raise(statement, reads)
        else:
            self._plan_consumer(reads)

    def _leave(self, reads: Iterable[MirrorAccess], why: str) -> None:
        for read in reads:
            self.manual.append((read.line, why))

    def _is_mirror_target(self, node: ast.AST, subjects: set[str]) -> bool:
        if isinstance(node, ast.Subscript):
            node = node.value
        if isinstance(node, ast.Attribute) and node.attr in self.options.mirrors:
            return True
        return isinstance(node, ast.Name) and node.id in subjects

    def _is_maintenance(self, statement: ast.stmt, reads: list[MirrorAccess]) -> bool:
        subjects = {r.subject for r in reads}
        if isinstance(statement, ast.AugAssign):
            return self._is_mirror_target(statement.target, subjects)
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            return all(self._is_mirror_target(t, set()) or
                       (isinstance(t, ast.Subscript) and self._is_mirror_target(t, subjects)) for t in targets)
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            func = statement.value.func
            return (isinstance(func, ast.Attribute) and func.attr.endswith("_") and not func.attr.startswith("_")
                    and self._is_mirror_target(func.value, subjects))
        return False

    def _whole_lines(self, statement: ast.stmt) -> Optional[str]:
        """Why `statement` cannot be re-indented as whole lines, or None if it can."""
        first = self.source.lines[statement.lineno - 1]
        last = self.source.lines[statement.end_lineno - 1]
        before = first[: self.source.column(statement.lineno, statement.col_offset)]
        after = last[self.source.column(statement.end_lineno, statement.end_col_offset):].strip()
        if before.strip():
            return "the statement shares its line with other code"
        if after and not after.startswith("#"):
            return "the statement shares its line with other code"
        for node in ast.walk(statement):
            if isinstance(node, (ast.Constant, ast.JoinedStr)) and node.lineno != node.end_lineno \
                    and isinstance(getattr(node, "value", ""), (str, bytes, list)):
                return "a multi-line string would change if re-indented"
        if first.lstrip().startswith("elif"):
            return "an elif test"
        return None

    def _indentation(self, statement: ast.stmt) -> tuple[str, str]:
        """The statement's indentation, and the unit a block nested under it adds."""
        first_line = self.source.lines[statement.lineno - 1]
        indent = first_line[: len(first_line) - len(first_line.lstrip())]
        return indent, "\t" if "\t" in indent else "    "

    def _plan_maintenance(self, statement: ast.stmt, reads: list[MirrorAccess]) -> None:
        why = self._whole_lines(statement)
        if why:
            self._leave(reads, why)
            return
        subjects = list(dict.fromkeys(r.subject for r in sorted(reads, key=lambda r: (r.line, r.col))))
        indent, unit = self._indentation(statement)
        newline = self.source.newline
        condition = " and ".join(f"{s} is not None" for s in subjects)
        body = [unit + line if line.strip() else line
                for line in self.source.lines[statement.lineno - 1: statement.end_lineno]]
        body[-1] = body[-1] if line_ending(body[-1]) else body[-1] + newline
        block = [f"{indent}if {condition}:{newline}", *body]
        target = self._stored_mirror(statement)
        if target is not None and set(subjects) != {target}:
            # The stored value mixes several mirrors: if any is absent, so is the result.
            block += [f"{indent}else:{newline}", f"{indent}{unit}{target} = None{newline}"]
        if not line_ending(self.source.lines[statement.end_lineno - 1]):
            block[-1] = block[-1][: -len(newline)]
        self.edits.blocks.append((statement.lineno, statement.end_lineno, block))
        for read in reads:
            self.sites.append(Site(read.line, read.col + 1, MAINTENANCE, read.subject, host_sync=False))

    def _stored_mirror(self, statement: ast.stmt) -> Optional[str]:
        targets = []
        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
            targets = [statement.target]
        names = [ast.unparse(t) for t in targets if isinstance(t, ast.Attribute) and t.attr in self.options.mirrors]
        return names[0] if len(names) == 1 and len(targets) == 1 else None

    def _fallback_expression(self, read: MirrorAccess) -> Optional[str]:
        obj = _object_of(read)
        if obj is None:
            return None
        device = f"{obj}.{self.options.device_attribute}"
        if self.options.style == "helper":
            helper = "host_seq_lens_sum" if read.attr.endswith("_sum") else "host_seq_lens"
            self.helpers_used.add(helper)
            return f"{helper}({read.subject}, {device})"
        template = self.templates.get(read.attr)
        if template is None:
            template = "int({obj}.{device}.sum())" if read.attr.endswith("_sum") else "{obj}.{device}.cpu()"
        fallback = template.format(obj=obj, device=self.options.device_attribute)
        return f"({read.subject} if {read.subject} is not None else {fallback})"

    def _plan_consumer(self, reads: list[MirrorAccess]) -> None:
        for read in reads:
            if read.line != read.end_line:
                self._leave([read], "the read spans several lines")
                continue
            replacement = self._fallback_expression(read)
            if replacement is None:
                self._leave([read], "no object to take the device lengths from")
                continue
            start = self.source.column(read.line, read.col)
            end = self.source.column(read.line, read.end_col)
            self.edits.spans.append((read.line, start, end, replacement))
            self.sites.append(Site(read.line, read.col + 1, CONSUMER, read.subject, host_sync=True))

    def _plan_raise(self, statement: ast.stmt, reads: list[MirrorAccess]) -> None:
        why = self._whole_lines(statement)
        if why:
            self._leave(reads, why)
            return
        indent, unit = self._indentation(statement)
        newline = self.source.newline
        lines = []
        for subject in dict.fromkeys(r.subject for r in reads):
            message = (f"{subject} is None: no active attention backend declares needs_cpu_seq_lens = True; "
                       f"set it on the backend that needs the host mirror")
            lines += [f"{indent}if {subject} is None:{newline}",
                      f"{indent}{unit}raise RuntimeError({message!r}){newline}"]
        self.edits.insert_before.setdefault(statement.lineno, []).extend(lines)
        for read in reads:
            self.sites.append(Site(read.line, read.col + 1, CONSUMER, read.subject, host_sync=False))

    # ---- applying ----------------------------------------------------------------
    def apply(self) -> SourceText:
        lines = list(self.source.lines)
        for line, start, end, text in sorted(self.edits.spans, reverse=True):
            content = lines[line - 1]
            lines[line - 1] = content[:start] + text + content[end:]
        line_edits = [(first, last, block) for first, last, block in self.edits.blocks]
        line_edits += [(line, line - 1, block) for line, block in self.edits.insert_before.items()]
        for first, last, block in sorted(line_edits, key=lambda e: (e[0], e[1]), reverse=True):
            lines[first - 1: last] = block
        if self.helpers_used:
            self._insert_helper_import(lines)
        return dataclasses.replace(self.source, lines=lines)

    def _insert_helper_import(self, lines: list[str]) -> None:
        names = ", ".join(sorted(self.helpers_used))
        statement = f"from {HELPER_MODULE} import {names}"
        body = self.tree.body
        index = 0
        while index < len(body) and (
                (index == 0 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                 and isinstance(body[0].value.value, str))
                or (isinstance(body[index], ast.ImportFrom) and body[index].module == "__future__")):
            index += 1
        if index < len(body):
            # Every edit is at or below the first ordinary statement (a docstring or a
            # __future__ import holds no mirror read), so its line number still holds.
            at = body[index].lineno - 1
        else:
            at = len(lines)
            if lines and not line_ending(lines[-1]):
                lines[-1] += self.source.newline
        lines.insert(at, statement + self.source.newline)
