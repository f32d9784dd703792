"""Renderers for lint findings: full (Ruff's: the source line and a caret), concise
(one line each), json, sarif (2.1.0) and GitHub annotations."""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import unicodedata
import urllib.parse
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

from seqguard import __version__
from seqguard.diagnostics import UNREADABLE_CODE, UNREADABLE_DOC, UNREADABLE_NAME, Diagnostic, Severity
from seqguard.fileio import read_file
from seqguard.lint.analysis.source import decode_source, split_lines

# `--output-format`'s values, the default first (the CLI lists them without importing this module).
OUTPUT_FORMATS = ("full", "concise", "json", "sarif", "github")
# Where each code's page lives (docs/rules/<CODE>.md, generated from the rule classes).
HOME = "https://github.com/seqguard/seqguard"
RULE_DOCS = HOME + "/blob/main/docs/rules/{code}.md"


@dataclasses.dataclass(frozen=True)
class RuleInfo:
    """One code as `seqguard rules` and SARIF describe it (SG000 included)."""
    code: str
    name: str
    severity: Severity
    fixable: bool
    doc: str
    flagged: Optional[str] = None   # an example the rule flags
    fine: Optional[str] = None      # and one it does not

    @property
    def summary(self) -> str:
        """The doc's first paragraph on one line (never cut mid-sentence)."""
        return " ".join(self.doc.split("\n\n")[0].split()) if self.doc else self.name

    @property
    def url(self) -> str:
        """The code's documentation page."""
        return RULE_DOCS.format(code=self.code)


def rule_catalogue() -> list[RuleInfo]:
    from seqguard.lint.rules import RULES  # the rules import the analyzer: not for a run that prints findings

    infos = [RuleInfo(UNREADABLE_CODE, UNREADABLE_NAME, Severity.ERROR, False, UNREADABLE_DOC)]
    for rule in RULES:
        infos.append(RuleInfo(rule.CODE, rule.NAME, rule.SEVERITY, rule.FIXABLE, rule.describe(),
                              rule.INVALID[0].code if rule.INVALID else None,
                              rule.VALID[0].code if rule.VALID else None))
    return infos

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _headline(d: Diagnostic) -> str:
    """`path:line:col: CODE [*] message`: the line both text formats start a finding with."""
    return f"{shown_path(d.path)}:{d.line}:{d.column}: {d.code}{' [*]' if d.fixable else ''} {d.message}"


def shown_path(path: str) -> str:
    """A path as one line of text shows it: a control or format character in a file's
    name (a newline, a tab, a bidi override) as its escape, so one finding stays one line
    and a name cannot disguise itself."""
    return "".join(_escaped(char) if unicodedata.category(char) in _ESCAPED else char for char in path)


def render_concise(diagnostics: Sequence[Diagnostic], show_reasons: bool = False) -> str:
    """One line per finding (Ruff's `concise`); with `show_reasons`, ` -- why: ` and the reason after it."""
    lines = [_headline(d) + (f" -- why: {d.reason}" if show_reasons and d.reason else "") for d in diagnostics]
    return "".join(line + "\n" for line in lines)


# Tabs are shown as spaces to the next multiple of this (Ruff's default indent width).
TAB_WIDTH = 4
# Columns of a source line shown around the flagged span; a longer line (minified code,
# a data table) is cut to a window and marked with `...` at the cut ends.
MAX_SOURCE_WIDTH = 120
# What the window keeps on the left of the span, so the code before it can be read.
LEFT_CONTEXT = 40


@dataclasses.dataclass(frozen=True)
class Snippet:
    """A source line as the full format shows it, and where its caret goes."""
    text: str          # the line: tabs expanded, control characters escaped, cut to a window
    start: int         # the terminal column (0-based) the underline starts at
    width: int         # how many columns it underlines (at least 1)


# Unicode categories shown as escapes: controls, format characters (bidi overrides),
# lone surrogates and the line and paragraph separators.
_ESCAPED = ("Cc", "Cf", "Cs", "Zl", "Zp")


def _escaped(char: str) -> str:
    return char.encode("unicode_escape", "backslashreplace").decode("ascii")


def _shown(char: str, column: int) -> tuple[str, int]:
    """How one character of a source line is shown, and its width in terminal columns:
    a tab up to the next tab stop, a control or format character (a form feed, a bidi
    override) as its escape, a wide (CJK) character as two columns, a combining one as none."""
    if char == "\t":
        spaces = TAB_WIDTH - column % TAB_WIDTH
        return " " * spaces, spaces
    if unicodedata.category(char) in _ESCAPED:
        escaped = _escaped(char)
        return escaped, len(escaped)
    if unicodedata.combining(char):
        return char, 0
    return char, 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def snippet(line: str, start: int, end: Optional[int] = None) -> Snippet:
    """`line` with an underline from character `start` to `end` (exclusive; None: the
    word or dotted name that starts there, else one character), in terminal columns; a
    line wider than MAX_SOURCE_WIDTH is cut to a window around the span."""
    start = max(0, min(start, len(line)))
    if (end is None or end <= start) and line[:start + 1].isspace() and line.strip():
        # in the indentation: a finding about the whole line (an unused suppression)
        start, end = len(line) - len(line.lstrip()), len(line.rstrip())
    if end is None or end <= start:
        end = _word_end(line, start)
    end = min(end, len(line))
    # only what a window can show is measured: a line of data can be megabytes long
    low = 0 if len(line) <= 2 * MAX_SOURCE_WIDTH else max(0, start - LEFT_CONTEXT)
    high = min(len(line), low + 2 * MAX_SOURCE_WIDTH)
    pieces, widths, column = [], [], 0
    for char in line[low:high]:
        text, width = _shown(char, column)
        pieces.append(text)
        widths.append(width)
        column += width
    first = sum(widths[:start - low])
    width = max(1, sum(widths[start - low:end - low]))
    if low == 0 and high == len(line) and column <= MAX_SOURCE_WIDTH:
        return Snippet("".join(pieces).rstrip(), first, width)
    # whole characters, from LEFT_CONTEXT columns before the span, as many as fit
    begin, skipped = 0, 0
    while begin < start - low and first - skipped > LEFT_CONTEXT:
        skipped += widths[begin]
        begin += 1
    head = "..." if low + begin > 0 else ""
    shown, room, stop = [], MAX_SOURCE_WIDTH - len(head), begin
    while stop < len(pieces) and widths[stop] <= room:
        shown.append(pieces[stop])
        room -= widths[stop]
        stop += 1
    tail = "..." if low + stop < len(line) else ""
    offset = first - skipped
    return Snippet(head + "".join(shown) + tail, offset + len(head),
                   max(1, min(width, MAX_SOURCE_WIDTH - len(head) - offset)))


def _word_end(line: str, start: int) -> int:
    """Where the word or dotted name at `start` ends (`class Name` as one: a finding on
    a class line), or one past `start` on anything else."""
    def in_name(i: int) -> bool:
        """A letter, digit or `_`, or a `.` between two names."""
        if line[i].isalnum() or line[i] == "_":
            return True
        return line[i] == "." and i > start and i + 1 < len(line) and (line[i + 1].isalpha() or line[i + 1] == "_")

    end, last = start, min(len(line), start + MAX_SOURCE_WIDTH)
    while end < last and in_name(end):
        end += 1
    if line[start:end] in ("class", "def") and end < len(line) and line[end] == " ":
        return _word_end(line, end + 1)
    return end if end > start else start + 1


def character_offset(line: str, column: int, code: str) -> int:
    """A finding's 1-based column as a 0-based character offset into `line`. `ast`
    counts columns in UTF-8 bytes (`é` is two), a SyntaxError (SG000) in characters."""
    if code == UNREADABLE_CODE or line.isascii():
        return column - 1
    return len(line.encode("utf-8", "surrogatepass")[:column - 1].decode("utf-8", "ignore"))


def source_reader(targets: Sequence, buffers: Optional[Mapping[Path, bytes]] = None,
                  limit: Optional[int] = None) -> Callable[[str], list[str]]:
    """Each shown path's lines, read once, as Python decodes and numbers them (a buffer
    from stdin in place of its file; undecodable bytes replaced, so an SG000 file
    shows too). `targets`: the run's `discovery.Target`s; a path of none, or a file
    past `limit` bytes (`max-file-size`: lint did not read it either), has no lines."""
    by_display = {t.display: t.abspath for t in targets}
    given = {str(path): data for path, data in (buffers or {}).items()}
    memo: dict[str, list[str]] = {}

    def lines(path: str) -> list[str]:
        if path not in memo:
            data = given.get(path)
            if data is None and path in by_display:
                data = read_file(by_display[path], limit).data
            if data is None:
                memo[path] = []
            else:
                try:
                    text = decode_source(data)
                except (UnicodeDecodeError, SyntaxError, LookupError):
                    text = data.decode("utf-8", "replace")
                memo[path] = split_lines(text)
        return memo[path]
    return lines


def render_full(diagnostics: Sequence[Diagnostic], lines_of: Callable[[str], list[str]],
                show_reasons: bool = False) -> str:
    """Ruff's `full` format: the headline, the flagged source line with its number and
    an underline, `= why:` (with `show_reasons`) and `= help:` (what `--fix` writes),
    then a blank line."""
    out = []
    for d in diagnostics:
        out.append(_headline(d))
        lines = lines_of(d.path)
        notes = []
        if show_reasons and d.reason:
            notes.append(f"why: {d.reason}")
        if show_reasons and d.code != UNREADABLE_CODE:
            notes.append(f"more: seqguard explain {shown_path(d.path)}:{d.line}")
        if d.fix is not None:
            notes.append(f"help: {_fix_words(d.fix, False)}")
        gutter = " " * len(str(d.line))
        if 0 < d.line <= len(lines):
            line = lines[d.line - 1]
            start = character_offset(line, d.column, d.code)
            end = None if d.end_column is None else character_offset(line, d.end_column, d.code)
            shown = snippet(line, start, end)
            out += [f"{gutter} |", f"{d.line} | {shown.text}".rstrip(),
                    f"{gutter} | {' ' * shown.start}{'^' * shown.width} {d.code}", f"{gutter} |"]
        out += [f"{gutter} = {note}" for note in notes]
        out.append("")
    return "".join(line + "\n" for line in out)


def _fix_words(fix: tuple[int, str], replaces_pass: bool) -> str:
    """What a fix does, for a human: `insert `needs_cpu_seq_lens = True``."""
    statement = fix[1].strip()
    return f"replace the class body's `pass` with `{statement}`" if replaces_pass else f"insert `{statement}`"


def render_json(diagnostics: Sequence[Diagnostic]) -> str:
    return json.dumps([d.as_json() for d in diagnostics], indent=2) + "\n"


def _github_data(text: str) -> str:
    """A workflow command's message: `%`, CR and LF escaped (GitHub's toolkit rules)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _github_property(text: str) -> str:
    """A workflow command's property value: also `:` and `,`, which end it."""
    return _github_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(diagnostics: Sequence[Diagnostic], show_reasons: bool = False) -> str:
    """Workflow commands GitHub shows as annotations; the reason on a second line of the
    message with `show_reasons`."""
    level = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
    lines = []
    for d in diagnostics:
        message = d.message + (f"\nwhy: {d.reason}" if show_reasons and d.reason else "")
        lines.append(f"::{level[d.severity]} title={_github_property(f'{d.code} {d.name}')},"
                     f"file={_github_property(d.path)},line={d.line},col={d.column}::{_github_data(message)}")
    return "\n".join(lines) + ("\n" if lines else "")


def _sarif_rules() -> list[dict]:
    return [{
        "id": info.code,
        "name": info.name,
        "shortDescription": {"text": info.summary},
        "fullDescription": {"text": info.doc or info.name},
        "defaultConfiguration": {"level": _SARIF_LEVEL[info.severity]},
        "helpUri": info.url,
    } for info in rule_catalogue()]


SRCROOT = "%SRCROOT%"


@dataclasses.dataclass(frozen=True)
class SarifContext:
    """What SARIF needs beyond the findings: the project root, each shown path's path
    relative to it, and each finding's fingerprint (from the baseline's key)."""
    root: Optional[str] = None                   # absolute; the %SRCROOT% base
    relpaths: Mapping[str, str] = dataclasses.field(default_factory=dict)   # shown path -> root-relative
    fingerprints: Mapping[int, str] = dataclasses.field(default_factory=dict)  # id(diagnostic) -> fingerprint


def _artifact(path: str, context: SarifContext) -> dict:
    """A URI-encoded location, relative to %SRCROOT% where the file is in the project
    (`o p#1.py` -> `o%20p%231.py`; `c:d.py` is no URI scheme: `c%3Ad.py`)."""
    relpath = context.relpaths.get(path)
    if relpath is None and context.root is not None:
        inside = os.path.relpath(os.path.abspath(path), context.root)
        relpath = None if inside.startswith("..") or os.path.isabs(inside) else inside.replace(os.sep, "/")
    if relpath is not None and context.root is not None:
        return {"uri": urllib.parse.quote(relpath, safe="/"), "uriBaseId": SRCROOT}
    absolute = os.path.isabs(path)
    uri = urllib.parse.quote(path.replace("\\", "/"), safe="/")
    return {"uri": Path(path).as_uri() if absolute else uri}


def render_sarif(diagnostics: Sequence[Diagnostic],
                 insertions: Optional[Mapping[tuple[str, tuple[int, str]], tuple[int, int, str]]] = None,
                 context: Optional[SarifContext] = None) -> str:
    """`insertions`: where each finding's fix lands, how many whole lines it replaces and
    what it writes, exactly (`lint.fixes.exact_placements`); a fixable finding with an
    entry gets SARIF `fixes`."""
    context = context or SarifContext()
    rules = _sarif_rules()
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = []
    for d in diagnostics:
        result = {
            "ruleId": d.code,
            "ruleIndex": index.get(d.code, 0),
            "level": _SARIF_LEVEL[d.severity],
            "message": {"text": _sarif_message(d)},
            "locations": [{"physicalLocation": {
                "artifactLocation": _artifact(d.path, context),
                "region": {"startLine": d.line, "startColumn": d.column},
            }}],
        }
        fingerprint = context.fingerprints.get(id(d))
        if fingerprint is not None:
            # code scanning follows an alert through line shifts by this
            result["partialFingerprints"] = {"seqguardKey/v1": fingerprint}
        if d.flow:
            # assignment -> propagation -> read, as code scanning draws a data flow
            result["codeFlows"] = [{"threadFlows": [{"locations": [{"location": {
                "physicalLocation": {"artifactLocation": _artifact(path, context),
                                     "region": {"startLine": line, "startColumn": column}},
                "message": {"text": message}}} for path, line, column, message in d.flow]}]}]
        where = (insertions or {}).get((d.path, d.fix)) if d.fix is not None else None
        if where is not None:
            line, replaced, text = where
            # from the start of `line` to the start of the line after the last one replaced
            # (an empty region when none is: an insertion before `line`)
            region = {"startLine": line, "startColumn": 1, "endLine": line + replaced, "endColumn": 1}
            verb = _fix_words(d.fix, bool(replaced))
            result["fixes"] = [{
                "description": {"text": verb},
                "artifactChanges": [{
                    "artifactLocation": _artifact(d.path, context),
                    "replacements": [{"deletedRegion": region, "insertedContent": {"text": text}}],
                }],
            }]
        results.append(result)
    run = {
        "tool": {"driver": {"name": "seqguard", "version": __version__, "informationUri": HOME, "rules": rules}},
        "results": results,
    }
    if context.root is not None:
        base = Path(context.root).as_uri()
        run["originalUriBaseIds"] = {SRCROOT: {"uri": base if base.endswith("/") else base + "/"}}
    document = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(document, indent=2) + "\n"


def _sarif_message(d: Diagnostic) -> str:
    """The message, then the reason as a sentence of its own: SARIF asks for complete
    sentences, the first a summary a viewer may show alone."""
    if not d.reason:
        return d.message
    return f"{d.message}. Why: {d.reason}."


def statistics(diagnostics: Sequence[Diagnostic]) -> list[dict]:
    """Findings per code, most frequent first (Ruff's `--statistics`)."""
    counts = collections.Counter(d.code for d in diagnostics)
    first = {}
    for d in diagnostics:
        first.setdefault(d.code, d)
    fixable = {d.code for d in diagnostics if d.fixable}
    return [{"code": code, "name": first[code].name, "count": n, "fixable": code in fixable}
            for code, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]


def render_statistics(diagnostics: Sequence[Diagnostic], output_format: str) -> str:
    rows = statistics(diagnostics)
    if output_format == "json":
        return json.dumps(rows, indent=2) + "\n"
    width = max((len(str(r["count"])) for r in rows), default=1)
    return "".join(f"{r['count']:>{width}}\t{r['code']}\t{'[*]' if r['fixable'] else '[ ]'} {r['name']}\n"
                   for r in rows)


