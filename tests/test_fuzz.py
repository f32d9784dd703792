"""Grammar-based fuzzing: programs hypothesmith derives from Python's own grammar (as
Black and LibCST fuzz themselves) go through lint and the codemod. Lint must not crash
or call valid code unparsable; the codemod must keep every file compiling, be
idempotent and leave nothing for SG002/SG003 to report.

CI runs a few examples (SEQGUARD_FUZZ_EXAMPLES, default 10: seconds on a slow machine);
set it higher for a long run (docs/architecture.md, "Testing").
"""

import ast
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings

hypothesmith = pytest.importorskip("hypothesmith", reason="the test extra installs hypothesmith")

from seqguard.config import Config
from seqguard.lint.analysis.source import lines_with_endings
from seqguard.lint.runner import lint_source

pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")  # generated code calls literals
EXAMPLES = int(os.environ.get("SEQGUARD_FUZZ_EXAMPLES", "10"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                       HealthCheck.data_too_large])
# A read lint must report and the codemod must guard, put in every generated program
# where it runs: first, after only a docstring and `from __future__` imports (which must
# come first). Appended, it was dead after a module-level `raise` (`raise\n`, found by
# the fuzzer): lint rightly walks no code that cannot run.
PROBE = "\n\ndef _probe(b):\n    return b.seq_lens_cpu.max() + b.seq_lens_sum\n\n\n"


def _with_probe(source: str) -> str:
    head = 0   # the lines that must stay in front of it
    for i, stmt in enumerate(ast.parse(source).body):
        docstring = i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
            and isinstance(stmt.value.value, str)
        if not (docstring or (isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__")):
            break
        head = stmt.end_lineno
    lines = lines_with_endings(source)
    front = "".join(lines[:head])
    if front and not front.endswith(("\n", "\r")):
        front += "\n"
    return front + PROBE + "".join(lines[head:])


@FUZZ
@given(hypothesmith.from_grammar())
# Found by the long run: `\` + CRLF at EOF parses, `\` + LF does not; lint once
# normalised line ends before `ast.parse` and called this valid file unparsable.
@example("importA   \n    \n \\\r\n")
@example("raise\n")
@example('"""doc"""\nfrom __future__ import annotations\nraise\n')
def test_lint_never_crashes_on_valid_python(source):
    found = lint_source(source)
    assert not [d for d in found if d.code == "SG000"], found   # it compiles, so it parses
    probed = lint_source(_with_probe(source))
    assert [d for d in probed if d.code == "SG000"] == []
    assert {d.code for d in probed} >= {"SG002"}


@FUZZ
@given(hypothesmith.from_grammar())
@example("raise\n")
# Found by the fuzz run of 2026-12-07: CPython takes a `\` + CRLF at the end of the file,
# LibCST's parser does not; the codemod must then fail that file and leave it as it was.
@example("\n\\\r\n")
def test_codemod_keeps_code_compiling_idempotent_and_lint_clean(source):
    import libcst as cst

    from seqguard.codemods.runner import codemod_options, run_codemod

    source = _with_probe(source)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        path = root / "m.py"
        path.write_bytes(source.encode())
        config = Config(root=root)
        options = codemod_options(config, "inline", "device")
        run_codemod([path], config, options, write=True, use_cache=False, jobs=1)
        once = path.read_bytes()
        try:
            cst.parse_module(source.encode())
        except cst.ParserSyntaxError:
            assert once == source.encode()   # not rewritten: failed, byte for byte as it was
            return
        compile(once, str(path), "exec")
        assert once != source.encode()   # the probe's reads are guarded
        run_codemod([path], config, options, write=True, use_cache=False, jobs=1)
        assert path.read_bytes() == once
        left = [d for d in lint_source(once.decode()) if d.code in ("SG002", "SG003")]
        assert left == []


def test_code_after_a_module_level_raise_is_not_walked():
    # it never runs (the module stops importing there); the same read before the raise is reported
    dead = lint_source("raise ImportError('use the new module')\n" + PROBE)
    live = lint_source(PROBE + "raise ImportError('use the new module')\n")
    assert [d for d in dead if d.code == "SG002"] == [] and {d.code for d in live} >= {"SG002"}
