"""Where a file's project starts: the nearest folder holding a pyproject.toml or a
.git. The configuration is read from there, and a write may follow a symlink only to a
target inside it; so both `config` and `fileio` ask, and neither asks the other."""

from __future__ import annotations

import os
from pathlib import Path


def find_project_root(start: Path, cwd: Path | None = None) -> tuple[Path, Path | None]:
    """The nearest ancestor holding a pyproject.toml (returned too) or a .git. Without
    one, the folder above the top package of `start` (walking up through `__init__.py`,
    so `engine/attention/x.py` is named `engine.attention.x`), widened to the current
    directory when that lies above it (namespace packages have no `__init__.py` to walk
    through, so `lint sglang/srt` from the folder holding `sglang` still names
    `sglang.srt...`)."""
    # A symlinked file belongs to the project it is named in, not to its target's
    # (a link leading outside must not make the outside its project).
    start = Path(os.path.abspath(start))
    here = start.resolve() if start.is_dir() else start.parent.resolve()
    for candidate in (here, *here.parents):
        pyproject = candidate / "pyproject.toml"
        # a broken link still marks the project (its settings must not be skipped in silence)
        if pyproject.is_file() or pyproject.is_symlink():
            return candidate, pyproject
        if (candidate / ".git").exists():
            return candidate, None
    top = here
    while (top / "__init__.py").is_file() and top.parent != top:
        top = top.parent
    cwd = (cwd or Path.cwd()).resolve()
    if top == cwd or cwd in top.parents:
        return cwd, None
    return top, None
