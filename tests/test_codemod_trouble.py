"""One file's trouble is one line, and a template keeps its meaning: the reproducers of a
hostile round against `seqguard codemod` and `lint --fix`, each run from the CLI."""

import json

import pytest

from seqguard.cli import main

READ = "def f(b):\n    return b.seq_lens_cpu.max()\n"
SUM_TIMES_TWO = "def f(b):\n    return b.seq_lens_sum * 2\n"


def _deep(depth: int = 135) -> str:
    return "def f(b):\n    return " + "max(" * depth + "b.seq_lens_cpu.max()" + ", 1)" * depth + "\n"


class _Lengths:
    """A device tensor stand-in: `.sum().item()` is the sum."""

    def __init__(self, values):
        self.values = values

    def sum(self):
        return self

    def item(self):
        return sum(self.values)


class _Batch:
    def __init__(self, values, num_pad, mirror):
        self.seq_lens = _Lengths(values)
        self.num_pad = num_pad
        self.seq_lens_sum = sum(values) if mirror else None


def test_a_template_keeps_its_meaning_where_it_is_substituted(runner, project, chdir):
    root = project({"m.py": SUM_TIMES_TWO},
                   '[tool.seqguard]\nfallbacks = { seq_lens_sum = "{obj}.seq_lens.sum().item() - {obj}.num_pad" }\n')
    chdir(root)
    result = runner.invoke(main, ["codemod", "."])
    assert result.exit_code == 0, result.stderr
    namespace: dict = {}
    exec(compile((root / "m.py").read_text(), "m.py", "exec"), namespace)
    # lengths 3 and 5 with 1 padding row: (8 - 1) * 2, not 8 - 1 * 2
    assert namespace["f"](_Batch([3, 5], 1, mirror=False)) == 14
    assert namespace["f"](_Batch([3, 5], 1, mirror=True)) == 16


@pytest.mark.parametrize("template, problem", [
    ("(yield)", "the template must use {obj}"),
    ("{obj}.seq_lens.sum().item() + (yield)", "uses yield"),
    ("(await {obj}.seq_lens)", "uses await"),
    ("(lambda: {obj}.seq_lens)()", "uses lambda"),
    ("(n := {obj}.seq_lens.sum())", "uses an assignment expression"),
    ("int({obj}.seq_lens.sum(", "is not one Python expression"),
    ("{obj}.seq_lens; import os", "is not one Python expression"),
    ("{obj}.{lengths}.sum()", "unknown placeholder {lengths}"),
    ("{obj}.seq_lens }", "unbalanced { or }"),
])
@pytest.mark.parametrize("command", [["lint", "."], ["codemod", "--diff", "."]])
def test_a_bad_template_is_one_configuration_error(runner, project, chdir, template, problem, command):
    chdir(project({"m.py": SUM_TIMES_TWO},
                  f"[tool.seqguard]\nfallbacks = {{ seq_lens_sum = {json.dumps(template)} }}\n"))
    result = runner.invoke(main, command)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert "[tool.seqguard] fallbacks: 'seq_lens_sum': " in result.stderr and problem in result.stderr
    assert "internal error" not in result.stderr and result.stdout == ""


def test_the_libcst_command_refuses_a_bad_template_too():
    from libcst.codemod import CodemodContext

    from seqguard.codemods import GuardMirrorReads
    with pytest.raises(ValueError, match="template for seq_lens_sum: .* uses yield"):
        GuardMirrorReads(CodemodContext(), template={"seq_lens_sum": "{obj}.seq_lens.sum() + (yield)"})


def test_a_file_too_deep_for_libcst_is_one_line_and_the_others_are_written(runner, project, chdir):
    root = project({"deep.py": _deep(), "plain.py": READ})
    chdir(root)
    result = runner.invoke(main, ["codemod", "."])
    assert result.exit_code == 1
    assert "failed: deep.py: nested too deeply for libcst to rewrite (RecursionError)" in result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert "if b.seq_lens_cpu is not None:" in (root / "plain.py").read_text()
    assert (root / "deep.py").read_text() == _deep()


def test_lint_fix_goes_on_past_a_file_too_deep_for_libcst(runner, project, chdir):
    base = "class AttentionBackend:\n    needs_cpu_seq_lens = True\n\n\n"
    deep = base + "class B(AttentionBackend):\n    def f(self, b):\n        return " + "max(" * 135 + "1" \
        + ", 1)" * 135 + "\n"
    root = project({"deep.py": deep, "plain.py": base + "class C(AttentionBackend):\n    pass\n"})
    chdir(root)
    result = runner.invoke(main, ["lint", "--fix", "--select", "SG001", "."])
    assert result.exit_code == 1
    assert "error: deep.py: fix not applied: nested too deeply for libcst to rewrite" in result.stderr
    assert "needs_cpu_seq_lens = True" in (root / "plain.py").read_text().split("class C")[1]
    assert (root / "deep.py").read_text() == deep


def _unary(depth: int) -> str:
    # a statement of 500-900 `-` signs around a read: libcst's positions fail while a
    # RecursionError unwinds (a KeyError), which no `except RecursionError` caught
    return "def f(b):\n    x = " + "-" * depth + "b.seq_lens_sum\n    return x\n"


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_deep_unary_nesting_fails_its_file_alone_and_every_other_file_is_written(runner, project, chdir, jobs):
    deep = {f"deep{n}.py": _unary(n) for n in (500, 900)}
    plain = {f"plain{i}.py": READ for i in range(8)}  # enough files for a worker pool
    root = project({**deep, **plain})
    chdir(root)
    result = runner.invoke(main, ["codemod", "--no-cache", "--formatter", "none", "--jobs", jobs, "."])
    assert result.exit_code == 1
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    failed = [line for line in result.stderr.splitlines() if line.startswith("failed: ")]
    assert failed == [f"failed: {name}: nested too deeply for libcst to rewrite (RecursionError); guard its reads "
                      f"by hand, or split the expression" for name in sorted(deep)]
    assert all((root / name).read_text() == text for name, text in deep.items())
    assert all("if b.seq_lens_cpu is not None:" in (root / name).read_text() for name in plain)


@pytest.mark.parametrize("command", [["lint", "--fix"], ["lint", "--fix", "--diff"]])
def test_lint_fix_goes_on_past_deep_unary_nesting(runner, project, chdir, command):
    base = "class AttentionBackend:\n    needs_cpu_seq_lens = True\n\n\n"
    deep = base + "class B(AttentionBackend):\n    def f(self, b):\n        x = " + "-" * 700 + "1\n        return x\n"
    root = project({"deep.py": deep, "plain.py": base + "class C(AttentionBackend):\n    pass\n"})
    chdir(root)
    result = runner.invoke(main, [*command, "--no-cache", "--select", "SG001", "."])
    assert result.exit_code == 1
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    word = "shown" if "--diff" in command else "applied"
    lines = [line for line in result.stderr.splitlines() if "deep.py" in line]
    assert len(lines) == 1 and f"deep.py: fix not {word}: nested too deeply for libcst to rewrite" in lines[0]
    assert (root / "deep.py").read_text() == deep
    if "--diff" in command:
        assert result.stdout.startswith("--- a/plain.py\n")
    else:
        assert "needs_cpu_seq_lens = True" in (root / "plain.py").read_text().split("class C")[1]


def test_any_error_rewriting_one_file_fails_that_file_alone(runner, project, chdir, monkeypatch):
    from seqguard.codemods.guard_mirror_reads import GuardMirrorReads

    real = GuardMirrorReads.transform_module_impl

    def broken(self, tree):
        if self.context.filename.endswith("bad.py"):
            raise ValueError("boom\nsecond line")
        return real(self, tree)

    monkeypatch.setattr(GuardMirrorReads, "transform_module_impl", broken)
    root = project({"bad.py": READ, "good.py": READ})
    chdir(root)
    result = runner.invoke(main, ["codemod", "--no-cache", "--formatter", "none", "--jobs", "1", "."])
    assert result.exit_code == 1
    assert "failed: bad.py: could not be rewritten (ValueError: boom); guard its reads by hand, or split the " \
           "expression\n" in result.stderr
    assert (root / "bad.py").read_text() == READ and "is not None" in (root / "good.py").read_text()


def test_a_worker_that_dies_fails_its_file_alone(runner, project, chdir, monkeypatch):
    import os

    from seqguard.codemods import runner as codemod_runner
    from seqguard.workers import can_fork

    if not can_fork():
        pytest.skip("the workers must inherit the patched function")
    real = codemod_runner._one_file

    def dying(task, *arguments):
        if task.display.endswith("bad.py"):
            os._exit(3)  # as a crash in native code would
        return real(task, *arguments)

    monkeypatch.setattr(codemod_runner, "_one_file", dying)
    files = {"bad.py": READ, **{f"plain{i}.py": READ for i in range(8)}}
    root = project(files)
    chdir(root)
    result = runner.invoke(main, ["codemod", "--no-cache", "--formatter", "none", "--jobs", "2", "."])
    assert result.exit_code == 1
    failed = [line for line in result.stderr.splitlines() if line.startswith("failed: ")]
    assert failed == ["failed: bad.py: the process rewriting it died (BrokenProcessPool); not written, guard its "
                      "reads by hand, or split the expression"]
    assert (root / "bad.py").read_text() == READ
    assert all("is not None" in (root / name).read_text() for name in files if name != "bad.py")


def test_a_rewrite_never_pushes_a_file_past_max_file_size(runner, project, chdir):
    limit = len(READ) + 5
    root = project({"m.py": READ}, f"[tool.seqguard]\nmax-file-size = {limit}\n")
    chdir(root)
    result = runner.invoke(main, ["codemod", "."])
    assert result.exit_code == 1
    assert "failed: m.py: the rewritten file would be" in result.stderr
    assert f"past max-file-size ({limit})" in result.stderr
    assert (root / "m.py").read_text() == READ
    # and lint keeps reading it: the file is as it was
    assert runner.invoke(main, ["lint", "."]).exit_code == 1


def test_a_baseline_nested_too_deeply_is_one_line(runner, project, chdir):
    root = project({"m.py": READ})
    (root / "bl.json").write_text("[" * 100000 + "]" * 100000)
    chdir(root)
    result = runner.invoke(main, ["lint", "--baseline", "bl.json", "."])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "cannot read the baseline (nested too deeply" in result.stderr


def test_a_pyproject_nested_too_deeply_is_one_line(runner, project, chdir):
    chdir(project({"m.py": READ}, "[tool.seqguard]\nselect = " + "[" * 50000 + "]" * 50000 + "\n"))
    result = runner.invoke(main, ["lint", "."])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "invalid TOML: nested too deeply to read" in result.stderr


# ---- diffs that git applies -----------------------------------------------------------

def _git(root, *args):
    import subprocess
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)


@pytest.fixture
def engine_repo(engine_copy):
    if _git(engine_copy, "init", "-q").returncode != 0:
        pytest.skip("git is not installed")
    _git(engine_copy, "add", "-A")
    _git(engine_copy, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "engine")
    return engine_copy


@pytest.mark.parametrize("command", [["lint", "--fix", "--diff"], ["codemod", "--diff"]])
@pytest.mark.parametrize("where", [".", "engine/layers"])
def test_a_diff_applies_with_git_from_the_project_root(runner, engine_repo, chdir, command, where):
    chdir(engine_repo / where)
    result = runner.invoke(main, [*command, "--no-cache", "."])
    assert result.stdout.startswith("--- a/engine/"), result.stdout[:200]
    patch = engine_repo.parent / "fix.patch"
    patch.write_text(result.stdout)
    applied = _git(engine_repo, "apply", str(patch))
    assert applied.returncode == 0, applied.stderr
    # what git wrote is what the command writes
    patched = _git(engine_repo, "diff").stdout
    assert patched
    _git(engine_repo, "checkout", "-q", ".")
    runner.invoke(main, [command[0], *(["--fix"] if command[0] == "lint" else []), "--no-cache", "."])
    assert _git(engine_repo, "diff").stdout == patched


def test_codemod_has_lints_output_habits_and_the_old_spellings_still_work(runner, engine_copy, chdir, tmp_path):
    chdir(engine_copy)
    new = runner.invoke(main, ["codemod", "--no-cache", "--check", "--format", "json", "."])
    old = runner.invoke(main, ["codemod", "--no-cache", "--check", "--report", "json", "."])
    assert new.exit_code == old.exit_code == 1 and json.loads(new.stdout) == json.loads(old.stdout)
    out = tmp_path / "out" / "fix.diff"
    quiet = runner.invoke(main, ["codemod", "--no-cache", "--diff", "-q", "-o", str(out), "--exit-zero", "."])
    assert quiet.exit_code == 0 and quiet.stdout == "" and quiet.stderr == ""
    assert out.read_text().startswith("--- a/engine/")
    checked = runner.invoke(main, ["codemod", "--no-cache", "--check", "--exit-zero", "."])
    assert checked.exit_code == 0 and "would change" in checked.stderr
