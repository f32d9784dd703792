"""Source text as Python reads it: decoding (BOM, PEP 263 cookie), line breaks (`\\n`,
`\\r\\n`, a lone `\\r`, nothing else), a statement's first line (its decorators
included), and whether a `# seqguard: ignore[...]` marker covers a code. Lint, the
baseline, the codemod and its report all ask these, never a copy of them."""

from __future__ import annotations

import ast
import io
import itertools
import operator
import re
import tokenize
from typing import Mapping, Optional

LINE_BREAK = re.compile(r"\r\n|\r|\n")


def decode_source(data: bytes) -> str:
    """Decode as Python does (one UTF-8 BOM stripped, else the PEP 263 cookie, else
    UTF-8); raises UnicodeDecodeError, SyntaxError or LookupError on what Python would
    refuse."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)  # "utf-8-sig" when the BOM is there: it is stripped


def split_lines(text: str) -> list[str]:
    """Lines as Python numbers them, without their endings (str.splitlines also splits
    at form feeds, `\\x1c`-`\\x1e`, `\\x85`, `\\u2028`..., which would shift every later line)."""
    return text.split("\n") if "\r" not in text else LINE_BREAK.split(text)  # split in C where it can be


def line_starts(lines: list[str]) -> list[int]:
    """The offset each of `lines` (a text split at `\\n`) starts at, then one past the
    end: from the lengths of the lines, in C (a regex match per line cost a cold lint
    of SGLang 0.1 s)."""
    return [0, *map(operator.add, itertools.accumulate(map(len, lines)), range(1, len(lines) + 1))]


def line_break_offsets(text: str) -> list[int]:
    """Where each line break starts, ascending (a `\\r\\n` once, at its `\\r`)."""
    if "\r" in text:
        return [m.start() for m in LINE_BREAK.finditer(text)]
    return list(map(operator.sub, line_starts(text.split("\n"))[1:-1], itertools.repeat(1)))


def lines_with_endings(text: str) -> list[str]:
    """The same lines, each with its ending."""
    lines, start = [], 0
    for match in LINE_BREAK.finditer(text):
        lines.append(text[start:match.end()])
        start = match.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def first_line(node: ast.stmt) -> int:
    """Where a statement starts, a decorated def or class at its first decorator."""
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])


def is_suppressed(suppressions: Mapping[int, Optional[frozenset]], line: int, code: str) -> bool:
    """Whether the marker on `line` silences `code` (a bare `ignore` silences every code)."""
    if line not in suppressions:
        return False
    codes = suppressions[line]
    return codes is None or code in codes
