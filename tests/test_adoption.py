"""Adopting seqguard on an existing tree: baseline, bulk suppression, the hierarchy graph."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from seqguard.cli import main

from conftest import ENGINE, REPO

READS = "def f(b):\n    x = b.seq_lens_cpu.max()\n    return b.seq_lens_sum + x\n"


def lint(runner, *args):
    return runner.invoke(main, ["lint", "--no-cache", *map(str, args)])


def test_write_then_use_a_baseline(runner, engine_copy, chdir):
    chdir(engine_copy)
    written = lint(runner, "--write-baseline", "baseline.json", ".")
    assert written.exit_code == 0 and "wrote 27 findings to baseline.json" in written.stderr
    document = json.loads(Path("baseline.json").read_text())
    entries = document["findings"]
    assert entries == sorted(entries, key=lambda e: (e["path"], e["code"], e["scope"], e["source"]))
    # SG001's entries also say what the backend inherits, and from where
    assert all(set(e) == {"path", "code", "scope", "source", "count"} | ({"detail"} if e["code"] == "SG001" else set())
               for e in entries)
    assert {e["detail"] for e in entries if e["code"] == "SG001"} >= {"True (inherited from AttentionBackend)"}
    assert document["version"] == 2
    # Two reads on one line are one entry with count 2: 25 entries hold 27 findings.
    assert len(entries) == 25 and sum(e["count"] for e in entries) == 27
    again = lint(runner, "--baseline", "baseline.json", ".")
    assert again.exit_code == 0 and again.stdout == "" and "; 27 in the baseline" in again.stderr


def test_write_baseline_count_agrees_with_the_next_run(runner, engine_copy, chdir):
    chdir(engine_copy)
    written = lint(runner, "--write-baseline", "b.json", ".")
    count = int(written.stderr.split("wrote ")[1].split()[0])
    again = lint(runner, ".")  # the baseline is now in [tool.seqguard]
    assert again.exit_code == 0, again.output
    assert again.stderr.rstrip().endswith(f"; {count} in the baseline")


QUALIFIED = 'backend-bases = ["engine.layers.attention.base.AttentionBackend"]'
ADD = 'baseline = "seqguard-baseline.json"'
# pyproject.toml before and after `--write-baseline seqguard-baseline.json`: the rest is untouched.
PYPROJECTS = {
    "no tool table": ('[project]\nname = "engine"  # keep me\n',
                      f'[project]\nname = "engine"  # keep me\n\n[tool.seqguard]\n{ADD}\n'),
    "other tool tables": ('[project]\nname = "engine"\n\n[tool.black]\nline-length = 100\n\n[build-system]\n'
                          'requires = ["setuptools"]\n',
                          '[project]\nname = "engine"\n\n[tool.black]\nline-length = 100\n\n'
                          f'[tool.seqguard]\n{ADD}\n\n[build-system]\nrequires = ["setuptools"]\n'),
    "seqguard table": (f'# top\n[tool.seqguard]\n{QUALIFIED}   # why\n\n[tool.other]\nx = 1\n',
                       f'# top\n[tool.seqguard]\n{QUALIFIED}   # why\n{ADD}\n\n[tool.other]\nx = 1\n'),
    "crlf": ('[project]\r\nname = "engine"\r\n', f'[project]\r\nname = "engine"\r\n\r\n[tool.seqguard]\r\n{ADD}\r\n'),
}


@pytest.mark.parametrize("kind", PYPROJECTS)
def test_write_baseline_records_it_in_tool_seqguard(runner, engine_copy, chdir, kind):
    chdir(engine_copy)
    before, after = PYPROJECTS[kind]
    Path("pyproject.toml").write_bytes(before.encode())
    written = lint(runner, "--write-baseline", "seqguard-baseline.json", ".")
    assert written.exit_code == 0, written.output
    assert f"; {ADD} added in [tool.seqguard] of pyproject.toml" in written.stderr  # relative, as findings are
    assert Path("pyproject.toml").read_bytes().decode() == after
    ran = lint(runner, ".")  # the adoption recipe is this one command
    assert ran.exit_code == 0 and ran.stdout == "", ran.output
    again = lint(runner, "--write-baseline", "seqguard-baseline.json", ".")
    assert Path("pyproject.toml").read_bytes().decode() == after and "added" not in again.stderr


def test_write_baseline_updates_an_older_setting(runner, engine_copy, chdir):
    chdir(engine_copy)
    Path("pyproject.toml").write_text(f'[tool.seqguard]\n{QUALIFIED}\nbaseline = "old.json"\n')
    written = lint(runner, "--write-baseline", "new.json", ".")
    assert 'baseline = "new.json" updated from "old.json"' in written.stderr  # the old value as TOML spells it
    assert Path("pyproject.toml").read_text() == f'[tool.seqguard]\n{QUALIFIED}\nbaseline = "new.json"\n'


def test_write_baseline_without_a_pyproject_creates_one(runner, tmp_path, chdir):
    (tmp_path / ".git").mkdir()
    (tmp_path / "a.py").write_text(READS)
    chdir(tmp_path)
    assert lint(runner, "--write-baseline", "base/line.json", ".").exit_code == 0
    assert (tmp_path / "pyproject.toml").read_text() == '[tool.seqguard]\nbaseline = "base/line.json"\n'
    assert lint(runner, ".").exit_code == 0


def test_baseline_survives_unrelated_edits_and_catches_new_findings(runner, engine_copy, chdir):
    chdir(engine_copy)
    lint(runner, "--write-baseline", "baseline.json", ".")
    metrics = Path("engine/managers/metrics.py")
    # unrelated edits move every line; a new unguarded read is added
    metrics.write_text('"""Moved down."""\n\n\nimport os\n\n' + metrics.read_text() +
                       "\n\ndef extra(batch):\n    return batch.seq_lens_sum * 2\n")
    result = lint(runner, "--baseline", "baseline.json", "--output-format", "json", ".")
    found = json.loads(result.stdout)
    assert result.exit_code == 1
    assert [(f["path"], f["code"]) for f in found] == [("engine/managers/metrics.py", "SG002")]
    assert "return batch.seq_lens_sum * 2" in metrics.read_text().splitlines()[found[0]["line"] - 1]


NEW_BACKEND = ("\n\nclass NewBackend(TorchNativeBackend):\n    def f(self, fb):\n"
               "        return fb.seq_lens.sum()\n")


def test_fix_diff_and_add_ignore_touch_only_what_the_baseline_does_not_hold(runner, engine_copy, chdir):
    chdir(engine_copy)
    assert runner.invoke(main, ["lint", "--no-cache", "--write-baseline", "bl.json", "."]).exit_code == 0
    before = {p: p.read_bytes() for p in engine_copy.rglob("*.py")}
    backend = engine_copy / "engine/layers/attention/torch_backend.py"
    backend.write_text(backend.read_text() + NEW_BACKEND)
    # the baselined backends without a flag (three of them) are not fixed: only the new one
    diff = runner.invoke(main, ["lint", "--no-cache", "--fix", "--diff", "."])
    assert [line for line in diff.stdout.splitlines() if line.startswith("+++ ")] == [
        "+++ b/engine/layers/attention/torch_backend.py"]
    assert "1 fix would be applied" in diff.stderr
    fixed = runner.invoke(main, ["lint", "--no-cache", "--fix", "."])
    assert "fixed 1" in fixed.stderr
    assert backend.read_text().endswith("class NewBackend(TorchNativeBackend):\n    needs_cpu_seq_lens = True\n\n"
                                        "    def f(self, fb):\n        return fb.seq_lens.sum()\n")
    # --add-ignore marks only the new backend's own finding (SG006: it never reads the
    # mirror it keeps), nothing the baseline holds, so none of its entries goes stale
    marked = runner.invoke(main, ["lint", "--no-cache", "--add-ignore", "."])
    assert "added suppressions on 1 line(s)" in marked.stderr and "stale" not in marked.stderr
    assert "class NewBackend(TorchNativeBackend):  # seqguard: ignore[SG006]" in backend.read_text()
    assert {p: p.read_bytes() for p in engine_copy.rglob("*.py") if p != backend} == \
        {p: data for p, data in before.items() if p != backend}


def test_baseline_from_pyproject_and_stale_entries(runner, engine_copy, chdir):
    chdir(engine_copy)
    lint(runner, "--write-baseline", "baseline.json", ".")  # also sets `baseline` in [tool.seqguard]
    draft = Path("engine/speculative/draft.py")
    draft.write_text(draft.read_text().replace("for length in lens:", "for length in batch.seq_lens.tolist():"))
    result = lint(runner, ".")
    assert result.exit_code == 0
    assert "stale baseline entry: engine/speculative/draft.py: SG002 in draft_positions: `for length in lens:`" \
        in result.stderr
    pruned = lint(runner, "--write-baseline", "baseline.json", ".")
    assert "wrote 26 findings" in pruned.stderr
    assert "stale" not in lint(runner, ".").stderr


def test_partial_runs_keep_other_files_entries(runner, engine_copy, chdir):
    chdir(engine_copy)
    lint(runner, "--write-baseline", "baseline.json", ".")
    lint(runner, "--write-baseline", "baseline.json", "engine/managers/metrics.py")
    assert len(json.loads(Path("baseline.json").read_text())["findings"]) == 25


def test_bad_baseline_file_is_a_clear_error(runner, engine_copy, chdir):
    chdir(engine_copy)
    Path("bad.json").write_text("{not json")
    result = lint(runner, "--baseline", "bad.json", ".")
    assert result.exit_code == 2 and "bad.json: cannot read the baseline" in result.stderr
    missing = lint(runner, "--baseline", "nope.json", ".")
    assert missing.exit_code == 2 and "create it with --write-baseline" in missing.stderr


def test_add_ignore_is_idempotent_and_preserves_formatting(runner, tmp_path):
    path = tmp_path / "m.py"
    source = ('def f(b):\r\n    x = b.seq_lens_cpu.max()  # keep\r\n'
              '    s = """text\r\n    # seqguard: ignore"""\r\n    return b.seq_lens_sum + x\r\n')
    path.write_bytes(source.encode())
    first = lint(runner, "--add-ignore", path)
    assert first.exit_code == 0, first.output
    once = path.read_bytes()
    assert once == (b'def f(b):\r\n    x = b.seq_lens_cpu.max()  # keep  # seqguard: ignore[SG002]\r\n'
                    b'    s = """text\r\n    # seqguard: ignore"""\r\n'
                    b'    return b.seq_lens_sum + x  # seqguard: ignore[SG002]\r\n')
    second = lint(runner, "--add-ignore", path)
    assert path.read_bytes() == once and "added suppressions on 0 line(s)" in second.stderr


def test_add_ignore_merges_codes_and_skips_unsafe_lines(runner, tmp_path, chdir):
    path = tmp_path / "m.py"
    path.write_text("def f(b):\n    return b.seq_lens_cpu.max() + \\\n        b.seq_lens_sum  # seqguard: "
                    "ignore[SG005]\n")
    chdir(tmp_path)
    result = lint(runner, "--add-ignore", "m.py")
    text = path.read_text()
    # paths as lint prints them: relative to the current directory, not absolute
    assert "warning: m.py:2: no suppression added: the line continues with a backslash" in result.stderr
    assert "# seqguard: ignore[SG002, SG005]" in text


def test_unused_suppressions_are_reported(runner, tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def f(b):\n    return b.seq_lens.max()  # seqguard: ignore[SG002]\n")
    result = lint(runner, path)
    assert "SG007" in result.stdout and result.exit_code == 1


def test_graph_of_the_example_engine(runner, chdir):
    chdir(ENGINE)
    tree = runner.invoke(main, ["graph", "--no-cache", "."])
    assert tree.exit_code == 0
    lines = tree.stdout.splitlines()
    assert lines[0].startswith("AttentionBackend (engine/layers/attention/base.py:1): needs_cpu_seq_lens=True")
    assert any("FlashInferBackend" in line and "inherited from AttentionBackend" in line and "[keeps host sync]" in line
               for line in lines)
    assert any(line.strip().startswith("└── DraftExtendBackend") and "inherited from DraftTritonBackend" in line
               for line in lines)
    assert "VideoAttentionBackend" not in tree.stdout  # the unrelated same-named base
    mermaid = runner.invoke(main, ["graph", "--no-cache", "--format", "mermaid", "."]).stdout
    assert mermaid.startswith("graph TD\n") and "-->" in mermaid and "class " in mermaid
    dot = runner.invoke(main, ["graph", "--no-cache", "--format", "dot", "."]).stdout
    assert dot.startswith("digraph backends {") and dot.rstrip().endswith("}") and "->" in dot


def test_the_lint_guide_shows_the_current_mermaid_graph(runner, chdir):
    chdir(ENGINE)
    mermaid = runner.invoke(main, ["graph", "--no-cache", "--format", "mermaid", "."]).stdout
    assert mermaid in (REPO / "docs" / "guides" / "lint.md").read_text()


@pytest.mark.slow
def test_pre_commit_with_a_baseline_passes_old_findings_and_fails_new_ones(tmp_path):
    exe = shutil.which("pre-commit")
    assert exe, "pre-commit is not installed; `pip install -e '.[test]'` installs it"
    repo = tmp_path / "engine"
    shutil.copytree(ENGINE, repo)
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(Path.home()),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run([sys.executable, "-m", "seqguard", "lint", "--no-cache", "--write-baseline",
                    "seqguard-baseline.json", "."], cwd=repo, check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(REPO / "src")})  # this checkout's seqguard
    assert 'baseline = "seqguard-baseline.json"' in (repo / "pyproject.toml").read_text()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "."], cwd=repo, check=True)

    def hook(*files):
        return subprocess.run([exe, "try-repo", str(REPO), "seqguard-lint", "--files", *files], cwd=repo,
                              capture_output=True, text=True, env=env, timeout=600)

    old = hook("engine/managers/metrics.py", "engine/managers/schedule_batch.py")
    assert old.returncode == 0, old.stdout + old.stderr
    metrics = repo / "engine/managers/metrics.py"
    metrics.write_text(metrics.read_text() + "\n\ndef extra(batch):\n    return batch.seq_lens_sum * 2\n")
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    new = hook("engine/managers/metrics.py")
    assert new.returncode == 1 and "engine/managers/metrics.py:15:12: SG002" in new.stdout
