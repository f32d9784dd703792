"""A module's text with the bodies the walk would skip taken out, line for line, so
`ast` never builds them.

The walk does not enter a function whose lines name no mirror, flag, device length or
nested class (`ModuleAnalysis._is_relevant`); on SGLang those are half the text of the
files it parses, and building their syntax trees was half the cost of a cold lint.
Here such a body (a module-level function's, or a method's of a module-level class)
becomes one `pass` on its last line: every line keeps its number, every kept line its
columns, and the function its first and last line, so the walk's facts are the same.

The function boundaries are read off the text (`def_spans`, by indentation), which a
multi-line string or bracket at a low indentation can fool; a body is only taken out
when, its strings and comments read as Python reads them, it closes every string and
bracket it opens (so the text after it reads as it did), and the tree of the reduced
text must hold each shortened function where the text said it was (a `def` inside a
string is no function). A text with `\r` line ends, a form feed (which resets
Python's count of a line's indentation), a vertical tab or a null byte is parsed whole, and so is anything
these checks refuse. What is taken out is never checked for syntax: as in a file that
names no mirror, a syntax error there is not seqguard's to report (the codemod, which
parses with libcst, still refuses it)."""

from __future__ import annotations

import ast
import bisect
import re
import sys
import warnings
from typing import NamedTuple, Optional

from seqguard.lint.analysis.source import line_starts


class DefSpan(NamedTuple):
    qualname: str      # `f`, or `Class.method`
    first: int         # first line, decorators included (1-based)
    line: int          # the `def` line
    last: int          # last code line
    indent: int


# A line of code (not blank, not a comment, not a closing bracket) starting at or left
# of a column: where a block indented deeper than that column has ended.
# (Spelt from the newline before it, not `^`: a pattern opening with a literal is
# searched for at C speed.)
_ENDS_BLOCK = "\n(?:[ \t]*\x0c)*[ \t]{0,%d}(?=[^\\s#)\\]}])"
# `def` and `class` where they can open a block (after the indentation, and `async`),
# each its own pattern: one opening with a literal is searched for at C speed
_DEF = re.compile(r"def[ \t]+(\w+)")
_CLASS = re.compile(r"class[ \t]+(\w+)")
_CODE_LINE = re.compile(r"^[ \t\x0c]*[^\s#]", re.M)


def _width(indentation: str) -> int:
    """A line's indentation as Python counts it here: a form feed starts it again."""
    return len(indentation.rsplit("\x0c", 1)[-1])


def _lines(text: str) -> tuple[list[str], list[int]]:
    """The lines (ending in `\\n` only) and the offset each starts at."""
    lines = text.split("\n")
    return lines, line_starts(lines)


def def_spans(text: str) -> list[DefSpan]:
    """The module-level functions and the methods of module-level classes, read off
    the text: a module-level `def` runs until the next line of code at column 0; a
    class's methods are the `def`s at the indentation of its body. Lines end in `\\n`."""
    return _spans(text, *_lines(text))


def _spans(text: str, lines: list[str], starts: list[int]) -> list[DefSpan]:
    ends: dict[int, re.Pattern] = {}

    def line_of(offset: int) -> int:
        return bisect.bisect_right(starts, offset) - 1

    def last_code_line(before: int) -> int:
        """The last line (0-based) of code above line `before`."""
        i = before - 1
        while i > 0 and not _CODE_LINE.match(lines[i]):
            i -= 1
        return i

    def block_end(header: int, indent: int) -> int:
        pattern = ends.get(indent)
        if pattern is None:
            pattern = ends[indent] = re.compile(_ENDS_BLOCK % indent)
        found = pattern.search(text, starts[header + 1] - 1) if header + 1 < len(lines) else None
        return last_code_line(line_of(found.start() + 1) if found else len(lines))

    def first_line(header: int, indent: int) -> int:
        first = header
        while first > 0 and lines[first - 1].startswith(" " * indent + "@"):
            first -= 1
        return first

    headers = []   # (line, indentation, keyword, name)
    for kind, pattern in (("def", _DEF), ("class", _CLASS)):
        for match in pattern.finditer(text):
            i = line_of(match.start())
            lead = text[starts[i]:match.start()]
            if not lead.strip():
                headers.append((i, _width(lead), kind, match[1]))
            elif kind == "def" and lead.strip() == "async" and lead[-1] in " \t":
                headers.append((i, _width(lead[:len(lead) - len(lead.lstrip())]), kind, match[1]))
    headers.sort()
    header_lines = [i for i, _, _, _ in headers]
    spans: list[DefSpan] = []
    for i, lead, kind, name in headers:
        if lead:
            continue
        end = block_end(i, 0)
        if kind == "def":
            spans.append(DefSpan(name, first_line(i, 0) + 1, i + 1, end + 1, 0))
            continue
        body = next((j for j in range(i + 1, end + 1) if _CODE_LINE.match(lines[j])), None)
        if body is None:
            continue
        indent = _width(lines[body][:len(lines[body]) - len(lines[body].lstrip())])
        for j, inner_lead, inner_kind, inner_name in \
                headers[bisect.bisect_right(header_lines, i):bisect.bisect_right(header_lines, end)]:
            if inner_lead == indent and inner_kind == "def":
                spans.append(DefSpan(f"{name}.{inner_name}", first_line(j, indent) + 1, j + 1,
                                     block_end(j, indent) + 1, indent))
    return spans


def _header_end(lines: list[str], start: int, last: int) -> Optional[int]:
    """The line (0-based) whose `:` ends the `def` header opened at `start`; None when
    the body follows the colon on that line, or the header holds what this scan does
    not follow (a triple-quoted string, a backslash)."""
    depth = 0
    for i in range(start, last + 1):
        line = lines[i]
        if "'" not in line and '"' not in line and "#" not in line and not line.endswith("\\"):
            # the common header: no string, no comment; only where it closes can it end
            depth += line.count("(") + line.count("[") + line.count("{") - \
                line.count(")") - line.count("]") - line.count("}")
            if depth == 0:
                return i if line.rstrip().endswith(":") else None
            continue
        if "'''" in line or '"""' in line or line.rstrip().endswith("\\"):
            return None
        quote = None
        j, n = 0, len(line)
        while j < n:
            c = line[j]
            if quote is not None:
                if c == "\\":
                    j += 1
                elif c == quote:
                    quote = None
            elif c in "'\"":
                quote = c
            elif c == "#":
                break
            elif c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
            elif c == ":" and depth == 0:
                rest = line[j + 1:].strip()
                return i if not rest or rest.startswith("#") else None
            j += 1
        if quote is not None:
            return None
    return None


# What opens a string or a comment; and, for each quote, the rest of a string it opens
# (a backslash escapes the next character, a newline included, in raw strings too: it
# keeps the quote from ending them)
_STRING_OR_COMMENT = re.compile(r"""[#'"]""")
_STRING_REST = {
    "'": re.compile(r"[^'\\\n]*(?:\\.[^'\\\n]*)*'", re.S),
    '"': re.compile(r'[^"\\\n]*(?:\\.[^"\\\n]*)*"', re.S),
    "'''": re.compile(r"[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''", re.S),
    '"""': re.compile(r'[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""', re.S),
}
# From 3.12 an f-string's fields may hold its own quote, a comment, a newline (PEP 701):
# its end is not where the quote rules above say
_F_STRING = re.compile(r"(?<![\w])[rRbBuU]?[fF][rRbB]?['\"]|(?<![\w])[rR][fF]['\"]")
_FIELDS_NEST = sys.version_info >= (3, 12)


def _closes_all(text: str) -> bool:
    """Whether statements starting where no string or bracket is open leave none open
    at their end: strings and comments are skipped as Python reads them (a `\'\"\"\"\'`
    in a one-quote string opens nothing), brackets counted between them."""
    if _FIELDS_NEST and _F_STRING.search(text):
        return False
    depth, at = 0, 0
    while True:
        found = _STRING_OR_COMMENT.search(text, at)
        code = text[at:found.start() if found else len(text)]
        depth += code.count("(") + code.count("[") + code.count("{") - \
            code.count(")") - code.count("]") - code.count("}")
        if depth < 0:
            return False   # it closes what it did not open: it did not start outside
        if found is None:
            return depth == 0
        if found.group() == "#":
            at = text.find("\n", found.end())
            if at < 0:
                return depth == 0
            continue
        quote = found.group() * 3 if text.startswith(found.group() * 3, found.start()) else found.group()
        rest = _STRING_REST[quote].match(text, found.start() + len(quote))
        if rest is None:
            return False   # a string left open
        at = rest.end()


def skeleton(text: str, relevant: list[int]) -> Optional[tuple[str, list[DefSpan]]]:
    """`text` with the body of each function whose lines
    [def, last] hold none of `relevant` (sorted line numbers) replaced by `pass` on its
    last line, and the functions shortened; None when none is."""
    if "\r" in text or "\x0c" in text or "\x0b" in text or "\x00" in text:
        # lines end in `\n` only here; a form feed resets a line's indentation (rare:
        # such a text is parsed whole, not trusted to this reading); a null byte is an
        # error Python reports, wherever it is
        return None
    lines, starts = _lines(text)
    pieces, done = [], 0   # the reduced text, and how much of `text` it has taken
    shortened = []
    for span in _spans(text, lines, starts):
        i = bisect.bisect_left(relevant, span.line)
        if i < len(relevant) and relevant[i] <= span.last:
            continue  # the walk enters it
        head = _header_end(lines, span.line - 1, span.last - 1)
        if head is None or head >= span.last - 1:
            continue  # a one-line body, or a header not followed
        body = text[starts[head + 1]:starts[span.last] - 1]
        if body.endswith("\\") or not _closes_all(body):
            continue
        first = next(line for line in lines[head + 1:span.last] if line.strip())
        indent = first[:len(first) - len(first.lstrip())]
        if len(indent.expandtabs()) <= span.indent:
            continue
        pieces += (text[done:starts[head + 1]], "\n" * (span.last - 2 - head), indent, "pass")
        done = starts[span.last] - 1   # the end of the last line
        shortened.append(span)
    if not shortened:
        return None
    pieces.append(text[done:])
    return "".join(pieces), shortened


def holds(tree: ast.Module, shortened: list[DefSpan]) -> bool:
    """Whether the reduced text's tree has each shortened function where the text said
    (its `def` line, and a lone `pass` on its last line): else the text was misread."""
    found: dict[int, ast.AST] = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found[stmt.lineno] = stmt
        elif isinstance(stmt, ast.ClassDef):
            for inner in stmt.body:
                if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found[inner.lineno] = inner
    for span in shortened:
        node = found.get(span.line)
        if node is None or node.end_lineno != span.last or len(node.body) != 1 or \
                not isinstance(node.body[0], ast.Pass) or node.body[0].lineno != span.last:
            return False
    return True


def tree_without_bodies(text: str, relevant: Optional[list[int]]) -> Optional[ast.Module]:
    """The tree of `text` without the bodies of the
    functions whose lines hold none of `relevant` (all of them, with `[]`); None when
    none is taken out, or the reduced text does not parse as the text said it would
    (then parse the whole text)."""
    if relevant is None:
        return None
    reduced = skeleton(text, relevant)
    if reduced is None:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences are not our business
            tree = ast.parse(reduced[0])
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return tree if holds(tree, reduced[1]) else None
