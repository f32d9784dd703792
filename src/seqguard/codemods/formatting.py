"""The codemod's output as the project's formatter writes it: the lines the codemod
edited are handed to that formatter's range formatting (`ruff format --range`, Black's
`--line-ranges`), so a file the formatter accepted before is accepted after, and lines
the codemod did not touch are left as they were.

Which formatter: `formatter` in [tool.seqguard] (`auto`, `ruff`, `black`, `none`).
`auto` takes the one the nearest pyproject.toml configures (`[tool.ruff]`, then
`[tool.black]`), else ruff, else Black, whichever is installed (ruff's style is Black's),
else none, and says so when there were edits to format. Installed means on PATH (the
one `ruff format --check` typed in a shell runs), else in seqguard's own environment:
its interpreter's scripts folder (a venv's `bin/` when run as `venv/bin/seqguard`
without the venv on PATH, as pipx, a hook or a script do), the folder of
`sys.executable`, the user scheme's scripts, else `python -m ruff` / `python -m black`
with seqguard's interpreter. Formatting is checked like the rewrite itself: the result
must compile to the same syntax tree, or the unformatted rewrite is kept and the reason
noted."""

from __future__ import annotations

import ast
import dataclasses
import difflib
import importlib.util
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import warnings
from pathlib import Path
from typing import Optional

from seqguard.fileio import read_bytes
from seqguard.lint.analysis.source import decode_source, lines_with_endings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

# A formatter that hangs must not hang the run.
TIMEOUT_S = 60


@dataclasses.dataclass(frozen=True)
class Formatter:
    name: str                 # ruff | black
    command: tuple[str, ...]  # what runs it: its executable, or seqguard's interpreter with `-m <name>`


def project_formatter(root: Optional[Path], setting: str = "auto") -> tuple[Optional[Formatter], Optional[str]]:
    """(the formatter to run, why none will run when one was asked for: `formatter =
    "ruff"` or `"black"` not installed, or `auto` finding neither)."""
    if setting == "none":
        return None, None
    if setting in ("ruff", "black"):
        found = find_formatter(setting)
        if found is None:
            return None, (f"formatter = \"{setting}\" but `{setting}` is not installed (not on PATH, nor in "
                          f"seqguard's environment, {_own_scripts()}); the edited lines are left as the codemod "
                          f"wrote them: install {setting} there ({_pip_install(setting)}), or put it on PATH")
        return found, None
    for name in dict.fromkeys((*_configured(root), "ruff", "black")):
        found = find_formatter(name)
        if found is not None:
            return found, None
    return None, ("formatter = \"auto\" found neither ruff nor Black (not on PATH, nor in seqguard's environment, "
                  f"{_own_scripts()}), so nothing formatted the edited lines; install one there "
                  f"({_pip_install('ruff')}), or set formatter = \"none\" in [tool.seqguard] to leave them "
                  "as written")


def find_formatter(name: str) -> Optional[Formatter]:
    """`name` (ruff or black) on PATH, else in seqguard's own environment; None when
    neither has it."""
    found = shutil.which(name)
    if found is None:
        found = next((hit for folder in _own_script_folders() for hit in [shutil.which(name, path=folder)] if hit),
                     None)
    if found is not None:
        return Formatter(name, (found,))
    return Formatter(name, (sys.executable, "-m", name)) if sys.executable and _importable(name) else None


def _importable(name: str) -> bool:
    """Whether seqguard's interpreter can run `python -m <name>` (installed as a package
    where no scripts folder has its command: `pip install --target`, a zipapp)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _own_script_folders() -> list[str]:
    """Where this interpreter's environment puts its commands: its scripts folder, the
    folder of the interpreter itself (a venv's `bin/`, a symlink not followed), the
    user scheme's scripts folder."""
    folders = [sysconfig.get_path("scripts"), os.path.dirname(sys.executable) if sys.executable else None]
    if site.ENABLE_USER_SITE:  # off in a venv: the user's scripts are then no part of it
        try:
            folders.append(sysconfig.get_path("scripts", sysconfig.get_preferred_scheme("user")))
        except (KeyError, AttributeError):  # no user scheme on this build, or Python < 3.10
            pass
    return [folder for folder in dict.fromkeys(folders) if folder and os.path.isdir(folder)]


def _own_scripts() -> str:
    return sysconfig.get_path("scripts") or os.path.dirname(sys.executable or "") or "?"


def _pip_install(name: str) -> str:
    return f"`{sys.executable or 'python'} -m pip install {name}`"


def _configured(root: Optional[Path]) -> list[str]:
    """The formatters the nearest pyproject.toml at or above `root` has a table for."""
    if root is None:
        return []
    root = root.resolve()
    for folder in [root, *root.parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                tool = tomllib.loads(read_bytes(candidate).decode("utf-8")).get("tool", {})
            except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError):
                return []
            return [name for name in ("ruff", "black") if isinstance(tool, dict) and isinstance(tool.get(name), dict)]
    return []


def edited_ranges(old: bytes, new: bytes) -> list[tuple[int, int]]:
    """The 1-based, inclusive line ranges of `new` that differ from `old`."""
    before = lines_with_endings(decode_source(old))
    after = lines_with_endings(decode_source(new))
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    return [(j1 + 1, j2) for tag, _, _, j1, j2 in matcher.get_opcodes() if tag != "equal" and j2 > j1]


def format_edits(old: bytes, new: bytes, path: str, root: Optional[str],
                 formatter: Formatter) -> tuple[bytes, Optional[str]]:
    """`new` with the lines that differ from `old` formatted; (`new`, why) when the
    formatter fails or its result is not the same program."""
    ranges = edited_ranges(old, new)
    if not ranges:
        return new, None
    try:
        if formatter.name == "black":
            args = [a for start, end in ranges for a in ("--line-ranges", f"{start}-{end}")]
            formatted = _run([*formatter.command, "-q", *args, "--stdin-filename", path, "-"], new, root)
        else:
            # one range per call, from the bottom up: a lower range never moves a higher one
            formatted = new
            for start, end in reversed(ranges):
                formatted = _run([*formatter.command, "format", "--quiet", f"--range={start}-{end}",
                                  "--stdin-filename", path, "-"], formatted, root)
    except _Failed as e:
        return new, f"{formatter.name} could not format the edited lines ({e}); left as written"
    if not _same_program(new, formatted):
        return new, f"{formatter.name}'s result is not the same program; left as written"
    return formatted, None


class _Failed(Exception):
    pass


def _run(command: list[str], data: bytes, cwd: Optional[str]) -> bytes:
    try:
        done = subprocess.run(command, input=data, capture_output=True, cwd=cwd, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise _Failed(str(e)) from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise _Failed(message[-1] if message else f"exit {done.returncode}")
    return done.stdout


def _same_program(a: bytes, b: bytes) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
