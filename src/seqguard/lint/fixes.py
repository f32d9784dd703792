"""`--fix` and `--fix --diff`: the fixes each finding carries (`Diagnostic.fix`),
grouped by file, written or shown as a diff, and where each lands (SARIF's `fixes`).
Each fix's statement is inserted into its class body with libcst
(`cst_edits.insert_statements`), so the file's encoding, BOM, line endings,
indentation style and final newline are kept by `Module.bytes` rather than by hand;
libcst loads only when a file is edited or placed (0.2 s of imports a warm SARIF run
does without). Nothing here prints: the CLI prints what these functions return."""

from __future__ import annotations

import dataclasses
import difflib
from typing import Optional, Sequence

from seqguard.diagnostics import Diagnostic
from seqguard.fileio import FileChangedError, atomic_write, read_bytes
from seqguard.lint.cache import PlacementCache, stat_of
from seqguard.lint.discovery import Target

Placement = tuple[int, int, str]   # (line, lines replaced from there, the text written)


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
    from seqguard.lint.cst_edits import insert_statements

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
    from seqguard.lint.cst_edits import insert_statements

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
        before = original.decode("utf-8", "replace").splitlines(keepends=True)
        after = new.decode("utf-8", "replace").splitlines(keepends=True)
        # git's headers, relative to the project root: `git apply` there takes the diff
        name = relpaths[abspath]
        chunks.extend(difflib.unified_diff(before, after, fromfile=f"a/{name}", tofile=f"b/{name}"))
        shown.count += len(edits)
    shown.text = "".join(chunks)
    return shown


def file_placements(abspath: str, edits: list[tuple[int, str]]) -> list[Placement]:
    """Where `apply_fixes` really puts each of `edits` (in order) in the file: (line, how
    many lines from there it replaces, the exact text it writes there). A class body
    that was only `pass` loses it, else nothing is replaced; the text has the class
    body's indentation and the file's line ending. Read from the file as `--diff` would
    show it; none when the file cannot be read or fixed (SARIF then has no `fixes`)."""
    from seqguard.lint.cst_edits import insert_statements

    try:
        original = read_bytes(abspath)
        new = insert_statements(original, edits)
    except (OSError, UnicodeDecodeError, SyntaxError):
        return []
    before = original.decode("utf-8", "replace").splitlines(keepends=True)
    after = new.decode("utf-8", "replace").splitlines(keepends=True)
    opcodes = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
    changes = [(i1 + 1, i2 - i1, "".join(after[j1:j2])) for tag, i1, i2, j1, j2 in opcodes
               if tag in ("insert", "replace")]
    if any(tag == "delete" for tag, *_ in opcodes) or len(changes) != len(edits):
        return []
    return changes  # in line order, as `edits`: one statement per class


def exact_placements(diagnostics: Sequence[Diagnostic], targets: Sequence[Target],
                     cache: Optional[PlacementCache] = None) -> dict[tuple[str, tuple[int, str]], Placement]:
    """(path shown, fix) -> where `apply_fixes` puts the fix (`file_placements`), for
    SARIF. Placing parses the file with libcst (8 s for the 22 files with fixes in
    sglang 0.5.23), so a file's placements are kept in `cache` under its stat key: a
    warm SARIF run then parses nothing, as a warm run of any other format."""
    by_abspath = {t.abspath: t for t in targets}
    found: dict[tuple[str, tuple[int, str]], Placement] = {}
    for abspath, edits in planned_fixes(diagnostics, targets).items():
        target = by_abspath[abspath]
        stat = stat_of(abspath)  # before the file is read: an edit after it changes the key
        placed = cache.get(target.relpath, stat, edits) if cache is not None else None
        if placed is None:
            placed = file_placements(abspath, edits)
            if cache is not None:
                cache.put(target.relpath, stat, edits, placed)
        for edit, where in zip(edits, placed):
            found[(target.display, edit)] = where
    if cache is not None:
        cache.save()
    return found
