"""`--fix` and `--fix --diff`: the fixes each finding carries (`Diagnostic.fix`),
grouped by file, written or shown as a diff, and where each lands (SARIF's `fixes`).
Each fix's statement is inserted into its class body with libcst
(`cst_edits.insert_statements`), so the file's encoding, BOM, line endings,
indentation style and final newline are kept by `Module.bytes` rather than by hand;
libcst loads only when a file is edited or placed (0.2 s of imports a warm SARIF run
does without). Nothing here prints: the CLI prints what these functions return.

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
    from seqguard.lint.cst_edits import failure_reason, insert_statements

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
    from seqguard.lint.cst_edits import failure_reason, insert_statements

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
    except Exception:  # a file --fix cannot rewrite has no SARIF fix (--fix reports why)
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
