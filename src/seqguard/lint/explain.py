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
from seqguard.lint.contract.reasons import Kind, Reason
from seqguard.lint.discovery import NOT_PYTHON, is_python_file, missing_paths
from seqguard.lint.model import MirrorAccess, Usage
from seqguard.lint.questions.mirror_present import MirrorPresent
from seqguard.lint.questions.per_step_sync import PerStepSync
from seqguard.lint.rule import FileContext, Subject, through_call
from seqguard.lint.rules import RULES_BY_CODE

# what a cleared read's reason tree rests on, at its root, in words
_CLEARED_BY = {Kind.TYPE: "its object's type", Kind.PATH: "a test on its path", Kind.IMPLIED: "a test on its path",
               Kind.CAPTURE: "a test on its path", Kind.BACKEND: "its backend's flag", Kind.COPY: "a tested copy",
               Kind.CALLS: "its callers", Kind.CLASS: "where its class is created", Kind.MODEL: "a fact of the model"}


@dataclasses.dataclass(frozen=True)
class Explanation:
    line: int
    col: int                   # 1-based
    subject: str
    use: str                   # read, pass, guard, assert, truthiness, host pull
    # "may be None" | "cannot be None" | "guarded" | "not a read" | "per-step sync" | "no per-step sync"
    verdict: str
    reason: str                # in words: what clears it (its tree rendered), or why it is reported
    cleared_by: Optional[str] = None
    steps: tuple[tuple[str, int, int, str], ...] = ()   # (relpath, line, 1-based col, what happens there)
    codes: tuple[str, ...] = ()                          # what lint reports for it on this run
    why: Optional[Reason] = None      # what clears it, as a reason tree
    callers: Optional[Reason] = None  # reported: its callers, asked and left open (the open call up the chain)

    def as_json(self) -> dict:
        return {"line": self.line, "column": self.col, "subject": self.subject, "use": self.use,
                "verdict": self.verdict, "reason": self.reason, "cleared_by": self.cleared_by,
                "steps": [{"path": p, "line": n, "column": c, "message": m} for p, n, c, m in self.steps],
                "codes": list(self.codes), "why": None if self.why is None else self.why.as_json(),
                "callers": None if self.callers is None else self.callers.as_json()}


def explain_line(ctx: FileContext, line: int, reported: dict[tuple[int, int], list[str]]) -> list[Explanation]:
    """Every mirror use and host pull of `line` in the file of `ctx`; `reported`: the
    codes lint reported this run at each (line, 1-based column) of the file."""

    def codes(col: int, subject: Subject) -> list[str]:
        """The codes reported at the column whose rules judge this kind of thing (a
        marker's SG007 may start where a read does)."""
        return [c for c in reported.get((line, col + 1), [])
                if c in RULES_BY_CODE and RULES_BY_CODE[c].SUBJECT is subject]

    out = []
    for access in ctx.facts.accesses:
        if access.line != line:
            continue
        out.append(_explain_access(ctx, access, codes(access.col, Subject.USE)))
    for cls in ctx.index.classes_in(ctx.relpath).values():
        for pull in cls.facts.host_pulls:
            if pull.line != line:
                continue
            why = callers = None
            if cls.flag is True or not (cls.is_backend or cls.is_root):
                verdict, reason = "no per-step sync", (
                    f"`{cls.name}` keeps the mirror ({ctx.flag} is {cls.flag}): a host pull there is its own "
                    f"business" if cls.is_backend or cls.is_root else f"`{cls.name}` is not an attention backend")
            else:
                judged = ctx.ask(PerStepSync).judge(ctx.relpath, pull)
                verdict = "per-step sync" if judged.per_step else "no per-step sync"
                why, callers = judged.cleared, judged.callers
                reason = judged.reason or "a pull of the device lengths on a path the skip runs on" \
                    if why is None else reason_text(why)
            out.append(Explanation(pull.line, pull.col + 1, pull.receiver, f"host pull ({pull.method})", verdict,
                                   reason, codes=tuple(codes(pull.col, Subject.PULL)), why=why,
                                   callers=callers))
    return sorted(out, key=lambda e: (e.col, e.use))


def _explain_access(ctx: FileContext, access: MirrorAccess, codes: list[str]) -> Explanation:
    subject = access.subject if access.alias_of is None else f"{access.subject} (alias of {access.alias_of})"
    base = dict(line=access.line, col=access.col + 1, subject=subject, use=access.usage.value, codes=tuple(codes))
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
    verdict = ctx.ask(MirrorPresent).judge(ctx.relpath, access)
    if verdict.cleared is not None:
        return Explanation(**base, verdict="cannot be None", reason=reason_text(verdict.cleared),
                           cleared_by=_CLEARED_BY.get(verdict.cleared.kind), why=verdict.cleared)
    steps = tuple((s.relpath, s.line, s.col + 1, s.message) for s in verdict.steps)
    owner = f" in `{backend.name}`, whose {ctx.flag} is {backend.flag}" if backend is not None else ""
    return Explanation(**base, verdict="may be None", reason=verdict.reason + through_call(read) + owner, steps=steps,
                       callers=verdict.callers)


def reason_text(reason: Reason) -> str:
    """A reason tree in words, one clause: what clears a question and what that rests
    on, or the call left open and what is open above it."""
    kind = reason.kind
    deeper = reason.rests_on[0] if reason.rests_on else None
    if kind is Kind.CALLS:
        assert deeper is not None and reason.site is not None
        said = "the one call" if reason.calls == 1 else f"all {reason.calls} calls"
        verb = "is" if reason.calls == 1 else "are"
        return (f"{said} of `{reason.function}` {verb} made where {reason.question} "
                f"({reason.site.relpath}:{reason.site.line}: {reason_text(deeper)})")
    if kind is Kind.CALLER:
        assert deeper is not None
        return f"made in `{reason.function}`, and {reason_text(deeper)}"
    if kind is Kind.CLOSURE:
        assert deeper is not None and reason.site is not None
        return (f"made in `{reason.site.scope}`, a closure over `{reason.function}`'s `{reason.argument}`, "
                f"and {reason_text(deeper)}")
    if kind is Kind.CYCLE:
        return f"`{reason.function}` is called back from itself there, and its other calls decide"
    if kind is Kind.CALL:
        assert reason.site is not None
        said = f"the call at {reason.site.relpath}:{reason.site.line} (in `{reason.site.scope}`)"
        said += f" leaves {', '.join(reason.modes)} possible" if reason.modes else " is not known to be safe"
        if reason.argument:
            said += f", a closure over `{reason.function}`'s `{reason.argument}`"
        if deeper is None:
            return said
        if deeper.kind is Kind.MODULE_LEVEL:
            return said + ", and it is made at module level or in a nested function, whose calls are not followed"
        if deeper.kind is Kind.DEPTH:
            return said + f", and callers are followed {deeper.limit} calls up at most"
        if deeper.kind is Kind.DEFERRED:
            return said + (f", and it is bound by `{deeper.fact}`: the function runs wherever the partial is called, "
                           f"which is not followed")
        return f"{said}; above it, {reason_text(deeper)}"
    if kind is Kind.NO_CALLS:
        return f"no call of `{reason.function}` is found in the project, so it is judged on its own"
    if kind is Kind.CYCLE_ONLY:
        said = f"`{reason.function}` is reached there only from inside its own cycle of calls"
        calls = [f"{n.site.relpath}:{n.site.line} (in `{n.site.scope}`)" for n in reason.rests_on[0].chain()
                 if n.kind is Kind.CALLS and n.site is not None] if reason.rests_on else []
        return f"{said}: {', then '.join(calls)}" if calls else said
    if kind is Kind.DEPTH:
        return f"callers are followed {reason.limit} calls up at most"
    if kind is Kind.BUDGET:
        return f"the calls above `{reason.function}` take more than {reason.limit} questions to follow"
    if kind is Kind.MODULE_LEVEL:
        return "it is made at module level or in a nested function, whose calls are not followed"
    return reason.fact   # a leaf, and UNBOUNDED: the engine model's own words


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
        if e.callers is not None:
            lines.append(f"    not cleared by its callers: {reason_text(e.callers)}")
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
        reported: dict[tuple[int, int], list[str]] = {}
        for d in result.diagnostics:
            if d.path == target.display:
                reported.setdefault((d.line, d.column), []).append(d.code)
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
