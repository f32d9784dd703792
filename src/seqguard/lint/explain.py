"""`seqguard explain PATH:LINE`: why a line is reported, or why it is not.

For every mirror use and host pull on the line: the verdict of the engine model
(`lint.contract`) and the chain behind it (the store that gives None, each copy that
carries it, the read), or what clears it (a test on the path, the object's type, the
backend's flag, the callers). A maintainer checks a finding, or a silence, in a minute.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import NamedTuple, Optional, Sequence

from seqguard.diagnostics import Diagnostic
from seqguard.fileio import Unreadable, read_bytes
from seqguard.lint.contract.judge import SAFE_BACKEND, SAFE_CALLERS, SAFE_CLASS, SAFE_COPY, SAFE_PATH, SAFE_TYPE
from seqguard.lint.discovery import NOT_PYTHON, is_python_file, missing_paths
from seqguard.lint.model import MirrorAccess, Usage
from seqguard.lint.rule import FileContext, through_call

_CLEARED_BY = {SAFE_TYPE: "its object's type", SAFE_PATH: "a test on its path", SAFE_BACKEND: "its backend's flag",
               SAFE_COPY: "a tested copy", SAFE_CALLERS: "its callers", SAFE_CLASS: "where its class is created"}


@dataclasses.dataclass(frozen=True)
class Explanation:
    line: int
    col: int                   # 1-based
    subject: str
    use: str                   # read, pass, guard, assert, truthiness, host pull
    # "may be None" | "cannot be None" | "guarded" | "not a read" | "per-step sync" | "no per-step sync"
    verdict: str
    reason: str
    cleared_by: Optional[str] = None
    steps: tuple[tuple[str, int, int, str], ...] = ()   # (relpath, line, 1-based col, what happens there)
    codes: tuple[str, ...] = ()                          # what lint reports for it on this run
    callers: Optional[str] = None  # reported: why its callers do not clear it (the call that leaves it open)

    def as_json(self) -> dict:
        return {"line": self.line, "column": self.col, "subject": self.subject, "use": self.use,
                "verdict": self.verdict, "reason": self.reason, "cleared_by": self.cleared_by,
                "steps": [{"path": p, "line": n, "column": c, "message": m} for p, n, c, m in self.steps],
                "codes": list(self.codes), "callers": self.callers}


def explain_line(ctx: FileContext, line: int, reported: dict[int, list[str]]) -> list[Explanation]:
    """Every mirror use and host pull of `line` in the file of `ctx`; `reported`: the
    codes lint reported per line of the file this run."""
    out = []
    contract = ctx.contract
    for access in ctx.facts.accesses:
        if access.line != line:
            continue
        out.append(_explain_access(ctx, access, reported.get(line, [])))
    for cls in ctx.index.classes_in(ctx.relpath).values():
        for pull in cls.facts.host_pulls:
            if pull.line != line:
                continue
            if cls.flag is True or not (cls.is_backend or cls.is_root):
                verdict, reason = "no per-step sync", (
                    f"`{cls.name}` keeps the mirror ({ctx.flag} is {cls.flag}): a host pull there is its own "
                    f"business" if cls.is_backend or cls.is_root else f"`{cls.name}` is not an attention backend")
            else:
                judged = contract.judge_pull(ctx.relpath, pull)
                verdict = "per-step sync" if judged.may_be_none else "no per-step sync"
                reason = judged.reason or "a pull of the device lengths on a path the skip runs on"
            gap = contract.pull_callers_gap(ctx.relpath, pull) if verdict == "per-step sync" else None
            out.append(Explanation(pull.line, pull.col + 1, pull.receiver, f"host pull ({pull.method})", verdict,
                                   reason, codes=tuple(c for c in reported.get(line, []) if c == "SG004"),
                                   callers=gap))
    return sorted(out, key=lambda e: (e.col, e.use))


def _explain_access(ctx: FileContext, access: MirrorAccess, codes: list[str]) -> Explanation:
    contract = ctx.contract
    subject = access.subject if access.alias_of is None else f"{access.subject} (alias of {access.alias_of})"
    base = dict(line=access.line, col=access.col + 1, subject=subject, use=access.usage.value,
                codes=tuple(c for c in codes if c in ("SG002", "SG003", "SG005", "SG009", "SG010")))
    if access.usage in (Usage.GUARD, Usage.TRUTHINESS) and access.usage != Usage.ASSERT:
        return Explanation(**base, verdict="not a read",
                           reason="a None test" if access.usage == Usage.GUARD else "a truthiness test (SG005)")
    if access.usage == Usage.PASS and access.passed_to is None:
        return Explanation(**base, verdict="not a read", reason="handed on unchanged")
    if access.guarded:
        return Explanation(**base, verdict="guarded",
                           reason="a None test on its path holds it (or a handler of the error None raises)")
    read = None
    if access.usage == Usage.PASS:
        read = ctx.index.read_through_call(ctx.relpath, access)
        if read is None:
            return Explanation(**base, verdict="not a read",
                               reason=f"handed to `{access.passed_to[0]}`, which does not read it unguarded")
    backend = ctx.backend_of(access)
    cleared = contract.clearance(ctx.relpath, access)
    if cleared is not None:
        kind, why = cleared
        return Explanation(**base, verdict="cannot be None", reason=why, cleared_by=_CLEARED_BY[kind])
    verdict = contract.judge(ctx.relpath, access)
    steps = tuple((s.relpath, s.line, s.col + 1, s.message) for s in verdict.steps)
    owner = f" in `{backend.name}`, whose {ctx.flag} is {backend.flag}" if backend is not None else ""
    gap = contract.callers_gap(ctx.relpath, access)
    return Explanation(**base, verdict="may be None", reason=verdict.reason + through_call(read) + owner, steps=steps,
                       callers=gap)


def render(relpath_display: str, explanations: list[Explanation], findings: Sequence[Diagnostic] = ()) -> str:
    """The findings lint reports on the line whose reason no use's explanation already
    says (a class line's SG001 and SG006 have no use to explain), then each use."""
    unsaid = [d for d in findings if not (d.reason and any(d.reason in e.reason for e in explanations))]
    if not explanations and not unsaid:
        return f"{relpath_display}: no use of a host mirror and no host pull of the device lengths on this line\n"
    lines = []
    for d in unsaid:
        lines.append(f"{d.path}:{d.line}:{d.column}: {d.code}{' [*]' if d.fixable else ''} {d.message}")
        if d.reason:
            lines.append(f"    why: {d.reason}")
    for e in explanations:
        codes = f"  [{', '.join(e.codes)}]" if e.codes else ""
        lines.append(f"{relpath_display}:{e.line}:{e.col}: `{e.subject}` ({e.use}): {e.verdict}{codes}")
        cleared = f" (cleared by {e.cleared_by})" if e.cleared_by else ""
        lines.append(f"    {e.reason}{cleared}")
        for number, (path, line, col, message) in enumerate(e.steps, 1):
            lines.append(f"    {number}. {path}:{line}:{col}: {message}")
        if e.callers:
            lines.append(f"    not cleared by its callers: {e.callers}")
    return "\n".join(lines) + "\n"


class LocationError(ValueError):
    """A location that cannot be explained; the message names it and what to give."""


class Location(NamedTuple):
    """A place to explain: a line of a file, and the column of one use on it (as lint
    prints a finding: `PATH:LINE:COL`) when one of several is asked about."""
    path: Path
    line: int
    column: Optional[int] = None


_LINE_COLUMN = re.compile(r"(.+):(\d+):(\d+)")
_LINE = re.compile(r"(.+):(\d+)")


def parse_locations(locations) -> list[Location]:
    """`PATH:LINE` and `PATH:LINE:COL` strings, each checked against its file. A
    `PATH:LINE:COL` whose `PATH:LINE` part is itself a file (a name holding `:12`)
    is read as that file and line only when PATH is not one."""
    wanted = []
    for location in locations:
        path, line, column = _split_location(location)
        missing = missing_paths([path])
        if missing is not None:
            raise LocationError(missing)
        if not os.path.isfile(path):
            raise LocationError(f"{path}: not a file; give a Python file and a line, e.g. src/pkg/backend.py:42")
        try:
            data = read_bytes(path)
        except Unreadable as error:
            raise LocationError(f"{path}: {error}") from None
        lines = line_count(data)
        if line > lines:
            raise LocationError(f"{location}: {path} has {lines} line(s); give a line of the file")
        wanted.append(Location(Path(path), line, column))
    return wanted


def _split_location(location: str) -> tuple[str, int, Optional[int]]:
    """(path, line, column or None) of `PATH:LINE[:COL]`; LocationError if it is neither."""
    expected = LocationError(
        f"{location}: expected PATH:LINE or PATH:LINE:COL (a file, a line number from 1, and optionally a column "
        f"from 1), e.g. src/pkg/backend.py:42 or src/pkg/backend.py:42:17")
    with_column = _LINE_COLUMN.fullmatch(location)
    if with_column is not None and (os.path.isfile(with_column[1])
                                    or not os.path.isfile(f"{with_column[1]}:{with_column[2]}")):
        if int(with_column[2]) < 1 or int(with_column[3]) < 1:
            raise expected
        return with_column[1], int(with_column[2]), int(with_column[3])
    plain = _LINE.fullmatch(location)
    if plain is None or int(plain[2]) < 1:
        raise expected
    return plain[1], int(plain[2]), None


def line_count(data: bytes) -> int:
    """The lines of a file as Python (and so lint) numbers them: `\\r\\n`, a lone `\\r`
    and `\\n` each end one; a last line without an ending counts."""
    breaks = data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
    return breaks + (not data.endswith((b"\n", b"\r")))


@dataclasses.dataclass
class Explained:
    documents: list[dict]      # the JSON form, one per location
    text: str                  # the text form, every location
    unreadable: list[str]      # one line per location whose file does not parse
    warnings: list[str] = dataclasses.field(default_factory=list)   # the engine model's (a preset's name)


def explain_locations(wanted: Sequence[Location | tuple[Path, int]], config, *, use_cache: bool = True,
                      jobs: Optional[int] = None) -> Explained:
    """Explain each location (or (path, line)) in the project of `config`. With a
    column, only the uses and findings at that column are explained, when one is there
    (else the whole line: a column is only needed to pick one of several)."""
    from seqguard.lint.runner import lint_paths

    wanted = [w if isinstance(w, Location) else Location(*w) for w in wanted]
    paths = list(dict.fromkeys(w.path for w in wanted))
    result = lint_paths(paths, config, use_cache=use_cache, jobs=jobs, need_index=True)
    by_display = {t.display: t for t in result.targets}
    documents, texts, unreadable = [], [], []
    for path, line, column in wanted:
        target = by_display.get(str(path))
        if target is None and os.path.isfile(path) and not is_python_file(str(path)):
            unreadable.append(f"{path}: {NOT_PYTHON}; nothing to explain")
            continue
        if target is None:
            raise LocationError(f"{path}: not checked (excluded by the configuration, or not a Python file)")
        facts = result.facts.get(target.relpath)
        reported: dict[int, list[str]] = {}
        for d in result.diagnostics:
            if d.path == target.display:
                reported.setdefault(d.line, []).append(d.code)
        if facts is not None and facts.error is not None:
            # nothing can be said of a file that does not parse; say so, go on
            at, col, message = facts.error
            unreadable.append(f"{path}:{at}:{col}: cannot be parsed ({message}); fix the syntax, then explain")
            continue
        explanations = [] if facts is None else explain_line(
            FileContext.of(target.relpath, facts, result.index, result.contract, config), line, reported)
        # each step's file as the location itself is shown (relative to the current
        # directory, as lint shows a finding's flow), not relative to the project root
        explanations = [dataclasses.replace(e, steps=tuple((target.show(p, config.root), n, c, m)
                                                           for p, n, c, m in e.steps)) for e in explanations]
        findings = [d for d in result.diagnostics if d.path == target.display and d.line == line]
        if column is not None and (any(e.col == column for e in explanations)
                                   or any(d.column == column for d in findings)):
            findings = [d for d in findings if d.column == column]
            # the codes lint reports at this column, not on the whole line
            explanations = [dataclasses.replace(e, codes=tuple(d.code for d in findings if d.code in e.codes))
                            for e in explanations if e.col == column]
        shown = f"{path}:{line}" if column is None else f"{path}:{line}:{column}"
        texts.append(render(shown if not explanations else str(path), explanations, findings))
        document = {"path": str(path), "line": line, "findings": [d.as_json() for d in findings],
                    "uses": [e.as_json() for e in explanations]}
        if column is not None:
            document = {"path": str(path), "line": line, "column": column, **document}
        documents.append(document)
    return Explained(documents, "".join(texts), unreadable, result.model_warnings)
