"""What lint reports: one `Diagnostic` per finding (with its fix), the severities and the list of codes."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Callable, Mapping, Optional


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def fails(self) -> bool:
        """Info findings never change the exit code."""
        return self is not Severity.INFO


@dataclasses.dataclass(frozen=True, order=True)
class Diagnostic:
    path: str
    line: int
    column: int
    code: str
    name: str
    # What is wrong with the flagged code, short (Ruff's message): the line a reader scans.
    message: str
    severity: Severity
    # Enclosing `Class.function` (or "<module>"); lets a baseline match a finding after
    # unrelated edits move its line.
    scope: str = dataclasses.field(default="<module>", compare=False)
    # The rule's fix, carried with the finding (as Ruff's `Fix` and Fixit's
    # `replacement`): (line to insert before, statement). `--fix`, `--diff` and the
    # result cache read it here; nothing re-runs a rule to get it back.
    fix: Optional[tuple[int, str]] = dataclasses.field(default=None, compare=False)
    # Why the finding holds, as locations (path as shown, line, 1-based column, what
    # happens there): the store that gives None, each copy, the read. SARIF's codeFlow.
    flow: tuple[tuple[str, int, int, str], ...] = dataclasses.field(default=(), compare=False)
    # What a baseline's key adds to the line (SG001: the value inherited and where it
    # comes from, so a flipped parent makes the finding new); set by the rule.
    detail: str = dataclasses.field(default="", compare=False)
    # Why the analysis holds it (one clause: "set to None at x.py:618; the batch can be
    # in DECODE here"), apart from the message: `--show-reasons`, JSON, SARIF, explain.
    reason: str = dataclasses.field(default="", compare=False)
    # Where the flagged expression ends on its line (1-based, exclusive, as `column`
    # counts), when the rule knows it: how far the full format underlines.
    end_column: Optional[int] = dataclasses.field(default=None, compare=False)

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    def as_json(self) -> dict:
        """One finding of `seqguard lint --format json`: the fields of `JSON_FIELDS`."""
        return {field.name: field.value(self) for field in JSON_FIELDS}


@dataclasses.dataclass(frozen=True)
class JsonField:
    """One field of a finding in `--format json`: `as_json` writes it and the published
    schema (docs/schemas/lint-output.schema.json, scripts/generate_docs.py) describes
    it, both from this row."""
    name: str
    schema: Mapping[str, Any]         # its JSON schema: {"type": "integer", "minimum": 1}
    description: str
    value: Callable[[Diagnostic], Any]


# The order is the order of the keys in the output.
JSON_FIELDS: tuple[JsonField, ...] = (
    JsonField("path", {"type": "string"}, "The file, as the path named on the command line leads to it "
              "(relative paths stay relative to the current directory).", lambda d: d.path),
    JsonField("line", {"type": "integer", "minimum": 1}, "1-based line of the finding.", lambda d: d.line),
    JsonField("column", {"type": "integer", "minimum": 1}, "1-based column of the finding.", lambda d: d.column),
    JsonField("code", {"type": "string", "pattern": r"^SG\d{3}$"}, "The rule's code (docs/rules/<code>.md).",
              lambda d: d.code),
    JsonField("name", {"type": "string"}, "The rule's name (kebab-case).", lambda d: d.name),
    JsonField("message", {"type": "string"}, "What is wrong here, in one short sentence.", lambda d: d.message),
    JsonField("reason", {"type": "string"}, "Why the analysis holds it (the store that makes the mirror None, "
              "the modes still possible, ...); empty where the message says it all. `seqguard explain PATH:LINE` "
              "gives the whole chain.", lambda d: d.reason),
    JsonField("severity", {"enum": [s.value for s in Severity]},
              "error and warning fail the run; info never changes the exit code.", lambda d: d.severity.value),
    JsonField("fixable", {"type": "boolean"}, "Whether `--fix` can fix it.", lambda d: d.fixable),
)


UNREADABLE_CODE = "SG000"
# Every code seqguard reports. The configuration validates `select`/`ignore` against
# this list without importing lint (it sits below lint); each rule owns its code, and
# tests/test_architecture.py checks that the rules and this list agree. Codes are
# never reused once released.
CODES = (UNREADABLE_CODE, "SG001", "SG002", "SG003", "SG004", "SG005", "SG006", "SG007", "SG008", "SG009", "SG010")
UNREADABLE_NAME = "unreadable-file"
# SG000 is not a `Rule` (no analysis finds it: reading or parsing fails), but it is a
# code like the others: `seqguard rules` and SARIF describe it from here.
UNREADABLE_DOC = """Flags a file that cannot be read, decoded or parsed.

Files named on the command line, and files that mention a mirror, the flag or a
marker, are parsed, except the bodies of functions whose lines name none of those
words, a device length or a nested class (the analysis never reads them); a syntax
error elsewhere is your Python linter's business. A file larger than `max-file-size`
is one ("too large"), and so is a folder under a path you named that cannot be
listed. Always reported: `--select`, `--ignore` and markers do not apply to it.

Why: a file seqguard cannot read may declare a backend or read the host mirror;
seqguard cannot vouch for what it cannot see.

Fix: fix the syntax error, save the file as UTF-8 (or correct its coding cookie), or
make it readable (raise `max-file-size` or exclude a generated file).

Options: `max-file-size`, `exclude`."""


def unreadable(path: str, message: str, line: int = 1, column: int = 1) -> Diagnostic:
    """A file that cannot be read, decoded or parsed is just another finding."""
    return Diagnostic(path, line, column, UNREADABLE_CODE, UNREADABLE_NAME, message, Severity.ERROR)
