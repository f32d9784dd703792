"""A Python file as text that round-trips to the very same bytes: encoding, BOM,
line endings and the (missing) final newline are remembered and restored."""

from __future__ import annotations

import dataclasses
import io
import re
import tokenize

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"


@dataclasses.dataclass
class SourceText:
    encoding: str
    bom: bool
    lines: list[str]          # each with its own line ending, exactly as read
    newline: str              # the file's dominant line ending, for inserted lines

    @classmethod
    def decode(cls, data: bytes) -> "SourceText":
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        bom = data.startswith(_BOM)
        text = data[len(_BOM):].decode("utf-8") if bom else data.decode(encoding)
        lines = split_lines(text)
        return cls(encoding="utf-8" if bom else encoding, bom=bom, lines=lines, newline=_dominant_newline(lines))

    def encode(self) -> bytes:
        body = "".join(self.lines).encode(self.encoding)
        return _BOM + body if self.bom else body

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def column(self, line: int, byte_col: int) -> int:
        """`ast` columns count UTF-8 bytes; convert to a character index."""
        content = self.lines[line - 1]
        if content.isascii():
            return byte_col
        return len(content.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def insert_lines(data: bytes, insertions: list[tuple[int, str]]) -> bytes:
    """Insert each text as a new line before its 1-based line number, in the file's
    encoding and newline style (the SG001 fix uses this)."""
    source = SourceText.decode(data)
    lines = source.lines
    for line_number, text in sorted(insertions, reverse=True):
        index = min(max(line_number - 1, 0), len(lines))
        if index == len(lines) and lines and not line_ending(lines[-1]):
            lines[-1] += source.newline
        lines.insert(index, text + source.newline)
    return source.encode()


def split_lines(text: str) -> list[str]:
    """Split after \\n, \\r\\n or \\r only (what Python counts), keeping the endings."""
    lines, start = [], 0
    for match in _LINE_BREAK.finditer(text):
        lines.append(text[start:match.end()])
        start = match.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def _dominant_newline(lines: list[str]) -> str:
    counts = {"\r\n": 0, "\n": 0, "\r": 0}
    for line in lines:
        ending = line_ending(line)
        if ending:
            counts[ending] += 1
    best = max(counts, key=counts.get)
    return best if counts[best] else "\n"


def line_ending(line: str) -> str:
    for ending in ("\r\n", "\n", "\r"):
        if line.endswith(ending):
            return ending
    return ""
