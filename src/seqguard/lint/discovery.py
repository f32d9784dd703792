"""Which files to read: the project (for the index) and the ones to report on."""

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path
from typing import Collection, Mapping, Optional, Sequence

from seqguard.config import DEFAULT_EXCLUDED_DIRS, Config
from seqguard.fileio import file_kind, is_temp_name, sweep_stale_temp_files


@dataclasses.dataclass
class Target:
    abspath: str
    relpath: str      # relative to the project root, '/'-separated
    display: str      # as the user gave it, or relative to the current directory
    explicit: bool    # named on the command line (always parsed)

    def show(self, relpath: str, root) -> str:
        """A root-relative path of the project as this target's own path is shown
        (relative to the current directory, as given on the command line); as it is
        without a root."""
        if relpath == self.relpath:
            return self.display
        return relpath if root is None else shown_from_root(relpath, root)


def shown_from_root(relpath: str, root) -> str:
    """A root-relative path as a path from the current directory (how findings and
    graphs name files)."""
    return os.path.relpath(os.path.join(str(root), relpath)).replace(os.sep, "/")


@dataclasses.dataclass
class Discovery:
    project: dict[str, str]           # relpath -> abspath of every project Python file
    targets: list[Target]             # files to report on
    problems: list[tuple[str, str]]   # (display path, message) for missing paths
    warnings: list[str]


@dataclasses.dataclass
class WalkIssues:
    """What a walk met besides Python files; each is reported once by the caller."""
    special: list[tuple[str, str]] = dataclasses.field(default_factory=list)      # (rel, what it is)
    unreadable: list[tuple[str, str]] = dataclasses.field(default_factory=list)   # (rel folder, why)
    temp_files: list[tuple[str, str]] = dataclasses.field(default_factory=list)   # (rel folder, name)


# What a file named on the command line must be to be read as Python: a name ending in
# one of these, or a python shebang (pre-commit's `types: [python]`, through identify,
# passes extensionless scripts that start `#!/usr/bin/env python3`).
PYTHON_SUFFIXES = (".py", ".pyi")
PYTHON_INTERPRETERS = frozenset({"python", "python2", "python3"})  # identify's, versions stripped
NOT_PYTHON = "not a Python file (its name does not end in .py or .pyi, and it has no python shebang)"


def is_python_file(path: str) -> bool:
    """Whether a file named on the command line is Python (PYTHON_SUFFIXES or a python
    shebang). `path` is a regular file (the caller stat'ed it); a file that cannot be
    opened counts as Python, so its read gives the one clear error."""
    if path.endswith(PYTHON_SUFFIXES):
        return True
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return True
    try:
        first = os.read(fd, 1024).split(b"\n", 1)[0]
    except OSError:
        return True
    finally:
        os.close(fd)
    return is_python_shebang(first)


def is_python_shebang(line: bytes) -> bool:
    """`#!/usr/bin/python3.11`, `#!/usr/bin/env python3 -u`, `#!/usr/bin/env -S python -X dev`:
    the interpreter's name, its version stripped a dot at a time, is python's (as
    identify reads a shebang)."""
    if not line.startswith(b"#!"):
        return False
    words = line[2:].decode("utf-8", "replace").split()
    if words[:1] and os.path.basename(words[0]) == "env":
        words = words[2:] if words[1:2] == ["-S"] else words[1:]
    name = os.path.basename(words[0]) if words else ""
    while name:
        if name in PYTHON_INTERPRETERS:
            return True
        name = name.rpartition(".")[0]
    return False


def walk_python_files(top: str, issues: Optional[WalkIssues] = None):
    """Yield paths of regular Python files under `top`, relative to it, '/'-separated,
    sorted. Symlinked directories are not followed, so a symlink loop cannot trap the
    walk; a `.py` that is a FIFO, socket or device (or a link to one) is never yielded
    (opening a FIFO blocks forever, `/dev/zero` never ends) but noted in `issues`, as
    are folders that cannot be listed and temporary files a killed run left behind."""
    stack = [""]
    while stack:
        prefix = stack.pop()
        try:
            with os.scandir(os.path.join(top, prefix) if prefix else top) as it:
                entries = sorted(it, key=lambda e: e.name, reverse=True)
        except OSError as e:
            if issues is not None:
                issues.unreadable.append((prefix or ".", e.strerror or str(e)))
            continue
        for entry in entries:
            name = entry.name
            rel = f"{prefix}/{name}" if prefix else name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                if name not in DEFAULT_EXCLUDED_DIRS and not name.endswith(".egg-info"):
                    stack.append(rel)
            elif name.endswith(".py"):
                try:
                    # d_type answers for plain entries; only symlinks cost a stat
                    regular = entry.is_file()
                    kind = "" if regular else file_kind(entry.stat().st_mode)
                except OSError:
                    regular = True  # a broken link or loop: reading it gives the one clear error
                if regular:
                    yield rel
                elif issues is not None:
                    issues.special.append((rel, kind))
            elif issues is not None and is_temp_name(name):
                issues.temp_files.append((prefix, name))


def _relpath(abspath: str, root: str) -> str:
    if abspath.startswith(root + os.sep):
        return abspath[len(root) + 1:].replace(os.sep, "/")
    return os.path.relpath(abspath, root).replace(os.sep, "/")


def _shown(abspath: str) -> str:
    """A path as a user reads it: relative to the current directory when below it."""
    rel = os.path.relpath(abspath)
    return abspath if rel.startswith("..") else rel


def discover(paths: list[Path], config: Config, index_project: bool = True,
             started_ns: Optional[int] = None) -> Discovery:
    root = str(config.root)
    project: dict[str, str] = {}
    issues = WalkIssues()
    walked: list[tuple[str, WalkIssues]] = []   # (abspath of the walked top, what it met)
    if index_project:
        for rel in walk_python_files(root, issues):
            if config.is_path_included(rel):
                project[rel] = f"{root}/{rel}"
        walked.append((root, issues))
    targets: list[Target] = []
    problems: list[tuple[str, str]] = []
    warnings: list[str] = []
    requested: list[str] = []   # absolute folders named on the command line
    reported: set[str] = set()  # special files and folders already given their line
    seen: dict[str, Target] = {}
    for given in paths:
        text = str(given)
        if not os.path.lexists(text):
            problems.append((text, "path not found; check the spelling or run from the project root"))
            continue
        if os.path.isdir(text):
            top = os.path.abspath(text)
            requested.append(top)
            prefix = _relpath(top, root) if top != root else ""
            if index_project and (prefix == "" or not prefix.startswith("..")):
                start = prefix + "/" if prefix else ""
                below = [(rel, rel[len(start):]) for rel in project if rel.startswith(start)]
                found_any = bool(below) or any(True for _ in walk_python_files(top))
            else:
                below = []
                outside = WalkIssues()
                for inner in walk_python_files(top, outside):
                    rel = _relpath(os.path.join(top, inner), root)
                    if config.is_path_included(rel):
                        below.append((rel, inner))
                        project.setdefault(rel, os.path.join(top, inner))
                walked.append((top, outside))
                found_any = bool(below)
            if not found_any and not _has_unreadable(walked, top):
                warnings.append(f"{text}: no Python files found")
            here = os.path.normpath(text) == "."   # `seqguard lint .`: shown as found
            for rel, inner in below:
                abspath = project[rel]
                if abspath in seen:
                    continue
                display = inner if here else os.path.normpath(os.path.join(text, inner))
                seen[abspath] = Target(abspath, rel, display, False)
                targets.append(seen[abspath])
            continue
        abspath = os.path.abspath(text)
        rel = _relpath(abspath, root)
        if abspath in seen:
            seen[abspath].explicit = True  # named as well as found under a directory
            continue
        if not config.is_path_included(rel):
            continue  # excluded in config: pre-commit passes files the user chose to skip
        try:
            mode = os.stat(abspath).st_mode   # follows a symlink: the target decides
        except OSError as e:
            problems.append((text, f"cannot read: {e.strerror or e}"))
            continue
        if not stat.S_ISREG(mode):
            if abspath not in reported:
                reported.add(abspath)
                warnings.append(f"{text}: {file_kind(mode)}, not a regular file; skipped")
            continue
        if not is_python_file(abspath):
            continue  # METADATA, pyproject.toml: `exclusion_warnings` says why
        project.setdefault(rel, abspath)
        seen[abspath] = Target(abspath, rel, text, True)
        targets.append(seen[abspath])
    _report_walk_issues(walked, requested, root, config, problems, warnings, reported)
    _sweep(walked, started_ns)
    return Discovery(project, targets, problems, warnings)


def _has_unreadable(walked: list[tuple[str, WalkIssues]], folder: str) -> bool:
    return any(_below(os.path.join(top, rel), folder) for top, w in walked for rel, _ in w.unreadable)


def _below(path: str, folder: str) -> bool:
    path, folder = os.path.normpath(path), os.path.normpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _report_walk_issues(walked: list[tuple[str, WalkIssues]], requested: list[str], root: str, config: Config,
                        problems: list[tuple[str, str]], warnings: list[str], reported: set[str]) -> None:
    """Each special file and unreadable folder once. A folder that cannot be listed
    under a folder the user asked for is an error (its files go unchecked: exit 1,
    never a quiet "no Python files found"); elsewhere it only leaves the index short."""
    for top, issues in walked:
        for rel, kind in issues.special:
            abspath = os.path.normpath(os.path.join(top, rel))
            if abspath in reported or not config.is_path_included(_relpath(abspath, root)):
                continue
            reported.add(abspath)
            warnings.append(f"{_shown(abspath)}: {kind}, not a regular file; skipped")
        for rel, why in issues.unreadable:
            abspath = os.path.normpath(os.path.join(top, rel))
            if abspath in reported or not config.is_path_included(_relpath(abspath, root)):
                continue
            reported.add(abspath)
            if any(_below(abspath, folder) for folder in requested):
                problems.append((_shown(abspath), (f"cannot list folder: {why}; its files were not checked "
                                                   "(fix its permissions or exclude it)")))
            else:
                warnings.append(f"{_shown(abspath)}: cannot list folder: {why}; its files are not indexed")


def _sweep(walked: list[tuple[str, WalkIssues]], started_ns: Optional[int]) -> None:
    """Temporary files a killed codemod left (`kill -9` runs no cleanup) go now."""
    by_folder: dict[str, list[str]] = {}
    for top, issues in walked:
        for prefix, name in issues.temp_files:
            by_folder.setdefault(os.path.join(top, prefix) if prefix else top, []).append(name)
    for folder, names in by_folder.items():
        sweep_stale_temp_files(folder, names, started_ns)


def exclusion_warnings(paths: Sequence[Path], config: Config, checked: Optional[Sequence[str]] = None,
                       folders: bool = True, named_by: Optional[Mapping[tuple[str, str], str]] = None,
                       buffered: Collection[Path] = ()) -> list[str]:
    """A path named on the command line that exclusion skips, or a file that is not
    Python, gets one line saying why, instead of a silent "0 files checked" or a
    non-Python file parsed as Python (pre-commit passes such files too). A buffered path
    (`lint - --stdin-filename`) is Python whatever its name.
    `checked`: absolute paths of the files checked; a folder holding one of them is not
    walked again (on a large tree that walk would cost as much as discovery); with
    `folders=False` no folder is. `named_by`: (key, pattern) -> the option that gave
    the pattern, named instead of the configuration file."""
    def why(path: str) -> Optional[str]:
        hit = config.exclusion(os.path.relpath(os.path.abspath(path), config.root).replace(os.sep, "/"))
        if hit is None:
            return None
        key, pattern = hit
        source = (named_by or {}).get((key, pattern)) or (str(config.source) if config.source else "the command line")
        if key == "include":
            return f"matches no `include` pattern ({pattern}; {source})"
        return f"matches the `{key}` pattern {pattern!r} ({source})"

    warnings = []
    for path in paths:
        text = str(path)
        if os.path.isdir(text):
            top = os.path.join(os.path.abspath(text), "")
            if not folders or (checked is not None and any(c.startswith(top) for c in checked)):
                continue
            reasons = [why(os.path.join(text, inner)) for inner in walk_python_files(text)]
            if reasons and all(reasons):
                warnings.append(f"{text}: not checked: every Python file under it is excluded "
                                f"(the first {reasons[0]})")
        elif os.path.isfile(text):
            reason = why(text)
            if reason:
                warnings.append(f"{text}: not checked: it {reason}")
            elif path not in buffered and not is_python_file(text):
                warnings.append(f"{text}: not checked: {NOT_PYTHON}")
    return warnings


def missing_paths(paths: Sequence) -> Optional[str]:
    """One line naming the paths of a command that are not there (a mistyped command,
    not a file to skip: every command says it this way), or None."""
    missing = [str(p) for p in paths if not os.path.lexists(p)]
    if not missing:
        return None
    return (f"{', '.join(missing)}: no such file or directory; check the spelling "
            f"(paths are relative to the current directory)")
