"""GuardMirrorReads as a LibCST codemod: run by libcst's own tool, chained with other
codemods in one pass, checked before anything is written, wrapped to the line length."""

import functools
import os
import shutil
import subprocess
import sys

import libcst
import pytest
from libcst.codemod import CodemodContext, MagicArgsCodemodCommand, VisitorBasedCodemodCommand

from seqguard.codemods import GuardMirrorReads

from conftest import ENGINE, REPO
from test_codemod import codemod, transform

ENV = {**os.environ, "PYTHONPATH": str(REPO / "src")}


def test_libcst_tool_runs_the_command_as_documented(tmp_path, runner):
    subprocess.run([sys.executable, "-m", "libcst.tool", "initialize", "."], cwd=tmp_path, check=True,
                   capture_output=True, env=ENV)
    config = tmp_path / ".libcst.codemod.yaml"
    # what `initialize` writes: the stock commands; list ours beside them
    assert "- 'libcst.codemod.commands'" in config.read_text()
    config.write_text(config.read_text().replace("- 'libcst.codemod.commands'",
                                                 "- 'libcst.codemod.commands'\n- 'seqguard.codemods'"))
    shutil.copytree(ENGINE / "engine", tmp_path / "engine")
    shutil.copy(ENGINE / "pyproject.toml", tmp_path / "pyproject.toml")  # the engine model, read per file
    done = subprocess.run([sys.executable, "-m", "libcst.tool", "codemod", "--no-format", "--hide-progress",
                           "guard_mirror_reads.GuardMirrorReads", "engine"],
                          cwd=tmp_path, capture_output=True, text=True, env=ENV, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Failed to codemod 0 files" in done.stderr
    # Run alone per file it writes what `seqguard codemod` writes with the whole project's
    # facts, except where only the whole project can prove a read safe: a buffer no store
    # makes None (the stores are everywhere), a feature the aggregator of another file forces.
    project = tmp_path / "project"
    shutil.copytree(ENGINE, project)
    # (libcst's runner formats with the tool it is told to, here none: compare unformatted)
    assert codemod(runner, "--formatter", "none", project).exit_code == 0
    whole_project_only = {"cuda_graph_runner.py", "two_batch.py"}
    for path in (project / "engine").rglob("*.py"):
        alone = (tmp_path / path.relative_to(project)).read_bytes()
        if path.name in whole_project_only:
            assert path.read_bytes() == (ENGINE / path.relative_to(project)).read_bytes(), path  # nothing to do
            assert alone != path.read_bytes() and b"is not None" in alone, path  # guarded, to be safe
            compile(alone, str(path), "exec")
        else:
            assert alone == path.read_bytes(), path
    backend = (tmp_path / "engine" / "layers" / "attention" / "draft_backend.py").read_text()
    assert "raise RuntimeError(" in backend and "seq_lens.cpu()" not in backend


class NoteTodo(VisitorBasedCodemodCommand):
    """A second, unrelated codemod: renames `todo()` calls to `note()`."""

    def leave_Name(self, original_node, updated_node):
        return updated_node.with_changes(value="note") if updated_node.value == "todo" else updated_node


class Both(MagicArgsCodemodCommand):
    def get_transforms(self):
        yield NoteTodo
        yield functools.partial(GuardMirrorReads, style="helper")


def test_chained_with_another_codemod_in_one_pass():
    source = "import os\n\n\ndef f(b):\n    todo()\n    return b.seq_lens_cpu.max() + b.seq_lens_sum\n"
    new = Both(CodemodContext()).transform_module(libcst.parse_module(source)).code
    assert new == ("import os\nfrom seqguard.runtime.fallback import host_seq_lens, host_seq_lens_sum\n\n\n"
                   "def f(b):\n    note()\n    return host_seq_lens(b.seq_lens_cpu, b.seq_lens).max() + "
                   "host_seq_lens_sum(b.seq_lens_sum, b.seq_lens)\n")


class AlsoRenames(GuardMirrorReads):
    """A broken variant that edits code outside the statements it guards."""

    def leave_Name(self, original_node, updated_node):
        return updated_node.with_changes(value="elsewhere") if updated_node.value == "unrelated" else updated_node

    def on_visit(self, node):
        return True


def test_a_result_that_differs_outside_the_guards_is_refused(tmp_path, runner, monkeypatch):
    import seqguard.codemods.runner as runner_module
    monkeypatch.setattr(runner_module, "GuardMirrorReads", AlsoRenames)
    sources = {
        "top.py": "unrelated = 1\n\n\ndef f(b):\n    return b.seq_lens_cpu.max()\n",
        "method.py": "class A:\n    def g(self):\n        unrelated = 1\n\n"
                     "    def f(self, b):\n        return b.seq_lens_cpu.max()\n",
        "same_function.py": "def f(b):\n    unrelated = 2\n    return b.seq_lens_cpu.max()\n",
    }
    for name, text in sources.items():
        (tmp_path / name).write_text(text)
    result = codemod(runner, tmp_path)
    assert result.exit_code == 1
    assert {name: (tmp_path / name).read_text() for name in sources} == sources
    refused = [line for line in result.stderr.splitlines() if line.startswith("failed: ")]
    assert refused == [f"failed: {tmp_path / name}: the result differs from the input outside the guarded "
                       f"statements; not written" for name in sorted(sources)]


def test_lines_fit_the_configured_line_length(tmp_path, runner):
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 60\n\n[tool.black]\nline-length = 100\n")
    source = ("def f(batch, other, n):\n"
              "    total = batch.seq_lens_sum + other.seq_lens_sum\n"
              "    for length in batch.seq_lens_cpu:\n"
              "        n += int(length)\n"
              "    return n + int(batch.seq_lens_cpu.max())\n\n\n"
              "class B(AttentionBackend):\n"
              "    needs_cpu_seq_lens = False\n\n"
              "    def g(self, forward_batch):\n"
              "        return forward_batch.seq_lens_cpu.max()\n")
    path = tmp_path / "m.py"
    path.write_text(source)
    assert codemod(runner, path).exit_code == 0
    new = path.read_text()
    compile(new, str(path), "exec")
    assert "raise RuntimeError(" in new and "        if batch.seq_lens_sum is not None\n" in new and "else:" in new
    assert [line for line in new.splitlines() if len(line) > 60] == []


@pytest.mark.parametrize("style", ["inline", "helper"])
def test_the_example_engine_stays_within_88_columns(runner, engine_copy, style):
    # (its `attention_plan` returns a dict on one line already past 88 columns: the
    # fallback written into it must wrap, a helper call as an inline one)
    before = {p: set(p.read_text().splitlines()) for p in engine_copy.rglob("*.py")}
    assert codemod(runner, "--style", style, "--formatter", "none", engine_copy).exit_code == 0
    written = [line for p, old in before.items() for line in p.read_text().splitlines() if line not in old]
    assert written and [line for line in written if len(line) > 88] == []


def test_run_alone_a_class_with_a_base_from_another_file_gets_no_host_sync():
    unknown = "class B(Base):\n    def f(self, fb):\n        return fb.seq_lens_cpu.max()\n"
    new = transform(unknown)
    assert "seq_lens.cpu()" not in new and "`B` derives from `Base` (another file" in new
    declared = ("class B(Base):\n    needs_cpu_seq_lens = True\n\n"
                "    def f(self, fb):\n        return fb.seq_lens_cpu.max()\n")
    assert "return fb.seq_lens.cpu().max()" in transform(declared)
    plain = "class Batch:\n    def f(self):\n        return self.seq_lens_cpu.max()\n"
    assert "return self.seq_lens.cpu().max()" in transform(plain)


def test_command_line_options_reach_the_command(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def f(b):\n    return b.seq_lens_sum * 2\n")
    (tmp_path / ".libcst.codemod.yaml").write_text("modules:\n- 'seqguard.codemods'\nrepo_root: '.'\nformatter: []\n"
                                                   "blacklist_patterns: []\ngenerated_code_marker: '@generated'\n")
    done = subprocess.run([sys.executable, "-m", "libcst.tool", "codemod", "--no-format", "--hide-progress",
                           "guard_mirror_reads.GuardMirrorReads", "--template", "seq_lens_sum={obj}.seq_lens.sum()",
                           "m.py"], cwd=tmp_path, capture_output=True, text=True, env=ENV, timeout=120)
    assert done.returncode == 0, done.stderr
    assert path.read_text() == ("def f(b):\n    if b.seq_lens_sum is not None:\n        return b.seq_lens_sum * 2\n"
                                "    else:\n        return b.seq_lens.sum() * 2\n")


def test_the_plan_is_decided_before_anything_changes_and_is_a_value():
    """Planning alone, on the tree as parsed: a Plan that cannot be changed (fields nor
    maps) whose report is what the command then applies and reports."""
    import dataclasses

    import pytest

    from seqguard.codemods.locate import locate
    from seqguard.codemods.plan import Layout, Plan, Planner
    from seqguard.codemods.sites import single_file_sites
    from seqguard.lint.analysis.source import split_lines

    source = ("def f(b):\n    total = b.seq_lens_sum + 1\n    for i in range(3):\n"
              "        print(b.seq_lens_cpu[i])\n    return total\n")
    tree = libcst.parse_module(source)
    sites = single_file_sites(source)
    lines = {s.access.line for s in sites}
    positions, parents = locate(tree, source, lines)
    layout = Layout(split_lines(source), 88, "\n", "    ", None, libcst.PartialParserConfig())
    plan = Planner(tree, layout, positions, parents, templates={}, fallback="device", style="inline",
                   device_attribute="seq_lens", mirrors=("seq_lens_cpu", "seq_lens_sum")).plan(sites)
    assert isinstance(plan, Plan)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.guarded = ()
    with pytest.raises(TypeError):
        plan.before[0] = ()
    assert plan.touched and all(key in plan.nodes for key in plan.touched)
    assert [(g.line, g.subject, g.hoisted_as) for g in plan.guarded] == [
        (2, "b.seq_lens_sum", None), (4, "b.seq_lens_cpu", "seq_lens_cpu_fallback")]
    command = GuardMirrorReads(CodemodContext())
    command.transform_module(libcst.parse_module(source))
    assert command.sites == list(plan.guarded) and command.manual == list(plan.manual) == []
