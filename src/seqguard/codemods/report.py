"""What a codemod run tells its user: a diff, a summary, or JSON for tools."""

from __future__ import annotations

import difflib
import json

from seqguard.codemods.guard_mirror_reads import CONSUMER, MAINTENANCE
from seqguard.codemods.runner import CodemodReport, Status
from seqguard.codemods.layout import decode_source, lines_with_endings


def render_diff(report: CodemodReport) -> str:
    chunks = []
    for file in report.files:
        if file.outcome.status is not Status.CHANGED and not (file.outcome.status is Status.SKIPPED and file.outcome.new_data):
            continue
        before = lines_with_endings(decode_source(file.original))
        after = lines_with_endings(decode_source(file.outcome.new_data))
        name = (file.relpath or file.path).lstrip("/")
        chunks.extend(difflib.unified_diff(before, after, f"a/{name}", f"b/{name}"))
    text = "".join(chunks)
    return text if not text or text.endswith("\n") else text + "\n"


def render_json_report(report: CodemodReport, written: bool) -> str:
    return json.dumps({
        "written": written,
        "summary": _counts(report),
        "files": [{
            "path": f.path,
            "status": f.outcome.status.value,
            "reason": f.outcome.reason,
            "sites": [{"line": s.line, "column": s.column, "kind": s.kind, "subject": s.subject,
                       "host_sync": s.host_sync, "fallback": s.fallback or None, "no_sync_reason": s.reason}
                      for s in f.outcome.sites],
            "manual": [{"line": line, "reason": why} for line, why in f.outcome.manual],
        } for f in report.files],
    }, indent=2)


def _counts(report: CodemodReport) -> dict:
    sites = [s for f in report.files for s in f.outcome.sites]
    touched = len(report.files)
    return {
        "files_changed": report.count(Status.CHANGED),
        "files_unchanged": report.files_seen - report.count(Status.CHANGED) - report.count(Status.SKIPPED),
        "files_skipped": report.count(Status.SKIPPED),
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
             f"{c['files_skipped']} skipped",
             f"sites: {c['maintenance_sites']} maintenance (kept None, no sync), {c['consumer_sites']} consumer, "
             f"{c['manual_sites']} left for a manual fix"]
    for file in report.files:
        if file.outcome.status is Status.SKIPPED:
            lines.append(f"skipped: {file.path}: {file.outcome.reason}")
    fallbacks = [(f.path, s.line) for f in report.files for s in f.outcome.sites if s.host_sync]
    if fallbacks:
        lines.append(f"host-sync fallbacks ({len(fallbacks)}; hand-optimise the hot ones):")
        lines.extend(f"  {path}:{line}" for path, line in fallbacks)
    refused = [(f.path, s.line, s.reason) for f in report.files for s in f.outcome.sites if s.reason]
    if refused:
        lines.append("no host-sync fallback (the code opted out of the mirror; a RuntimeError instead):")
        lines.extend(f"  {path}:{line}: {why}" for path, line, why in refused)
    manual = [(f.path, line, why) for f in report.files for line, why in f.outcome.manual]
    if manual:
        lines.append("left for a manual fix:")
        lines.extend(f"  {path}:{line}: {why}" for path, line, why in manual)
    return "\n".join(lines) + "\n"
