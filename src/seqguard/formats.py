"""Renderers for lint findings: text, json, sarif (2.1.0) and GitHub annotations."""

from __future__ import annotations

import json
from typing import Callable, Sequence

from seqguard import __version__
from seqguard.diagnostics import UNREADABLE_CODE, UNREADABLE_NAME, Diagnostic, Severity
from seqguard.lint.rules import RULES

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
    rules = [{"id": UNREADABLE_CODE, "name": UNREADABLE_NAME,
              "shortDescription": {"text": "A file that cannot be read, decoded or parsed"},
              "defaultConfiguration": {"level": "error"}}]
    for rule in RULES:
        doc = rule.describe()
        rules.append({
            "id": rule.CODE,
            "name": rule.NAME,
            "shortDescription": {"text": doc.splitlines()[0] if doc else rule.NAME},
            "fullDescription": {"text": doc or rule.NAME},
            "defaultConfiguration": {"level": _SARIF_LEVEL[rule.SEVERITY]},
        })
    return rules


def render_sarif(diagnostics: Sequence[Diagnostic]) -> str:
    rules = _sarif_rules()
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = [{
        "ruleId": d.code,
        "ruleIndex": index.get(d.code, 0),
        "level": _SARIF_LEVEL[d.severity],
        "message": {"text": d.message},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": d.path.replace("\\", "/")},
            "region": {"startLine": d.line, "startColumn": d.column},
        }}],
    } for d in diagnostics]
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


RENDERERS: dict[str, Callable[[Sequence[Diagnostic]], str]] = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
    "github": render_github,
}
