"""Renderers for lint findings: text, json, sarif (2.1.0) and GitHub annotations."""

from __future__ import annotations

import collections
import dataclasses
import json
from typing import Callable, Mapping, Optional, Sequence

from seqguard import __version__
from seqguard.diagnostics import UNREADABLE_CODE, UNREADABLE_DOC, UNREADABLE_NAME, Diagnostic, Severity
from seqguard.lint.rules import RULES


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


def rule_catalogue() -> list[RuleInfo]:
    infos = [RuleInfo(UNREADABLE_CODE, UNREADABLE_NAME, Severity.ERROR, False, UNREADABLE_DOC)]
    for rule in RULES:
        infos.append(RuleInfo(rule.CODE, rule.NAME, rule.SEVERITY, rule.FIXABLE, rule.describe(),
                              rule.INVALID[0].code if rule.INVALID else None,
                              rule.VALID[0].code if rule.VALID else None))
    return infos

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def render_text(diagnostics: Sequence[Diagnostic]) -> str:
    lines = []
    for d in diagnostics:
        marker = " [*]" if d.fixable else ""
        lines.append(f"{d.path}:{d.line}:{d.column}: {d.code}{marker} {d.message} ({d.name})")
    return "\n".join(lines) + ("\n" if lines else "")


def render_json(diagnostics: Sequence[Diagnostic]) -> str:
    return json.dumps([d.as_json() for d in diagnostics], indent=2) + "\n"


def render_github(diagnostics: Sequence[Diagnostic]) -> str:
    level = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
    lines = []
    for d in diagnostics:
        message = d.message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        path = d.path.replace(",", "%2C").replace(":", "%3A")
        lines.append(f"::{level[d.severity]} title={d.code} {d.name},file={path},line={d.line},col={d.column}::{message}")
    return "\n".join(lines) + ("\n" if lines else "")


def _sarif_rules() -> list[dict]:
    return [{
        "id": info.code,
        "name": info.name,
        "shortDescription": {"text": info.summary},
        "fullDescription": {"text": info.doc or info.name},
        "defaultConfiguration": {"level": _SARIF_LEVEL[info.severity]},
    } for info in rule_catalogue()]


def render_sarif(diagnostics: Sequence[Diagnostic],
                 insertions: Optional[Mapping[tuple[str, tuple[int, str]], tuple[int, str]]] = None) -> str:
    """`insertions`: where each finding's fix lands and what it inserts, exactly
    (`lint.fixes.exact_insertions`); a fixable finding with an entry gets SARIF `fixes`."""
    rules = _sarif_rules()
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = []
    for d in diagnostics:
        result = {
            "ruleId": d.code,
            "ruleIndex": index.get(d.code, 0),
            "level": _SARIF_LEVEL[d.severity],
            "message": {"text": d.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": d.path.replace("\\", "/")},
                "region": {"startLine": d.line, "startColumn": d.column},
            }}],
        }
        if d.flow:
            # assignment -> propagation -> read, as code scanning draws a data flow
            result["codeFlows"] = [{"threadFlows": [{"locations": [{"location": {
                "physicalLocation": {"artifactLocation": {"uri": path.replace("\\", "/")},
                                     "region": {"startLine": line, "startColumn": column}},
                "message": {"text": message}}} for path, line, column, message in d.flow]}]}]
        where = (insertions or {}).get((d.path, d.fix)) if d.fix is not None else None
        if where is not None:
            line, text = where
            result["fixes"] = [{
                "description": {"text": f"insert `{d.fix[1].strip()}`"},
                "artifactChanges": [{
                    "artifactLocation": {"uri": d.path.replace("\\", "/")},
                    # an empty region at the start of `line`: an insertion before it
                    "replacements": [{"deletedRegion": {"startLine": line, "startColumn": 1,
                                                        "endLine": line, "endColumn": 1},
                                      "insertedContent": {"text": text}}],
                }],
            }]
        results.append(result)
    document = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "seqguard", "version": __version__,
                                "informationUri": "https://pypi.org/project/seqguard/", "rules": rules}},
            "results": results,
        }],
    }
    return json.dumps(document, indent=2) + "\n"


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


RENDERERS: dict[str, Callable[[Sequence[Diagnostic]], str]] = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
    "github": render_github,
}
