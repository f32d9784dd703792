"""`--add-ignore`: put `# seqguard: ignore[CODE]` on every flagged line, merging with a
marker already there (so a second run changes nothing). Lines where a comment cannot
go (inside a multi-line string, after a backslash continuation) are reported instead."""

from __future__ import annotations

import io
import tokenize
from typing import Iterable

from seqguard.codemods.source_text import SourceText, line_ending
from seqguard.lint.facts import SUPPRESSION_MARKER, marker_codes


def _uncommentable_lines(text: str) -> set[int]:
    """Lines whose end lies inside a string token spanning several lines."""
    blocked: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.start[0] != token.end[0] and token.type in (tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", -1)):
                blocked.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError):  # IndentationError is a SyntaxError
        pass
    return blocked


def add_ignores(data: bytes, codes_by_line: dict[int, Iterable[str]]) -> tuple[bytes, list[tuple[int, str]]]:
    """Returns the new bytes and the lines left alone, with why."""
    source = SourceText.decode(data)
    blocked = _uncommentable_lines(source.text)
    skipped: list[tuple[int, str]] = []
    for number, codes in sorted(codes_by_line.items()):
        if not 0 < number <= len(source.lines):
            continue
        line = source.lines[number - 1]
        ending = line_ending(line)
        body = line[: len(line) - len(ending)] if ending else line
        if number in blocked:
            skipped.append((number, "the line ends inside a multi-line string"))
            continue
        if body.rstrip().endswith("\\"):
            skipped.append((number, "the line continues with a backslash"))
            continue
        wanted = set(codes)
        existing = SUPPRESSION_MARKER.search(body)
        if existing:
            have = marker_codes(existing)
            if have is None:
                continue  # a bare ignore already covers every code
            if wanted <= have:
                continue
            merged = ", ".join(sorted(have | wanted))
            body = body[: existing.start()] + f"# seqguard: ignore[{merged}]" + body[existing.end():]
        else:
            body = body.rstrip() + f"  # seqguard: ignore[{', '.join(sorted(wanted))}]"
        source.lines[number - 1] = body + ending
    return source.encode(), skipped
