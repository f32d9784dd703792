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
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from seqguard.config import CODE_PATTERN, Config, is_preset_path
from seqguard.diagnostics import Diagnostic
from seqguard.fileio import WriteRefused, atomic_write, read_file, resolve_write_target
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
        document = json.loads(data.decode("utf-8"), parse_int=_whole_number)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BaselineError(f"{path}: cannot read the baseline ({e}); regenerate it with --write-baseline") from None
    except RecursionError:
        raise BaselineError(f"{path}: cannot read the baseline (nested too deeply to be one); "
                            f"regenerate it with --write-baseline") from None
    version = document.get("version") if isinstance(document, dict) else None
    if type(version) is not int or version not in READABLE_VERSIONS or not isinstance(document.get("findings"), list):
        raise BaselineError(f"{path}: expected a seqguard baseline (version {VERSION}); "
                            f"regenerate it with --write-baseline")
    counts: collections.Counter = collections.Counter()
    for number, entry in enumerate(document["findings"], 1):
        key, count = _entry(path, number, entry, version)
        counts[key] += count
    return counts, version


# An entry's fields: what each must be, in words for the error, and the test.
_TEXT = ("a string", lambda v: isinstance(v, str))
_FIELDS = {
    "path": ("a path inside the project, relative to its root, such as \"pkg/m.py\"",
             lambda v: isinstance(v, str) and v != "" and "\0" not in v and not os.path.isabs(v)
             and ".." not in PurePosixPath(v).parts),
    "code": ("a rule code such as \"SG002\"", lambda v: isinstance(v, str) and CODE_PATTERN.match(v) is not None),
    "scope": _TEXT,
    "source": _TEXT,
}
_OPTIONAL = {
    "count": ("a whole number of at least 1", lambda v: type(v) is int and v >= 1),
    "detail": _TEXT,
}


def _entry(path: Path, number: int, entry, version: int) -> tuple[Key, int]:
    """One entry's key and count, or the BaselineError naming the file, the entry and
    the field (a hand-edited `"count": Infinity` or `"path": 5` is the file's fault,
    said as such, never a crash later on)."""
    def bad(field: Optional[str], expected: str, value) -> BaselineError:
        shown = "nothing" if value is _MISSING else _json_text(value)
        subject = f"entry {number}{where}" + (f": `{field}`" if field else "")
        return BaselineError(f"{path}: {subject}: expected {expected}, got {shown}; "
                             f"fix the entry or regenerate the baseline with --write-baseline")

    where = ""
    if not isinstance(entry, dict):
        raise bad(None, "an object with path, code, scope and source", entry)
    if isinstance(entry.get("path"), str):
        where = f" ({_json_text(entry['path'])})"
    for field, (expected, valid) in _FIELDS.items():
        value = entry.get(field, _MISSING)
        if not valid(value):
            raise bad(field, expected, value)
    for field, (expected, valid) in _OPTIONAL.items():
        if field in entry and not valid(entry[field]):
            raise bad(field, expected, entry[field])
    if version == 1:  # comments were kept then; no detail: matches any
        key = Key(entry["path"], entry["code"], entry["scope"], normalise(entry["source"]),
                  None if entry["code"] == "SG001" else "")
    else:
        key = Key(entry["path"], entry["code"], entry["scope"], entry["source"], entry.get("detail", ""))
    return key, entry.get("count", 1)


_MISSING = object()


class _LongNumber(str):
    """A whole number spelled with more digits than any count needs: kept as its text,
    so the entry's check names it, where `int()` would stop the whole read (Python
    refuses to convert more than 4,300 digits)."""


def _whole_number(text: str):
    return int(text) if len(text) <= 64 else _LongNumber(text)


def _json_text(value, limit: int = 60) -> str:
    """A value as the file spells it (`Infinity`, `5`, `"x"`), cut short."""
    text = str(value) if isinstance(value, _LongNumber) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def write(path: Path, keys: Iterable[Key] | collections.Counter) -> int:
    """Write the baseline; returns how many findings it records. Two findings with the
    same key (two reads on one line) are one entry with `count: 2`, so this is the sum
    of the counts, the number the next run reports as "in the baseline"."""
    counts = keys if isinstance(keys, collections.Counter) else collections.Counter(keys)
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


@dataclasses.dataclass(frozen=True)
class Setting:
    """A [tool.seqguard] key `--write-baseline` records: the baseline's path, or an
    option of the run that changes what a finding is (so the next run, reading the
    file, finds what the baseline holds)."""
    key: str
    value: Any          # a string or a list of strings, as TOML writes it
    option: str         # the command-line option that gave it (--preset, ...)


@dataclasses.dataclass(frozen=True)
class Recorded:
    line: str           # `key = value`, as written in the file
    outcome: str        # "added", "unchanged" or "updated from <old>"


@dataclasses.dataclass
class PyprojectEdit:
    """What recording settings in a pyproject.toml changes, decided before anything is
    written (a refusal leaves the baseline and the file as they were)."""
    path: Path
    original: Optional[str]   # None: the file is created
    text: str
    recorded: list[Recorded]

    def write(self) -> None:
        try:
            if self.original is None:
                self.path.write_text(self.text, encoding="utf-8")
            elif self.text != self.original:
                atomic_write(str(self.path), self.text.encode("utf-8"), expected=self.original.encode("utf-8"))
        except OSError as e:  # read-only, or a folder that cannot take the temp file
            raise BaselineError(f"{self.path}: cannot record the baseline there ({e.strerror or e}); add "
                                f"{'; '.join(r.line for r in self.recorded)} under [tool.seqguard] by hand") from None


def plan_pyproject(pyproject: Path, root: Path, settings: Sequence[Setting]) -> PyprojectEdit:
    """Set each of `settings` under `[tool.seqguard]` in `pyproject` (creating the file
    or the table), edited with a TOML round-trip so everything else stays byte for byte.
    `baseline` replaces an older value; `extend-exclude` adds its patterns to the
    file's; any other key the file already sets to something else is refused
    (BaselineError), since the next run would read the file's value and not match the
    baseline. A pyproject.toml that is a link to a file outside the project `root` is
    refused too: it is shared beyond this project, whose root-relative paths would be
    wrong there."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    by_hand = "; ".join(f"{s.key} = {tomlkit.item(s.value).as_string()}" for s in settings)
    try:
        if os.path.islink(pyproject):
            resolve_write_target(str(pyproject), str(root))
        original = pyproject.read_bytes().decode("utf-8") if pyproject.exists() else None
        document = tomlkit.parse(original or "")
    except WriteRefused as e:
        raise BaselineError(f"{e}; add {by_hand} under its [tool.seqguard] yourself (nothing written)") from None
    except (OSError, UnicodeDecodeError, TOMLKitError, RecursionError) as e:
        raise BaselineError(f"{pyproject}: cannot record the baseline there ({e}); add {by_hand} under "
                            f"[tool.seqguard] by hand (nothing written)") from None
    tool = document.get("tool")
    if tool is None:
        tool = tomlkit.table(is_super_table=True)
        document["tool"] = tool
    table = tool.get("seqguard")
    created = table is None
    if created:
        table = tomlkit.table()
        tool["seqguard"] = table
    recorded = []
    for setting in settings:
        old = table.get(setting.key)
        old = old.unwrap() if hasattr(old, "unwrap") else old
        value = setting.value
        if setting.key == "extend-exclude" and isinstance(old, list):
            value = old + [p for p in value if p not in old]
        line = f"{setting.key} = {tomlkit.item(value).as_string()}"
        if old is not None and _same(setting.key, old, value, root):
            recorded.append(Recorded(line, "unchanged"))
            continue
        if old is not None and setting.key not in ("baseline", "extend-exclude"):
            raise BaselineError(
                f"{_shown_path(pyproject)}: [tool.seqguard] has {setting.key} = {tomlkit.item(old).as_string()}, "
                f"this run's {setting.option} gives {line}: the next run would read the file's and not match "
                f"the baseline; write {line} there, or rerun without {setting.option} (nothing written)")
        table[setting.key] = value
        recorded.append(Recorded(line, "added" if old is None else f"updated from {tomlkit.item(old).as_string()}"))
    text = tomlkit.dumps(document)
    if created and settings and not text.endswith(f"{recorded[-1].line}\n"):
        # A new table placed among others (next to [tool.black], say): a blank line after it.
        table.add(tomlkit.nl())
        text = tomlkit.dumps(document)
    if original is not None and "\r\n" in original:
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    return PyprojectEdit(pyproject, original, text, recorded)


def _same(key: str, old, new, root: Path) -> bool:
    """The file's value means what this run's does (a preset path spelled another way
    names the same file)."""
    if key == "preset" and isinstance(old, str) and isinstance(new, str) and is_preset_path(old) \
            and is_preset_path(new):
        return os.path.normpath(os.path.join(root, old)) == os.path.normpath(os.path.join(root, new))
    return old == new


def _shown_path(path: Path) -> str:
    """A path as findings are shown: relative to the current directory."""
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive
        return str(path)


def root_relative(path: str, root: str, what: str, pathmod=os.path) -> str:
    """`path` as [tool.seqguard] names it: relative to the project root, '/'-separated
    (`../shared/b.json` too), never an absolute path of this machine (the file is
    committed). A path no relative path can reach (another drive than the root's, on
    Windows) is a BaselineError saying so, before anything is written. `pathmod`: the
    platform's path rules (ntpath in the tests of other drives)."""
    try:
        relative = pathmod.relpath(path, root)
    except ValueError:
        raise BaselineError(f"{what} {path}: on another drive than the project root {root}, so "
                            f"[tool.seqguard] cannot name it relative to the root (it is committed, and an "
                            f"absolute path holds only on this machine); put it on the root's drive "
                            f"(nothing written)") from None
    return relative.replace(pathmod.sep, "/")


@dataclasses.dataclass
class Applied:
    new: list[Diagnostic]           # not in the baseline: these fail
    baselined: int                  # matched, moved ones included
    stale: list[tuple[Key, int]]    # entries (with how many) no finding matched any more
    moved: list[tuple[Key, Diagnostic]] = dataclasses.field(default_factory=list)  # entry, where it is now


def apply(counts: collections.Counter, keyed: Sequence[tuple[Diagnostic, Key]],
          checked_paths: set[str], gone: Callable[[str], bool] = lambda path: False,
          config: Optional[Config] = None) -> Applied:
    """Subtract baseline entries from findings: first in the entry's own file, then,
    for what is left, a finding with the same code key in another file takes an entry
    whose file no longer has it (a move), when that file was checked in this run or no
    longer exists (`gone`). Entries for files not checked in this run (pre-commit
    passes a few files), and of codes not checked there (`config`'s select, ignore and
    per-file-ignores), are otherwise neither matched nor stale."""
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
    stale = sorted(((k, n) for k, n in remaining.items() if n > 0 and covered(k, checked_paths, config)),
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
    count: int                  # findings recorded
    pyproject: Path             # where the settings belong
    recorded: list[Recorded]    # each setting and what happened to it


def write_for(diagnostics: Sequence[Diagnostic], targets: Sequence[Target], path: Path, config: Config,
              settings: Sequence[Setting] = ()) -> Written:
    """`--write-baseline`: record today's findings in `path`, and in [tool.seqguard] the
    baseline's path (root-relative) with `settings`, the options of this run that change
    what a finding is, so the next run reads them. A restricted run (a few files,
    --select, --ignore, per-file-ignores, exclusions) keeps the entries it did not
    check. Nothing is written when the settings cannot be recorded."""
    root = str(config.root)
    # the baseline's folder resolved, its own name kept (a link is recorded as named)
    where = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(path))), path.name)
    settings = [Setting("baseline", root_relative(where, root, "--write-baseline"), "--write-baseline"),
                *(dataclasses.replace(s, value=root_relative(s.value, root, "--preset"))
                  if s.key == "preset" and os.path.isabs(s.value) else s for s in settings)]
    pyproject = config.source or (config.root / "pyproject.toml")
    edit = plan_pyproject(pyproject, config.root, settings)
    counts = collections.Counter(key for _, key in keyed(diagnostics, targets)[0])
    if path.exists():
        checked = {t.relpath for t in targets}
        counts.update({k: n for k, n in load(path).items() if not covered(k, checked, config)})
    count = write(path, counts)
    edit.write()
    return Written(count, pyproject, edit.recorded)


def covered(key: Key, checked_paths: set[str], config: Optional[Config]) -> bool:
    """Whether this run checked what `key` records: its file was read and its code
    enabled there (--select, --ignore, per-file-ignores). What a run did not check is
    neither stale nor pruned."""
    return key.path in checked_paths and (config is None or config.is_code_enabled(key.code, key.path))


@dataclasses.dataclass
class Filtered:
    diagnostics: list[Diagnostic]   # what is not in the baseline, sorted
    baselined: int
    stale: list[str]                # one line per entry no finding matched any more
    moved: int = 0                  # baselined findings now in another file
    migrated: Optional[str] = None  # a note when the file was an older version


def filter_findings(diagnostics: Sequence[Diagnostic], targets: Sequence[Target], path: Path,
                    buffers: Optional[Mapping[Path, bytes]] = None, root: Optional[Path] = None,
                    lines_of: Optional[dict[str, list[str]]] = None, config: Optional[Config] = None) -> Filtered:
    """`--baseline`: drop the findings the baseline at `path` records. `root`: the
    project root, where an entry's file is looked for when it was not checked;
    `config`: the run's codes per file, so an entry of a code not checked is not stale."""
    found, loose = keyed(diagnostics, targets, buffers, lines_of)

    def gone(relpath: str) -> bool:  # a file renamed or deleted since the baseline was written
        return root is not None and not os.path.lexists(os.path.join(root, relpath))

    counts, version = load_document(path)
    applied = apply(counts, found, {t.relpath for t in targets}, gone, config)
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
