"""What a codemod run tells its user: a diff, a summary, or JSON for tools."""

from __future__ import annotations

import difflib
import json
from seqguard.codemods.plan import CONSUMER, MAINTENANCE
from seqguard.codemods.runner import CodemodReport, FileReport, Status
from seqguard.lint.analysis.source import decode_source, lines_with_endings
from seqguard.lint.fixes import file_patch


def render_diff(report: CodemodReport) -> str:
    chunks = []
    for file in report.files:
        if file.outcome.status is not Status.CHANGED and not (
            file.outcome.status in (Status.SKIPPED, Status.FAILED) and file.outcome.new_data
        ):
            continue
        # git's headers, relative to the project root: `git apply` there takes the diff
        chunks.append(file_patch((file.relpath or file.path).lstrip("/"), file.original, file.outcome.new_data))
    return "".join(chunks)


class LineMap:
    """Where a line of the file as it was read is in the file on disk after the run, for
    the JSON report: the same line unless the rewrite was written. A line the rewrite
    kept maps to where its text now is (a guarded statement moves into the `if`). The
    two versions of the file are decoded and matched once, however many lines are
    asked for."""

    def __init__(self, file: FileReport, written: bool) -> None:
        self.after: list[str] = []
        self.start: dict[int, int] = {}  # original line index -> the first of its new lines
        self.mapped = written and file.outcome.status is Status.CHANGED and file.original is not None
        if not self.mapped:
            return
        before = [line.strip() for line in lines_with_endings(decode_source(file.original))]
        self.after = [line.strip() for line in lines_with_endings(decode_source(file.outcome.new_data))]
        # the guard lines are inserted around kept lines: match each kept line to itself
        blocks = difflib.SequenceMatcher(None, before, self.after, autojunk=False).get_opcodes()
        for tag, i1, i2, j1, j2 in blocks:
            for i in range(i1, i2):
                self.start[i] = j1 + (i - i1) if tag == "equal" else j1

    def __call__(self, line: int) -> int:
        if not self.mapped:
            return line
        first = self.start.get(line - 1, line - 1)
        return line if first >= len(self.after) else first + 1

    def binding(self, site) -> int:
        """The line of `name = <fallback> if ... else None` in the written file: the last
        one above the statement it was bound before (as lint found the read, when nothing
        was written)."""
        if not self.mapped or site.hoisted_at is None:
            return site.line
        prefix = f"{site.hoisted_as} = "
        for number in range(min(self(site.hoisted_at), len(self.after)), 0, -1):
            if self.after[number - 1].startswith(prefix):
                return number
        return site.line


def render_json_report(report: CodemodReport, written: bool) -> str:
    files = []
    for f in report.files:
        at = LineMap(f, written)
        files.append({
            "path": f.path,
            "status": f.outcome.status.value,
            "reason": f.outcome.reason,
            "format_note": f.outcome.note,
            # `line`: in the file on disk after the run; `original_line`: where lint found it
            "sites": [{"line": at(s.line), "original_line": s.line, "column": s.column, "kind": s.kind,
                       "subject": s.subject, "host_sync": s.host_sync, "fallback": s.fallback or None,
                       "no_sync_reason": s.reason, "hoisted_as": s.hoisted_as,
                       "hoisted_line": at.binding(s) if s.hoisted_as else None,
                       "in_loop": s.in_loop}
                      for s in f.outcome.sites],
            "manual": [{"line": at(line), "original_line": line, "reason": why} for line, why in f.outcome.manual],
        })
    return json.dumps({"written": written, "formatter": report.formatter, "summary": _counts(report),
                       "files": files}, indent=2)


def _counts(report: CodemodReport) -> dict:
    sites = [s for f in report.files for s in f.outcome.sites]
    touched = len(report.files)
    return {
        "files_changed": report.count(Status.CHANGED),
        "files_unchanged": report.files_seen - report.count(Status.CHANGED) - report.count(Status.SKIPPED)
        - report.count(Status.FAILED),
        "files_skipped": report.count(Status.SKIPPED),
        "files_failed": report.count(Status.FAILED),
        "files_with_sites": touched,
        "maintenance_sites": sum(s.kind == MAINTENANCE for s in sites),
        "consumer_sites": sum(s.kind == CONSUMER for s in sites),
        "host_sync_fallbacks": sum(s.host_sync for s in sites),
        "no_sync_errors": sum(s.reason is not None for s in sites),
        "manual_sites": sum(len(f.outcome.manual) for f in report.files),
    }


def render_text_summary(report: CodemodReport, written: bool) -> str:
    c = _counts(report)
    verb = "changed" if written else "would change"
    lines = [f"seqguard codemod: {c['files_changed']} file(s) {verb}, {c['files_unchanged']} unchanged, "
             f"{c['files_skipped']} skipped, {c['files_failed']} failed",
             f"sites: {c['maintenance_sites']} maintenance (kept None, no sync), {c['consumer_sites']} consumer, "
             f"{c['manual_sites']} left for a manual fix"]
    if report.formatter and c["files_changed"]:
        lines.append(f"edited lines formatted with {report.formatter}")
    elif c["files_changed"] and not report.formatter_problem:  # a problem is the CLI's warning line
        lines.append("edited lines left as the codemod wrote them (formatter = \"none\")")
    for file in report.files:
        if file.outcome.status in (Status.SKIPPED, Status.FAILED):
            lines.append(f"{file.outcome.status}: {file.path}: {file.outcome.reason}")
        elif file.outcome.note:
            lines.append(f"not formatted: {file.path}: {file.outcome.note}")
    # Every line number here is of the file as lint read it, before the rewrite: the
    # reasons name such lines too ("changed at line 3"), and a --check, --diff and a
    # written run list the same entries. (The JSON report adds each site's line after it.)
    fallbacks = []   # (path, line, note): a fallback bound once before its loop is one entry
    for f in report.files:
        bound: set = set()
        for s in f.outcome.sites:
            if not s.host_sync:
                continue
            if s.hoisted_as is None:
                note = "  (inside a loop that changes what it reads: a copy every turn)" if s.in_loop else ""
                fallbacks.append((f.path, s.line, note))
            elif (s.hoisted_as, s.hoisted_at) not in bound:
                bound.add((s.hoisted_as, s.hoisted_at))
                fallbacks.append((f.path, s.hoisted_at, f"  (`{s.hoisted_as}`, once before its loop)"))
    refused = [(f.path, s.line, s.reason) for f in report.files for s in f.outcome.sites if s.reason]
    manual = [(f.path, line, why) for f in report.files for line, why in f.outcome.manual]
    if written and c["files_changed"] and (fallbacks or refused or manual):
        lines.append("(line numbers: the files as lint read them, before this rewrite)")
    if fallbacks:
        lines.append(f"host-sync fallbacks ({len(fallbacks)}; hand-optimise the hot ones):")
        lines.extend(f"  {path}:{line}{note}" for path, line, note in fallbacks)
    if refused:
        lines.append("no host-sync fallback (the code opted out of the mirror; a RuntimeError instead):")
        lines.extend(f"  {path}:{line}: {why}" for path, line, why in refused)
    if manual:
        lines.append("left for a manual fix:")
        lines.extend(f"  {path}:{line}: {why}" for path, line, why in manual)
    return "\n".join(lines) + "\n"
