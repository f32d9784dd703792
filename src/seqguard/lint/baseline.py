"""A baseline of accepted findings, so a team can adopt seqguard on a large tree and
block only new mistakes. Entries match on file, code, enclosing scope and the
normalised source of the flagged line (whitespace collapsed, comments dropped), never
on line numbers, so they survive unrelated edits; SG001's key also holds the value
the backend inherits and where from, so a parent that flips its flag makes the
finding new. An entry whose finding left its file matches the same finding in another
file (the code moved); one whose finding is still in its file matches nothing else,
so a copy is new. The file is sorted, indented JSON: stable and reviewable; version 1
files are read and migrated."""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import io
import json
import os
import re
import tokenize
from pathlib import Path
from typing import Callable, Iterable, Mapping, Optional, Sequence

from seqguard.config import Config
from seqguard.diagnostics import Diagnostic
from seqguard.fileio import atomic_write, read_file
from seqguard.lint.analysis.source import split_lines
from seqguard.lint.discovery import Target

VERSION = 2
READABLE_VERSIONS = (1, 2)  # 1: no `detail`, comments kept in `source`
_SPACES = re.compile(r"\s+")
_SUPPRESSION = re.compile(r"#\s*seqguard:.*$")


class BaselineError(Exception):
    """The baseline file cannot be read; the message names the file and what to do."""


@dataclasses.dataclass(frozen=True, order=True)
class Key:
    path: str     # relative to the project root, '/'-separated
    code: str
    scope: str
    source: str   # the flagged line, whitespace collapsed, comments removed
    # SG001: what the backend inherits and from where ("True (inherited from
    # AttentionBackend)"); "" for other codes; None in a migrated version-1 entry,
    # which matches any
    detail: Optional[str] = ""

    @property
    def code_key(self) -> tuple:
        """What a move keeps: the key without its file (and without the detail, which a
        migrated entry may lack; the match compares it apart)."""
        return self.code, self.scope, self.source

    @property
    def order(self) -> tuple:
        """How entries are sorted (a migrated entry's detail is None: sorts as "")."""
        return self.path, self.code, self.scope, self.source, self.detail or ""


def normalise(line: str) -> str:
    return _SPACES.sub(" ", _without_comment(line)).strip()


def _without_comment(line: str) -> str:
    """The line without its comment: `#` in a string is kept. A line that does not
    tokenize alone (inside a triple-quoted string) loses only a seqguard comment."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type == tokenize.COMMENT:
                return line[:token.start[1]]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # the tokens before the error were read: no comment among them
    return _SUPPRESSION.sub("", line)


def key_of(diagnostic: Diagnostic, relpath: str, lines: Sequence[str]) -> Key:
    source = lines[diagnostic.line - 1] if 0 < diagnostic.line <= len(lines) else ""
    return Key(relpath, diagnostic.code, diagnostic.scope, normalise(source), diagnostic.detail)


def _read_baseline(path: Path) -> bytes:
    """The baseline's bytes, or the BaselineError that says what to do (a FIFO or
    device given as the baseline must not hang the run)."""
    read = read_file(path)
    if read.kind == "missing":
        raise BaselineError(f"{path}: baseline not found; create it with --write-baseline {path}")
    if read.kind == "not-regular":
        raise BaselineError(f"{path}: not a regular file; pass a JSON file written by --write-baseline")
    if read.data is None:
        raise BaselineError(f"{path}: cannot read the baseline ({read.error.removeprefix('cannot read: ')}); "
                            f"regenerate it with --write-baseline")
    return read.data


def load(path: Path) -> collections.Counter:
    return load_document(path)[0]


def load_document(path: Path) -> tuple[collections.Counter, int]:
    """(entries with their counts, the file's version)."""
    data = _read_baseline(path)
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BaselineError(f"{path}: cannot read the baseline ({e}); regenerate it with --write-baseline") from None
    except RecursionError:
        raise BaselineError(f"{path}: cannot read the baseline (nested too deeply to be one); "
                            f"regenerate it with --write-baseline") from None
    version = document.get("version") if isinstance(document, dict) else None
    if version not in READABLE_VERSIONS or not isinstance(document.get("findings"), list):
        raise BaselineError(f"{path}: expected a seqguard baseline (version {VERSION}); "
                            f"regenerate it with --write-baseline")
    counts: collections.Counter = collections.Counter()
    for entry in document["findings"]:
        try:
            if version == 1:  # comments were kept then; no detail: matches any
                key = Key(entry["path"], entry["code"], entry["scope"], normalise(entry["source"]),
                          None if entry["code"] == "SG001" else "")
            else:
                key = Key(entry["path"], entry["code"], entry["scope"], entry["source"], str(entry.get("detail", "")))
            counts[key] += int(entry.get("count", 1))
        except (KeyError, TypeError, ValueError, AttributeError):
            raise BaselineError(f"{path}: malformed entry {entry!r}; regenerate it with --write-baseline") from None
    return counts, version


def write(path: Path, keys: Iterable[Key]) -> int:
    """Write the baseline; returns how many findings it records. Two findings with the
    same key (two reads on one line) are one entry with `count: 2`, so this is the sum
    of the counts, the number the next run reports as "in the baseline"."""
    counts = collections.Counter(keys)
    findings = [{"path": k.path, "code": k.code, "scope": k.scope, "source": k.source, "count": n,
                 **({"detail": k.detail} if k.detail else {})}
                for k, n in sorted(counts.items(), key=lambda item: item[0].order)]
    text = json.dumps({"version": VERSION, "tool": "seqguard", "findings": findings}, indent=2, sort_keys=True) + "\n"
    try:
        if path.exists() or path.is_symlink():
            atomic_write(str(path), text.encode())
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    except OSError as e:  # a FIFO, a device, a link leading outside or in a loop, a read-only file or folder
        raise BaselineError(f"{path}: cannot write the baseline: {e.strerror or e}") from None
    return sum(counts.values())


def record_in_pyproject(pyproject: Path, value: str) -> str:
    """Set `baseline = value` under `[tool.seqguard]` in `pyproject` (creating the file
    or the table), editing with a TOML round-trip so everything else stays byte for
    byte. Returns what happened: "unchanged", "added" or "updated from '<old>'"."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        original = pyproject.read_bytes().decode("utf-8") if pyproject.exists() else ""
        document = tomlkit.parse(original)
    except (OSError, UnicodeDecodeError, TOMLKitError, RecursionError) as e:
        raise BaselineError(f"{pyproject}: cannot record the baseline there ({e}); add "
                            f'`baseline = "{value}"` under [tool.seqguard] by hand') from None
    tool = document.get("tool")
    if tool is None:
        tool = tomlkit.table(is_super_table=True)
        document["tool"] = tool
    table = tool.get("seqguard")
    created = table is None
    if created:
        table = tomlkit.table()
        tool["seqguard"] = table
    old = table.get("baseline")
    if old == value:
        return "unchanged"
    table["baseline"] = value
    text = tomlkit.dumps(document)
    if created and not text.endswith(f"baseline = {tomlkit.string(value).as_string()}\n"):
        # A new table placed among others (next to [tool.black], say): a blank line after it.
        table.add(tomlkit.nl())
        text = tomlkit.dumps(document)
    if "\r\n" in original:
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    if pyproject.exists():
        atomic_write(str(pyproject), text.encode("utf-8"), expected=original.encode("utf-8"))
    else:
        pyproject.write_text(text, encoding="utf-8")
    return "added" if old is None else f"updated from {str(old)!r}"


@dataclasses.dataclass
class Applied:
    new: list[Diagnostic]           # not in the baseline: these fail
    baselined: int                  # matched, moved ones included
    stale: list[tuple[Key, int]]    # entries (with how many) no finding matched any more
    moved: list[tuple[Key, Diagnostic]] = dataclasses.field(default_factory=list)  # entry, where it is now


def apply(counts: collections.Counter, keyed: Sequence[tuple[Diagnostic, Key]],
          checked_paths: set[str], gone: Callable[[str], bool] = lambda path: False) -> Applied:
    """Subtract baseline entries from findings: first in the entry's own file, then,
    for what is left, a finding with the same code key in another file takes an entry
    whose file no longer has it (a move), when that file was checked in this run or no
    longer exists (`gone`). Entries for files not checked in this run (pre-commit
    passes a few files) are otherwise neither matched nor stale."""
    remaining = collections.Counter(counts)
    unmatched, baselined = [], 0
    for diagnostic, key in keyed:
        match = _take(remaining, key)
        if match is None:
            unmatched.append((diagnostic, key))
        else:
            baselined += 1
    # what left its file, by code key: a move can take it
    left: dict[tuple, list[Key]] = collections.defaultdict(list)
    for k, n in sorted(remaining.items(), key=lambda item: item[0].order):
        if n > 0 and (k.path in checked_paths or gone(k.path)):
            left[k.code_key].append(k)
    new, moved = [], []
    for diagnostic, key in unmatched:
        entry = next((k for k in left.get(key.code_key, ()) if k.path != key.path and remaining[k] > 0
                      and k.detail in (None, key.detail)), None)
        if entry is None:
            new.append(diagnostic)
            continue
        remaining[entry] -= 1
        baselined += 1
        moved.append((entry, diagnostic))
    stale = sorted(((k, n) for k, n in remaining.items() if n > 0 and k.path in checked_paths),
                   key=lambda item: item[0].order)
    return Applied(new, baselined, stale, moved)


def _take(remaining: collections.Counter, key: Key) -> Optional[Key]:
    """Consume the entry for `key` (or a migrated entry without a detail)."""
    for candidate in (key, dataclasses.replace(key, detail=None)):
        if remaining[candidate] > 0:
            remaining[candidate] -= 1
            return candidate
    return None


def read_lines(abspath: str) -> list[str]:
    """A checked file's lines, to key its findings; none when it cannot be read."""
    data = read_file(abspath).data
    return [] if data is None else split_lines(data.decode("utf-8", errors="replace"))


def keyed(diagnostics: Sequence[Diagnostic], targets: Sequence[Target],
          buffers: Optional[Mapping[Path, bytes]] = None,
          lines_of: Optional[dict[str, list[str]]] = None) -> tuple[list[tuple[Diagnostic, Key]], list[Diagnostic]]:
    """(diagnostic, key) for every finding of a checked file, and the findings of no
    checked file (an unreadable path), which no baseline entry can match. A buffered
    file's key is read from the buffer, not from the disk. `lines_of` (abspath -> lines)
    keeps the lines read, for the next call of the run (the baseline, then SARIF)."""
    by_display = {t.display: t for t in targets}
    lines_of = {} if lines_of is None else lines_of
    lines_of.update({t.abspath: split_lines(data.decode("utf-8", "replace"))
                     for t in targets for p, data in (buffers or {}).items() if str(p) == t.display})
    found, loose = [], []
    for diagnostic in diagnostics:
        target = by_display.get(diagnostic.path)
        if target is None:
            loose.append(diagnostic)
            continue
        if target.abspath not in lines_of:
            lines_of[target.abspath] = read_lines(target.abspath)
        found.append((diagnostic, key_of(diagnostic, target.relpath, lines_of[target.abspath])))
    return found, loose


@dataclasses.dataclass
class Written:
    count: int              # findings recorded
    pyproject: Path         # where `baseline = value` belongs
    value: str              # the path recorded there (root-relative when inside the root)
    recorded: str           # record_in_pyproject's answer: "unchanged", "added", "updated from ..."


def write_for(diagnostics: Sequence[Diagnostic], targets: Sequence[Target], path: Path, config: Config) -> Written:
    """`--write-baseline`: record today's findings in `path` and point [tool.seqguard]
    at it. A partial run (a few files) keeps the other files' entries."""
    keys = [key for _, key in keyed(diagnostics, targets)[0]]
    checked = {t.relpath for t in targets}
    if path.exists():
        kept = load(path)
        keys += [k for k, n in kept.items() if k.path not in checked for _ in range(n)]
    count = write(path, keys)
    pyproject = config.source or (config.root / "pyproject.toml")
    relative = os.path.relpath(path.resolve(), config.root)
    value = path.resolve().as_posix() if relative.startswith("..") else Path(relative).as_posix()
    return Written(count, pyproject, value, record_in_pyproject(pyproject, value))


@dataclasses.dataclass
class Filtered:
    diagnostics: list[Diagnostic]   # what is not in the baseline, sorted
    baselined: int
    stale: list[str]                # one line per entry no finding matched any more
    moved: int = 0                  # baselined findings now in another file
    migrated: Optional[str] = None  # a note when the file was an older version


def filter_findings(diagnostics: Sequence[Diagnostic], targets: Sequence[Target], path: Path,
                    buffers: Optional[Mapping[Path, bytes]] = None, root: Optional[Path] = None,
                    lines_of: Optional[dict[str, list[str]]] = None) -> Filtered:
    """`--baseline`: drop the findings the baseline at `path` records. `root`: the
    project root, where an entry's file is looked for when it was not checked."""
    found, loose = keyed(diagnostics, targets, buffers, lines_of)

    def gone(relpath: str) -> bool:  # a file renamed or deleted since the baseline was written
        return root is not None and not os.path.lexists(os.path.join(root, relpath))

    counts, version = load_document(path)
    applied = apply(counts, found, {t.relpath for t in targets}, gone)
    migrated = None if version == VERSION else (
        f"{path}: a version-{version} baseline, read as version {VERSION}; rewrite it with "
        f"--write-baseline to record what each SG001 backend inherits (a flip is then new)")
    stale = []
    for key, count in applied.stale:
        times = f" (x{count})" if count > 1 else ""
        inherits = f" (inherits {key.detail})" if key.detail else ""
        stale.append(f"stale baseline entry{times}: {key.path}: {key.code} in {key.scope}{inherits}: "
                     f"`{key.source}` is no longer found; prune it with --write-baseline")
    return Filtered(sorted(applied.new + loose), applied.baselined, stale, len(applied.moved), migrated)


def fingerprints(diagnostics: Sequence[Diagnostic], targets: Sequence[Target],
                 buffers: Optional[Mapping[Path, bytes]] = None,
                 lines_of: Optional[dict[str, list[str]]] = None) -> dict[int, str]:
    """id(diagnostic) -> a fingerprint for SARIF's `partialFingerprints`, from the key a
    baseline matches on (file, code, scope, normalised source, SG001's detail): stable
    when lines shift; the n-th finding with one key gets `:n` (two reads on identical
    lines stay two alerts)."""
    found, _ = keyed(diagnostics, targets, buffers, lines_of)
    seen: collections.Counter = collections.Counter()
    result = {}
    for diagnostic, key in sorted(found, key=lambda pair: (pair[0].path, pair[0].line, pair[0].column)):
        text = json.dumps([key.path, key.code, key.scope, key.source, key.detail or ""])
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
        result[id(diagnostic)] = f"{digest}:{seen[digest]}"
        seen[digest] += 1
    return result
