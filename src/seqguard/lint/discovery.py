"""Which files to read: the project (for the index) and the ones to report on."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from seqguard.config import DEFAULT_EXCLUDED_DIRS, Config


@dataclasses.dataclass
class Target:
    abspath: str
    relpath: str      # relative to the project root, '/'-separated
    display: str      # as the user gave it, or relative to the current directory
    explicit: bool    # named on the command line (always parsed)


@dataclasses.dataclass
class Discovery:
    project: dict[str, str]           # relpath -> abspath of every project Python file
    targets: list[Target]             # files to report on
    problems: list[tuple[str, str]]   # (display path, message) for missing paths
    warnings: list[str]


def walk_python_files(top: str):
    """Yield paths of Python files under `top`, relative to it, '/'-separated, sorted.
    Symlinked directories are not followed, so a symlink loop cannot trap the walk."""
    stack = [""]
    while stack:
        prefix = stack.pop()
        try:
            with os.scandir(os.path.join(top, prefix) if prefix else top) as it:
                entries = sorted(it, key=lambda e: e.name, reverse=True)
        except OSError:
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
                yield rel


def _relpath(abspath: str, root: str) -> str:
    if abspath.startswith(root + os.sep):
        return abspath[len(root) + 1:].replace(os.sep, "/")
    return os.path.relpath(abspath, root).replace(os.sep, "/")


def discover(paths: list[Path], config: Config, index_project: bool = True) -> Discovery:
    root = str(config.root)
    project: dict[str, str] = {}
    if index_project:
        for rel in walk_python_files(root):
            if config.is_path_included(rel):
                project[rel] = f"{root}/{rel}"
    targets: list[Target] = []
    problems: list[tuple[str, str]] = []
    warnings: list[str] = []
    seen: dict[str, Target] = {}
    for given in paths:
        text = str(given)
        if not os.path.lexists(text):
            problems.append((text, "path not found; check the spelling or run from the project root"))
            continue
        if os.path.isdir(text):
            top = os.path.abspath(text)
            prefix = _relpath(top, root) if top != root else ""
            if index_project and (prefix == "" or not prefix.startswith("..")):
                found_any = True
                start = prefix + "/" if prefix else ""
                below = [(rel, rel[len(start):]) for rel in project if rel.startswith(start)]
                found_any = bool(below) or any(True for _ in walk_python_files(top))
            else:
                below = []
                for inner in walk_python_files(top):
                    rel = _relpath(os.path.join(top, inner), root)
                    if config.is_path_included(rel):
                        below.append((rel, inner))
                        project.setdefault(rel, os.path.join(top, inner))
                found_any = bool(below)
            if not found_any:
                warnings.append(f"{text}: no Python files found")
            for rel, inner in below:
                abspath = project[rel]
                if abspath in seen:
                    continue
                display = os.path.normpath(os.path.join(text, inner))
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
        project.setdefault(rel, abspath)
        seen[abspath] = Target(abspath, rel, text, True)
        targets.append(seen[abspath])
    return Discovery(project, targets, problems, warnings)
