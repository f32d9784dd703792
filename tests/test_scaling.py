"""Lint and explain do work near-linear in the mirror reads of one file (issue 37: 1,000
reads took 3.6 s, 4,000 took 31 s). Counted, not timed: the lines a run executes (each
pass of a loop or comprehension counts) and the positions the enclosing-function lookup
visits, for a file of N and of 2N reads (benchmarks/bench_reads_scaling.py's file);
doubling the reads may at most a little more than double the work (quadratic work
quadruples it: the code before the fix gave 2.66 for lint and 3.01 for explain from 800
to 1,600 reads; after it, 2.03 and 2.12)."""

import importlib.util
import sys
from pathlib import Path

import pytest

from seqguard.config import load_config
from seqguard.lint.api import LintOptions, run_lint
from seqguard.lint.explain import explain_locations, parse_locations
from seqguard.lint.project.calls import NestedDefs, SpanIndex

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_reads_scaling.py"
# doubling the reads doubles the work and the file; a little over 2 allows for what is
# paid once per file, not a term that grows with the reads
MOST_PER_DOUBLING = 2.3


def _generator(shape: str = "mixed"):
    spec = importlib.util.spec_from_file_location("bench_reads_scaling", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.GENERATORS[shape]


def _steps(run) -> int:
    """The trace events of `run()`: each function entered, line executed (a loop's, or
    a comprehension's, on every pass) and return."""
    count = 0

    def hook(frame, event, arg):
        nonlocal count
        count += 1
        return hook

    sys.settrace(hook)
    try:
        run()
    finally:
        sys.settrace(None)
    return count


def _work(tmp_path, chdir, reads: int, command: str, shape: str = "mixed") -> tuple[int, int]:
    """(steps, enclosing-function positions visited) of one lint or explain run on a
    fresh project whose one file holds `reads` mirror reads (or, for the long shape,
    `reads` statements of one function, a quarter of them reads)."""
    source, last = _generator(shape)(reads)
    root = tmp_path / f"{command}{shape}{reads}"
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.seqguard]\n")
    (root / "generated.py").write_text(source)
    chdir(root)
    config = load_config([Path("generated.py")])
    if command == "lint":
        def run():
            result = run_lint([Path("generated.py")], config,
                              LintOptions(output_format="json", use_cache=False, jobs=1))
            # the reads were judged
            assert result.output.count('"code": "SG002"') >= (reads // 2 if shape == "mixed" else reads // 4)
    else:
        def run():
            explained = explain_locations(parse_locations([f"generated.py:{last}"]), config, use_cache=False, jobs=1)
            assert explained.documents[0]["uses"]                        # the last read was explained
    visited = SpanIndex.visited + NestedDefs.visited
    steps = _steps(run)
    return steps, SpanIndex.visited + NestedDefs.visited - visited


@pytest.mark.parametrize("command", ["lint", "explain"])
def test_doubling_the_reads_of_a_file_at_most_doubles_the_work(tmp_path, chdir, command):
    steps_n, visited_n = _work(tmp_path, chdir, 800, command)
    steps_2n, visited_2n = _work(tmp_path, chdir, 1600, command)
    assert steps_2n / steps_n <= MOST_PER_DOUBLING, (steps_n, steps_2n)
    # each read's enclosing function is found by bisection: positions visited grow with
    # the reads (a scan of every span, or every statement, per read grows with their square)
    assert visited_n > 0 and visited_2n / visited_n <= MOST_PER_DOUBLING, (visited_n, visited_2n)


@pytest.mark.parametrize("command", ["lint", "explain"])
def test_a_long_function_binding_ever_more_names_costs_linear_work(tmp_path, chdir, command):
    """One function whose every statement adds a name known not None: each later
    assignment asked whether anything known was under its target by scanning all of
    them, and each `if` copied them all (from 600 to 1,200 statements, the counts grew
    2.64x for lint and 2.78x for explain before the fix; 1.89x and 1.97x after it)."""
    steps_n, _ = _work(tmp_path, chdir, 600, command, "long")
    steps_2n, _ = _work(tmp_path, chdir, 1200, command, "long")
    assert steps_2n / steps_n <= MOST_PER_DOUBLING, (steps_n, steps_2n)


def test_the_counts_tell_quadratic_work():
    """The measure can fail: a lookup scanning every function per read (what
    `function_at` did) quadruples its steps when the reads double."""
    def scan(functions: int) -> int:
        spans = [(f"f{i}", 3 * i + 1, 3 * i + 2) for i in range(functions)]
        return _steps(lambda: [min((s for s in spans if s[1] <= line <= s[2]), key=lambda s: s[2] - s[1])
                               for line in range(1, 3 * functions, 3)])

    def bisect(functions: int) -> int:
        index = SpanIndex([(f"f{i}", 3 * i + 1, 3 * i + 2) for i in range(functions)])
        return _steps(lambda: [index.innermost(line) for line in range(1, 3 * functions, 3)])

    assert scan(800) / scan(400) > 3.5
    assert bisect(800) / bisect(400) <= MOST_PER_DOUBLING


def test_the_span_index_answers_as_a_scan_does():
    spans = (("A.f", 3, 9), ("g", 12, 12), ("A.h", 10, 11), ("k", 20, 30))
    index = SpanIndex(spans)
    for line in range(0, 33):
        holding = [s for s in spans if s[1] <= line <= s[2]]
        assert index.holding(line) == holding, line
    # spans read off a text may overlap: searched one by one, the shortest wins
    overlapping = SpanIndex((("outer", 1, 10), ("inner", 3, 5)))
    assert overlapping.innermost(4) == "inner" and overlapping.innermost(7) == "outer"
    assert overlapping.innermost(11) is None


def test_nested_defs_give_the_innermost_function_holding_a_line():
    import ast

    source = ("def top():\n"          # 1
              "    x = 1\n"            # 2
              "    def a():\n"         # 3
              "        def b():\n"     # 4
              "            pass\n"     # 5
              "        y = 2\n"        # 6
              "    class C:\n"         # 7
              "        def m(self):\n"  # 8
              "            pass\n"     # 9
              "    if x:\n"            # 10
              "        def c():\n"     # 11
              "            pass\n"     # 12
              "    return x\n")        # 13
    top = ast.parse(source).body[0]
    nested = NestedDefs(top)
    expected = {1: "top", 2: "top", 3: "a", 4: "b", 5: "b", 6: "a", 7: "top", 8: "m", 9: "m", 10: "top",
                11: "c", 12: "c", 13: "top"}
    assert {line: nested.innermost(line).name for line in expected} == expected
