"""Formatter-stable output: what `seqguard codemod` and `lint --fix` write is left as it
is by Black and `ruff format` on a file each accepted before."""

import shutil
import subprocess
import tempfile
import sys
import textwrap

import pytest

from seqguard.cli import main

# ruff-format and Black clean, with reads in the shapes the codemod rewrites inline: an
# argument of a long call, a comparison, a statement of a loop, a return
READS = textwrap.dedent('''\
    def plan(forward_batch, requests, speculative_step_id, raw_bs, bs):
        lens = (forward_batch.seq_lens_cpu[:raw_bs] + speculative_step_id + 1).tolist() + [
            0
        ] * (bs - raw_bs)
        total = min(forward_batch.seq_lens_sum, 4096, speculative_step_id * raw_bs + bs)
        fits = any(
            request is not None and request.width >= forward_batch.seq_lens_cpu[i]
            for i, request in enumerate(requests)
        )
        for i in range(bs):
            print(i, forward_batch.seq_lens_cpu[i])
        return lens, total, fits


    def longest(batch):
        return max(batch.seq_lens_cpu.tolist())
    ''')
# statements the codemod puts lines before (a copy bound before a loop, a raising
# guard), each right after a nested `def` or `class`, which both formatters part from
# the next statement by a blank line
AFTER_NESTED = textwrap.dedent('''\
    def lengths(batches):
        out = []
        batch = batches[0]

        def show(i):
            return i

        # every batch
        for i in range(len(batches)):
            show(i)
            out.append(batch.seq_lens_cpu.max() + i)
        return out


    def total(batch):
        def show(i):
            return i

        return batch.seq_lens_sum + show(1)


    class A:
        def f(self, batch):
            class Inner:
                pass

            x = batch.seq_lens_cpu.max() + 1
            return x
    ''')
# backends without the flag, in the shapes `--fix` inserts into
BACKENDS = textwrap.dedent('''\
    class AttentionBackend:
        needs_cpu_seq_lens = True


    class A(AttentionBackend):
        def f(self, fb):
            return 1


    class B(AttentionBackend):
        """Doc."""

        def f(self):
            pass


    class C(AttentionBackend):
        pass


    class D(AttentionBackend):
        """Doc."""


    class E(AttentionBackend):
        pass  # kept: a comment is not to be lost
    ''')

FORMATTERS = {"ruff": ["ruff", "format", "--check", "--quiet", "-"], "black": ["black", "--check", "-q", "-"]}


def accepted(formatter: str, data: bytes) -> bool:
    # outside this repository: its [tool.ruff] (120 columns) is not the examples' style
    done = subprocess.run(FORMATTERS[formatter], input=data, capture_output=True, cwd=tempfile.gettempdir())
    return done.returncode == 0


def needs(formatter: str) -> None:
    if shutil.which(formatter) is None:
        pytest.skip(f"{formatter} is not installed (the test extras install it)")


@pytest.mark.parametrize("formatter", ["ruff", "black"])
def test_the_sources_are_clean_to_begin_with(formatter):
    needs(formatter)
    assert accepted(formatter, READS.encode()) and accepted(formatter, BACKENDS.encode())


@pytest.mark.parametrize("formatter", ["ruff", "black"])
def test_codemod_output_is_left_alone_by_the_formatter(runner, project, chdir, formatter):
    needs(formatter)
    root = project({"m.py": READS}, f"[tool.seqguard]\nformatter = \"{formatter}\"\n")
    chdir(root)
    result = runner.invoke(main, ["codemod", "--no-cache", "."])
    assert result.exit_code == 0, result.stderr
    assert f"edited lines formatted with {formatter}" in result.stderr
    written = (root / "m.py").read_bytes()
    assert written.count(b"is not None") >= 5
    for check in FORMATTERS:
        needs(check)
        assert accepted(check, written), (check, written.decode())


@pytest.mark.parametrize("fallback", ["device", "raise"])
def test_lines_put_after_a_nested_def_keep_the_blank_line_formatters_want(runner, project, chdir, fallback):
    for check in FORMATTERS:
        needs(check)
        assert accepted(check, AFTER_NESTED.encode())
    root = project({"m.py": AFTER_NESTED}, "[tool.seqguard]\nformatter = \"none\"\n")
    chdir(root)
    result = runner.invoke(main, ["codemod", "--no-cache", "--fallback", fallback, "."])
    assert result.exit_code == 0, result.stderr
    written = (root / "m.py").read_bytes()
    assert written.count(b" is None:\n" if fallback == "raise" else b" is not None:\n") == 3
    for check in FORMATTERS:
        assert accepted(check, written), (check, written.decode())


def test_without_a_formatter_the_edits_are_left_as_generated(runner, project, chdir):
    root = project({"m.py": READS}, "[tool.seqguard]\nformatter = \"none\"\n")
    chdir(root)
    result = runner.invoke(main, ["codemod", "--no-cache", "."])
    assert result.exit_code == 0 and "formatted with" not in result.stderr
    assert b"is not None" in (root / "m.py").read_bytes()


def test_a_formatter_that_fails_leaves_the_rewrite_as_written_and_says_so(runner, project, chdir, tmp_path,
                                                                           monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ruff"
    fake.write_text(f"#!{sys.executable}\nimport sys\nsys.stderr.write('error: boom\\n')\nsys.exit(2)\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}")
    root = project({"m.py": READS}, "[tool.seqguard]\nformatter = \"ruff\"\n")
    chdir(root)
    result = runner.invoke(main, ["codemod", "--no-cache", "."])
    assert result.exit_code == 0, result.stderr
    assert "not formatted: m.py: ruff could not format the edited lines (error: boom); left as written" \
        in result.stderr
    compile((root / "m.py").read_bytes(), "m.py", "exec")
    assert b"is not None" in (root / "m.py").read_bytes()


def _installed_nowhere(monkeypatch, tmp_path) -> None:
    """Neither on PATH nor in seqguard's own environment (its scripts folders, `-m`)."""
    from seqguard.codemods import formatting

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(formatting, "_own_script_folders", lambda: [])
    monkeypatch.setattr(formatting, "_importable", lambda name: False)


def test_a_formatter_asked_for_but_missing_is_a_warning(runner, project, chdir, tmp_path, monkeypatch):
    _installed_nowhere(monkeypatch, tmp_path)
    chdir(project({"m.py": READS}, "[tool.seqguard]\nformatter = \"black\"\n"))
    result = runner.invoke(main, ["codemod", "--no-cache", "--check", "."])
    assert "warning: formatter = \"black\" but `black` is not installed (not on PATH, nor in seqguard's " \
           "environment" in result.stderr


def test_auto_finding_no_formatter_says_so_in_one_warning_when_there_are_edits(runner, project, chdir, tmp_path,
                                                                                monkeypatch):
    _installed_nowhere(monkeypatch, tmp_path)
    root = project({"m.py": READS, "clean.py": "x = 1\n"}, "[tool.seqguard]\n")
    chdir(root)
    result = runner.invoke(main, ["codemod", "--no-cache", "."])
    assert result.exit_code == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert warnings == [line for line in warnings if "formatter" in line] and len(warnings) == 1
    assert warnings[0].startswith("warning: formatter = \"auto\" found neither ruff nor Black (not on PATH, nor "
                                  "in seqguard's environment, ")
    assert "so nothing formatted the edited lines; install one there (" in warnings[0]
    assert "or set formatter = \"none\" in [tool.seqguard] to leave them as written" in warnings[0]
    assert "formatted with" not in result.stderr
    # nothing to format, nothing to say
    again = runner.invoke(main, ["codemod", "--no-cache", "clean.py"])
    assert again.exit_code == 0 and "warning" not in again.stderr


def test_formatter_none_is_named_in_the_summary(runner, project, chdir):
    chdir(project({"m.py": READS}, "[tool.seqguard]\nformatter = \"none\"\n"))
    result = runner.invoke(main, ["codemod", "--no-cache", "."])
    assert result.exit_code == 0 and "warning" not in result.stderr
    assert "edited lines left as the codemod wrote them (formatter = \"none\")\n" in result.stderr


def test_auto_finds_ruff_in_seqguards_own_environment_when_path_lacks_it(project, tmp_path):
    """Run as `<venv>/bin/seqguard` (pipx, a hook, a script): the interpreter's scripts
    folder holds ruff, PATH does not. Simulated with this interpreter and a PATH of
    system folders only."""
    import os
    import sysconfig

    scripts = sysconfig.get_path("scripts")
    path = "/usr/bin:/bin"
    if shutil.which("ruff", path=scripts) is None:
        pytest.skip("ruff is not installed in this interpreter's environment")
    if shutil.which("ruff", path=path) is not None:
        pytest.skip("ruff is installed in a system folder")
    root = project({"m.py": READS}, "[tool.seqguard]\n")
    env = {**os.environ, "PATH": path}
    done = subprocess.run([sys.executable, "-m", "seqguard", "codemod", "--no-cache", "."], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "edited lines formatted with ruff\n" in done.stderr and "warning" not in done.stderr
    written = (root / "m.py").read_bytes()
    assert written.count(b"is not None") >= 5 and accepted("ruff", written), written.decode()


def test_a_formatter_importable_but_in_no_scripts_folder_runs_as_python_m(runner, project, chdir, tmp_path,
                                                                         monkeypatch):
    from seqguard.codemods import formatting

    import os

    needs("ruff")
    path = os.environ["PATH"]
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(formatting, "_own_script_folders", lambda: [])
    if not formatting._importable("ruff"):
        pytest.skip("the ruff package is not importable here")
    assert formatting.find_formatter("ruff") == formatting.Formatter("ruff", (sys.executable, "-m", "ruff"))
    root = project({"m.py": READS}, "[tool.seqguard]\nformatter = \"ruff\"\n")
    chdir(root)
    result = runner.invoke(main, ["codemod", "--no-cache", "."])
    assert result.exit_code == 0 and "edited lines formatted with ruff" in result.stderr, result.stderr
    monkeypatch.setenv("PATH", path)  # the check runs ruff from PATH
    assert accepted("ruff", (root / "m.py").read_bytes())


def test_a_bad_formatter_setting_is_one_error(runner, project, chdir):
    chdir(project({"m.py": READS}, "[tool.seqguard]\nformatter = \"yapf\"\n"))
    result = runner.invoke(main, ["codemod", "."])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "formatter: expected one of auto, ruff, black, none, got 'yapf'" in result.stderr


@pytest.mark.parametrize("formatter", ["ruff", "black"])
def test_lint_fix_output_is_left_alone_by_the_formatter(runner, project, chdir, formatter):
    needs(formatter)
    root = project({"b.py": BACKENDS})
    chdir(root)
    result = runner.invoke(main, ["lint", "--no-cache", "--fix", "--select", "SG001", "."])
    assert "fixed 5" in result.stderr, result.stderr
    written = (root / "b.py").read_bytes()
    assert accepted(formatter, written), written.decode()
    # the empty body's `pass` made way for the flag; the commented one stayed
    assert b"class C(AttentionBackend):\n    needs_cpu_seq_lens = True\n\n\n" in written
    assert b"    needs_cpu_seq_lens = True\n    pass  # kept" in written
