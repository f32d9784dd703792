"""Renderers for lint findings: text, json, sarif (2.1.0) and GitHub annotations."""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import urllib.parse
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

from seqguard import __version__
from seqguard.diagnostics import UNREADABLE_CODE, UNREADABLE_DOC, UNREADABLE_NAME, Diagnostic, Severity


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
    from seqguard.lint.rules import RULES  # the rules import the analyzer: not for a run that prints findings

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


def _github_data(text: str) -> str:
    """A workflow command's message: `%`, CR and LF escaped (GitHub's toolkit rules)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _github_property(text: str) -> str:
    """A workflow command's property value: also `:` and `,`, which end it."""
    return _github_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(diagnostics: Sequence[Diagnostic]) -> str:
    level = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
    lines = []
    for d in diagnostics:
        lines.append(f"::{level[d.severity]} title={_github_property(f'{d.code} {d.name}')},"
                     f"file={_github_property(d.path)},line={d.line},col={d.column}::{_github_data(d.message)}")
    return "\n".join(lines) + ("\n" if lines else "")


def _sarif_rules() -> list[dict]:
    return [{
        "id": info.code,
        "name": info.name,
        "shortDescription": {"text": info.summary},
        "fullDescription": {"text": info.doc or info.name},
        "defaultConfiguration": {"level": _SARIF_LEVEL[info.severity]},
    } for info in rule_catalogue()]


SRCROOT = "%SRCROOT%"
HOME = "https://github.com/seqguard/seqguard"


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
    what it writes, exactly (`lint.fixes.exact_insertions`); a fixable finding with an
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
            "message": {"text": d.message},
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
            verb = f"replace the class body's `pass` with `{d.fix[1].strip()}`" if replaced else \
                f"insert `{d.fix[1].strip()}`"
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
