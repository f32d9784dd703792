"""Guards, aliases and usage kinds: what counts as a read, and what protects it."""

import ast
from textwrap import dedent

import pytest

from seqguard.lint.runner import lint_source


def codes(source: str) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in lint_source(dedent(source))]


@pytest.mark.parametrize("source", [
    # else-branch of `is None`
    """
    def f(b):
        if b.seq_lens_cpu is None:
            x = 0
        else:
            x = b.seq_lens_cpu.max()
    """,
    # `None is not X`, and a conjunction
    """
    def f(b, n):
        if None is not b.seq_lens_sum and n > 0:
            return b.seq_lens_sum // n
    """,
    # early raise, then use
    """
    def f(b):
        if b.seq_lens_cpu is None:
            raise ValueError("need the mirror")
        return b.seq_lens_cpu.tolist()
    """,
    # `or` short-circuit
    """
    def f(b):
        return b.seq_lens_sum is None or b.seq_lens_sum > 4
    """,
    # guard on the alias
    """
    def f(b):
        lens = b.seq_lens_cpu
        if lens is not None:
            return lens.max()
    """,
    # alias bound under a guard
    """
    def f(b):
        if b.seq_lens_cpu is not None:
            lens = b.seq_lens_cpu
            return lens.max()
    """,
    # isinstance narrows too
    """
    def f(b):
        if isinstance(b.seq_lens_cpu, torch.Tensor):
            return b.seq_lens_cpu.max()
    """,
    # pass-through forms
    """
    def f(b, other):
        other.seq_lens_cpu = b.seq_lens_cpu
        g(seq_lens_cpu=b.seq_lens_cpu)
        log.info(f"{b.seq_lens_sum=}")
        return b.seq_lens_cpu
    """,
    # comprehension condition guards the element
    """
    def f(bs):
        return [b.seq_lens_cpu.max() for b in bs if b.seq_lens_cpu is not None]
    """,
    # metadata only: shape of device lengths is not a mirror read
    """
    def f(b):
        return b.seq_lens.shape[0]
    """,
])
def test_guarded_or_not_a_read(source):
    assert codes(source) == []


@pytest.mark.parametrize("source, line", [
    ("def f(b):\n    return b.seq_lens_sum // 2\n", 2),
    ("def f(b):\n    return -b.seq_lens_sum\n", 2),
    ("def f(b):\n    return len(b.seq_lens_cpu)\n", 2),
    ("def f(b):\n    return b.seq_lens_sum < 10\n", 2),
    ("def f(b, x):\n    return x[b.seq_lens_cpu]\n", 2),
    ("def f(b):\n    return [x for x in b.seq_lens_cpu]\n", 2),
    ("def f(b, out):\n    out.copy_(b.seq_lens_cpu)\n", 2),
    ("def f(b):\n    lens = b.seq_lens_cpu\n    lens = lens[:2]\n", 3),
    # a guard in another function does not count
    ("def g(b):\n    if b.seq_lens_cpu is None:\n        return\ndef f(b):\n    return b.seq_lens_cpu.max()\n", 5),
    # reassigning the alias ends the guard's reach only for the new value: a None store kills it
    ("def f(b):\n    if b.seq_lens_cpu is not None:\n        b.seq_lens_cpu = None\n        return "
     "b.seq_lens_cpu.max()\n", 4),
])
def test_unguarded_reads(source, line):
    assert codes(source) == [(line, "SG002")]


def test_custom_mirror_names():
    from pathlib import Path
    from seqguard.config import Config
    config = Config(root=Path("."), mirror_attributes=("host_lens",), device_attribute="lens")
    found = lint_source("def f(b):\n    return b.host_lens.max() + b.seq_lens_cpu.max()\n", config=config)
    assert [(d.line, d.column, d.code) for d in found] == [(2, 12, "SG002")]


def test_columns_are_one_based():
    (d,) = lint_source("def f(b):\n    return b.seq_lens_cpu.max()\n")
    assert (d.line, d.column) == (2, 12)


def test_suppression_comments():
    source = dedent("""
    def f(b):
        x = b.seq_lens_cpu.max()  # seqguard: ignore[SG002]
        y = b.seq_lens_cpu.max()  # seqguard: ignore
        z = b.seq_lens_cpu.max()  # seqguard: ignore[SG005]
    """)
    assert [(d.line, d.code) for d in lint_source(source)] == [(5, "SG007"), (5, "SG002")]


def test_backend_flag_decides_between_sg002_sg003_and_silence():
    source = dedent("""
    class Keeps(AttentionBackend):
        needs_cpu_seq_lens = True
        def f(self, fb):
            return fb.seq_lens_cpu.max()

    class Drops(AttentionBackend):
        needs_cpu_seq_lens = False
        def f(self, fb):
            return fb.seq_lens_cpu.max()

    class Plain:
        def f(self, fb):
            return fb.seq_lens_cpu.max()
    """)
    assert codes(source) == [(10, "SG003"), (14, "SG002")]


def test_conditional_flag_in_init_and_property():
    source = dedent("""
    class A(AttentionBackend):
        def __init__(self, x):
            if x:
                self.needs_cpu_seq_lens = False
        def f(self, fb):
            return fb.seq_lens_sum + 1

    class P(AttentionBackend):
        @property
        def needs_cpu_seq_lens(self):
            return self.x
        def f(self, fb):
            return fb.seq_lens_sum + 1
    """)
    assert codes(source) == [(7, "SG003"), (14, "SG003")]


def test_sg006_respects_inherited_reads():
    source = dedent("""
    class Parent(AttentionBackend):
        needs_cpu_seq_lens = True
        def plan(self, fb):
            return fb.seq_lens_cpu.tolist()

    class Child(Parent):
        needs_cpu_seq_lens = True
    """)
    assert codes(source) == []


def test_sg004_ignores_host_mirror_and_metadata():
    source = dedent("""
    class B(AttentionBackend):
        needs_cpu_seq_lens = False
        def f(self, fb):
            bs = fb.seq_lens.shape[0]
            n = fb.seq_lens.numel()
            if fb.seq_lens_cpu is not None:
                fb.seq_lens_cpu.tolist()
            return bs, n, fb.extend_seq_lens.cpu()
    """)
    assert codes(source) == [(9, "SG004")]


def test_syntax_error_and_deep_nesting_are_findings():
    """Each of the three ways a deep file fails is one SG000, and each input is checked
    to reach its own branch (the parser's limit, `ast`'s RecursionError, the analysis's)."""
    (d,) = lint_source("def f(:\n")
    assert d.code == "SG000" and d.line == 1 and "cannot parse" in d.message
    # past the parser's own limit: a SyntaxError
    (deep,) = lint_source("x = " + "(" * 300 + "1" + ")" * 300 + "\n")
    assert deep.code == "SG000" and deep.message == "cannot parse: too many nested parentheses"
    # the parser accepts it, building the tree recurses too deep: `ast.parse` raises RecursionError
    long_chain = "x = 1" + " + 1" * 100_000 + "\n"
    with pytest.raises(RecursionError):
        ast.parse(long_chain)
    (chain,) = lint_source(long_chain)
    assert chain.code == "SG000" and chain.message.startswith("cannot parse: maximum recursion depth exceeded")
    # parsed, but deeper than the analysis can recurse: one finding, no crash
    read_chain = "def f(b):\n    return b.seq_lens_cpu" + " + 1" * 2000 + "\n"
    ast.parse(read_chain)
    (read,) = lint_source(read_chain)
    assert read.code == "SG000" and read.message == "cannot analyse: expression nested too deeply"


def test_rebinding_from_itself_keeps_the_value_unknown_also_behind_an_index():
    # `X = X[idx]` is a read of X, and X is no safer after it (the codemod may skip the
    # statement when X is None): found by the Hypothesis idempotence property
    source = "def f(xs, n, idx):\n    xs[0].seq_lens_cpu = xs[0].seq_lens_cpu[idx]\n    xs[0].seq_lens_cpu += n\n"
    assert [d.line for d in lint_source(source)] == [2, 3]


@pytest.mark.parametrize("expression, pulls", [
    ("{obj}.seq_lens.cpu()", True), ("{obj}.seq_lens.to('cpu')", True), ("{obj}.seq_lens.to(device='cpu')", True),
    ("list({obj}.seq_lens)", True), ("int({obj}.seq_lens.sum())", True), ("{obj}.seq_lens.sum().item()", True),
    ("{obj}.seq_lens", False), ("{obj}.seq_lens.to({obj}.device)", False), ("{obj}.seq_lens.shape[0]", False),
])
def test_lint_and_the_codemod_ask_one_question_about_a_host_pull(expression, pulls):
    """A template the codemod calls sync-free is one SG004 never reports in an
    opted-out backend, and the other way round."""
    from seqguard.codemods.templates import template_syncs
    from seqguard.lint.runner import lint_source

    source = ("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n\n"
              f"    def f(self, fb):\n        return {expression.format(obj='fb')}\n")
    reported = [d for d in lint_source(source) if d.code == "SG004"]
    assert template_syncs(expression) is pulls
    assert bool(reported) is pulls, reported
