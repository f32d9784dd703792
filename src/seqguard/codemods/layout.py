"""Where text sits: `ast` byte columns as libcst character columns, and the line
length a project's formatter is configured for."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

from seqguard.fileio import read_bytes

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEFAULT_LINE_LENGTH = 88


def char_column(lines: list[str], line: int, byte_col: int) -> int:
    """`ast` columns count UTF-8 bytes of the line; libcst's count characters."""
    if not 0 < line <= len(lines):
        return byte_col
    content = lines[line - 1]
    if content.isascii():
        return byte_col
    return len(content.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def configured_line_length(start: Optional[Path]) -> int:
    """`[tool.ruff] line-length`, else `[tool.black] line-length`, from the nearest
    pyproject.toml at or above `start`; 88 (both tools' default) when none says."""
    if start is None:
        return DEFAULT_LINE_LENGTH
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else list(start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return line_length_of(candidate)
    return DEFAULT_LINE_LENGTH


def line_length_of(pyproject: Path) -> int:
    try:
        tool = tomllib.loads(read_bytes(pyproject).decode("utf-8")).get("tool", {})
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError):
        return DEFAULT_LINE_LENGTH  # lint reports a broken config; layout just keeps the default
    for section in ("ruff", "black"):
        value = tool.get(section, {}).get("line-length") if isinstance(tool.get(section), dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return DEFAULT_LINE_LENGTH



