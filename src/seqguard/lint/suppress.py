"""`--add-ignore`: put `# seqguard: ignore[CODE]` on every flagged line, merging with a
marker already there (so a second run changes nothing). The comment goes on the line's
own end-of-line whitespace in the libcst tree (a statement's end or a line break inside
brackets); lines that have none (the line ends inside a multi-line string, or continues
with a backslash) are reported instead."""

from __future__ import annotations

import dataclasses
import re
from typing import Iterable, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from seqguard.diagnostics import UNREADABLE_CODE, Diagnostic
from seqguard.fileio import FileChangedError, atomic_write, read_bytes
from seqguard.lint.cst_edits import ReplaceNodes, module_bytes
from seqguard.lint.discovery import Target
from seqguard.lint.facts import SUPPRESSION_MARKER, marker_codes
from seqguard.lint.rules.unused_suppression import UnusedSuppression

# Never suppressed by a marker: SG000 (the file could not be read) and SG007 (an
# unused marker, whose fix is to remove it).
_NOT_SUPPRESSIBLE = (UNREADABLE_CODE, UnusedSuppression.CODE)


@dataclasses.dataclass
class Added:
    count: int                          # (line, code) suppressions written
    problems: list[tuple[str, str]]     # ("warning" | "error", "path[:line]: why"), in the order met


def add_ignores_to_files(diagnostics: Sequence[Diagnostic], targets: Sequence[Target], *,
                         force: bool = False) -> Added:
    """`--add-ignore`: a marker on every flagged line of the checked files. A file
    that changed since it was analysed, or would stop parsing, is left alone."""
    by_display = {t.display: t for t in targets}
    per_file: dict[str, dict[int, set[str]]] = {}
    for d in diagnostics:
        if d.code in _NOT_SUPPRESSIBLE or d.path not in by_display:
            continue
        per_file.setdefault(d.path, {}).setdefault(d.line, set()).add(d.code)
    added = Added(0, [])
    for display, codes in sorted(per_file.items()):
        abspath = by_display[display].abspath
        try:
            original = read_bytes(abspath)
            new, skipped = add_ignores(original, codes)
            added.problems += [("warning", f"{display}:{line}: no suppression added: {why}") for line, why in skipped]
            if new != original:
                compile(new, abspath, "exec")  # never write a file that stops parsing
                atomic_write(abspath, new, expected=original, force=force)
                added.count += len(codes) - len(skipped)
        except (OSError, FileChangedError, SyntaxError, UnicodeDecodeError) as e:
            added.problems.append(("error", f"{display}: suppressions not added: {e}"))
    return added


def add_ignores(data: bytes, codes_by_line: dict[int, Iterable[str]]) -> tuple[bytes, list[tuple[int, str]]]:
    """Returns the new bytes and the lines left alone, with why. Raises SyntaxError
    when the file does not parse."""
    try:
        module = cst.parse_module(data)
    except cst.ParserSyntaxError as e:
        raise SyntaxError(f"cannot parse: {e.message} (line {e.raw_line})") from None
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    line_ends = {rng.start.line: node for node, rng in positions.items() if isinstance(node, cst.TrailingWhitespace)}
    lines = re.split(r"\r\n|\r|\n", module.code)  # where Python splits lines
    skipped: list[tuple[int, str]] = []
    replacements: dict[int, cst.TrailingWhitespace] = {}
    for number, codes in sorted(codes_by_line.items()):
        end = line_ends.get(number)
        if end is None:
            text = lines[number - 1] if 0 < number <= len(lines) else ""
            if text.rstrip().endswith("\\"):
                skipped.append((number, "the line continues with a backslash"))
            elif 0 < number <= len(lines):
                skipped.append((number, "the line ends inside a multi-line string"))
            continue
        wanted = set(codes)
        comment = end.comment.value if end.comment is not None else ""
        existing = SUPPRESSION_MARKER.search(comment)
        if existing:
            have = marker_codes(existing)
            if have is None or wanted <= have:
                continue  # a bare ignore, or one naming these codes, already covers them
            merged = ", ".join(sorted(have | wanted))
            new_comment = comment[: existing.start()] + f"# seqguard: ignore[{merged}]" + comment[existing.end():]
            replacements[id(end)] = end.with_changes(comment=cst.Comment(new_comment))
        else:
            marker = f"# seqguard: ignore[{', '.join(sorted(wanted))}]"
            new_comment = f"{comment}  {marker}" if comment else marker
            whitespace = end.whitespace if comment else cst.SimpleWhitespace("  ")
            replacements[id(end)] = end.with_changes(whitespace=whitespace, comment=cst.Comment(new_comment))
    if not replacements:
        return data, skipped
    return module_bytes(module.visit(ReplaceNodes(replacements)), data), skipped
