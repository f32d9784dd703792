"""A baseline that follows code (issue 23): a move is not new, a copy is, a comment
changes nothing, and a parent's flag that flips makes its child's SG001 new."""

import json
import textwrap

from seqguard.cli import main

from conftest import bench_module
from seqguard.lint import baseline as baselines

BASE = """
class AttentionBackend:
    needs_cpu_seq_lens = True


class ParentBackend(AttentionBackend):
    needs_cpu_seq_lens = True


class ChildBackend(ParentBackend):
    pass
"""
HELPERS = """
def moved_one(batch):
    return batch.seq_lens_cpu.max()


def copied_one(batch):
    return batch.seq_lens_cpu.tolist()


def commented(batch):
    return batch.seq_lens_sum + 1
"""


CODES = ["--select", "SG001,SG002,SG003"]


def lint_json(runner, *args):
    result = runner.invoke(main, ["lint", "--no-cache", *CODES, "--output-format", "json", *args])
    return result, json.loads(result.stdout or "[]")


def write_baseline(runner, name: str) -> None:
    written = runner.invoke(main, ["lint", "--no-cache", *CODES, "--write-baseline", name, "."])
    assert written.exit_code == 0, written.output


def test_a_move_is_not_new_a_copy_and_a_flip_are(project, runner, chdir):
    root = project({"pkg/backends.py": BASE, "pkg/helpers.py": HELPERS})
    chdir(root)
    write_baseline(runner, "baseline.json")
    entries = json.loads((root / "baseline.json").read_text())["findings"]
    assert sorted((e["path"], e["code"], e["scope"]) for e in entries) == [
        ("pkg/backends.py", "SG001", "ChildBackend"),
        ("pkg/helpers.py", "SG002", "commented"),
        ("pkg/helpers.py", "SG002", "copied_one"),
        ("pkg/helpers.py", "SG002", "moved_one"),
    ]
    assert lint_json(runner, ".")[1] == []
    # move one function to another file, copy another's read into a new file, comment a
    # third flagged line, and flip the parent's flag
    helpers = textwrap.dedent(HELPERS)
    moved = helpers.split("\n\n\n")[0]
    copied = helpers.split("\n\n\n")[1]
    (root / "pkg/helpers.py").write_text(helpers.replace(moved + "\n\n\n", "").replace(
        "return batch.seq_lens_sum + 1", "return batch.seq_lens_sum + 1  # TODO: review"))
    (root / "pkg/other.py").write_text("import os\n\n\n" + moved + "\n")
    (root / "pkg/new.py").write_text(copied + "\n")
    (root / "pkg/backends.py").write_text(textwrap.dedent(BASE).replace(
        "class ParentBackend(AttentionBackend):\n    needs_cpu_seq_lens = True",
        "class ParentBackend(AttentionBackend):\n    needs_cpu_seq_lens = False"))
    result, new = lint_json(runner, ".")
    assert result.exit_code == 1
    assert sorted((f["path"], f["code"], f["line"]) for f in new) == [
        ("pkg/backends.py", "SG001", 10),  # ChildBackend now inherits False from ParentBackend
        ("pkg/new.py", "SG002", 2),        # the copy
    ], new
    assert "(1 finding moved to another file)" in result.stderr
    # the entry that recorded ChildBackend inheriting True is the only stale one
    stale = [line for line in result.stderr.splitlines() if "stale baseline entry" in line]
    assert len(stale) == 1 and "SG001 in ChildBackend" in stale[0], result.stderr
    # benchmarks/bench_history.py reads these lines: its patterns match them
    bench = bench_module("bench_history")
    assert bench.STALE.match(stale[0]).group(2, 3, 4) == ("pkg/backends.py", "SG001", "ChildBackend")
    assert bench.MOVED.search(result.stderr).group(1) == "1"


def test_a_second_copy_is_new_even_when_the_original_moved(project, runner, chdir):
    """Two files now hold what one baseline entry recorded: one is the move, the other new."""
    root = project({"pkg/helpers.py": "def f(batch):\n    return batch.seq_lens_cpu.max()\n"})
    chdir(root)
    write_baseline(runner, "b.json")
    (root / "pkg/helpers.py").unlink()
    for name in ("a.py", "z.py"):
        (root / "pkg" / name).write_text("def f(batch):\n    return batch.seq_lens_cpu.max()\n")
    result, new = lint_json(runner, ".")
    assert [f["path"] for f in new] == ["pkg/z.py"] and "(1 finding moved" in result.stderr


def test_a_move_from_a_file_not_checked_is_a_copy(project, runner, chdir):
    """pre-commit checks only the changed files: an entry of a file that still exists but
    was not checked cannot be known to have left it."""
    source = "def f(batch):\n    return batch.seq_lens_cpu.max()\n"
    root = project({"pkg/helpers.py": source})
    chdir(root)
    write_baseline(runner, "b.json")
    (root / "pkg/new.py").write_text(source)
    result, new = lint_json(runner, "pkg/new.py")
    assert [f["path"] for f in new] == ["pkg/new.py"] and "moved" not in result.stderr


def test_comments_and_spacing_do_not_change_a_key():
    assert baselines.normalise("x = b.seq_lens_cpu[0]   # TODO: review") == "x = b.seq_lens_cpu[0]"
    assert baselines.normalise("x = b.seq_lens_cpu[0]  # seqguard: ignore[SG002]") == "x = b.seq_lens_cpu[0]"
    kept = 's = "#not a comment" + str(b.seq_lens_sum)'
    assert baselines.normalise(kept) == kept
    assert baselines.normalise("    f(b.seq_lens_cpu,  # why\n") == "f(b.seq_lens_cpu,"
    # inside a triple-quoted string the line does not tokenize alone: kept as it is
    assert baselines.normalise('text""" + b.seq_lens_sum  # x') == 'text""" + b.seq_lens_sum # x'


def test_a_version_1_baseline_is_migrated(project, runner, chdir):
    root = project({"pkg/backends.py": BASE,
                    "pkg/helpers.py": "def f(batch):\n    return batch.seq_lens_cpu.max()  # old note\n"})
    chdir(root)
    old = {"version": 1, "tool": "seqguard", "findings": [
        {"path": "pkg/backends.py", "code": "SG001", "scope": "ChildBackend",
         "source": "class ChildBackend(ParentBackend):", "count": 1},
        {"path": "pkg/helpers.py", "code": "SG002", "scope": "f",
         "source": "return batch.seq_lens_cpu.max() # old note", "count": 1},
    ]}
    (root / "b.json").write_text(json.dumps(old))
    (root / "pyproject.toml").write_text('[tool.seqguard]\nbaseline = "b.json"\n')
    result, new = lint_json(runner, ".")
    assert result.exit_code == 0 and new == [], result.output
    assert "a version-1 baseline, read as version 2" in result.stderr
    write_baseline(runner, "b.json")
    document = json.loads((root / "b.json").read_text())
    assert document["version"] == 2
    assert [e.get("detail") for e in document["findings"] if e["code"] == "SG001"] == [
        "True (inherited from ParentBackend)"]


def test_sg001_detail_comes_from_the_rule_not_from_the_message_text(tmp_path):
    """The key records what the backend inherits as the rule states it: rewording
    the message must not change a key (it did when the detail was cut from the text)."""
    import dataclasses
    from pathlib import Path

    from seqguard.config import Config
    from seqguard.lint.runner import lint_source

    found = [d for d in lint_source(BASE, config=Config(root=Path("."))) if d.code == "SG001"]
    assert [d.detail for d in found] == ["True (inherited from ParentBackend)"]
    reworded = dataclasses.replace(found[0], message="ChildBackend: no flag of its own")
    lines = BASE.splitlines()
    assert baselines.key_of(reworded, "m.py", lines) == baselines.key_of(found[0], "m.py", lines)
    assert baselines.key_of(reworded, "m.py", lines).detail == "True (inherited from ParentBackend)"


def test_the_baseline_and_sarif_read_each_file_once(project, runner, chdir, monkeypatch):
    root = project({"helpers.py": HELPERS})
    chdir(root)
    write_baseline(runner, "base.json")
    (root / "helpers.py").write_text(HELPERS + "\n\ndef fresh(b):\n    return b.seq_lens_cpu.sum()\n")
    reads = []
    real = baselines.read_lines
    monkeypatch.setattr(baselines, "read_lines", lambda path: reads.append(path) or real(path))
    result = runner.invoke(main, ["lint", "--no-cache", *CODES, "--baseline", "base.json", "--output-format", "sarif",
                                  "."])
    assert result.exit_code == 1, result.output
    assert len(json.loads(result.stdout)["runs"][0]["results"]) == 1   # only `fresh` is new
    assert [p.rsplit("/", 1)[-1] for p in reads] == ["helpers.py"]
