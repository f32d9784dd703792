"""The walk's facts are the same when the bodies it skips are never built
(`analysis.skeleton`): on tricky layouts, on the engine fixture and on the standard
library, against a parse of the whole text."""

from __future__ import annotations

import ast
import sysconfig
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import seqguard.lint.facts as facts
from seqguard.config import config_from_table
from seqguard.lint.analysis.skeleton import def_spans, skeleton, tree_without_bodies
from seqguard.lint.phases import analysis_model

ROOT = Path(__file__).resolve().parent.parent


def _analyze(data: bytes, config) -> object:
    return facts.analyze(data, tuple(config.mirror_attributes), config.device_attribute, *analysis_model(config))


def _both(data: bytes, config=None, monkeypatch=None):
    config = config or config_from_table("")
    reduced = _analyze(data, config)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(facts, "tree_without_bodies", lambda *_: None)
        whole = _analyze(data, config)
    return reduced, whole


SOURCE = textwrap.dedent('''\
    import torch

    class Backend:
        needs_cpu_seq_lens = False

        def helper(self, x: int = 1, y: str = "a:b # c") -> int:
            total = 0
            for i in range(x):
                total += i
            return total

        @property
        def name(self):
            return "b"

        def read(self, forward_batch):
            return forward_batch.seq_lens_cpu.max()

    def plain(a,
              b=(1, 2),
              ) -> dict[str, int]:
        return {"a": a, "b": b}

    def one_liner(): return 1
    ''')


def test_a_function_without_relevant_words_loses_its_body_and_keeps_its_lines():
    reduced, shortened = skeleton(SOURCE, [4, 17])  # the flag's line, the read's line
    assert reduced.count("\n") == SOURCE.count("\n")
    assert {s.qualname for s in shortened} == {"Backend.helper", "Backend.name", "plain"}
    tree = ast.parse(reduced)
    original = ast.parse(SOURCE)
    ends = {n.name: n.end_lineno for n in ast.walk(original) if isinstance(n, ast.FunctionDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            assert node.end_lineno == ends[node.name]
            if node.name in ("helper", "name", "plain"):
                assert [type(s) for s in node.body] == [ast.Pass]
    # the header with a string holding `:` and `#` keeps its defaults; the read is kept
    assert 'y: str = "a:b # c"' in reduced and "forward_batch.seq_lens_cpu.max()" in reduced
    assert "def one_liner(): return 1" in reduced


def test_the_walk_sees_the_same_facts():
    reduced, whole = _both(SOURCE.encode())
    assert reduced == whole
    assert [a.line for a in reduced.accesses] == [17]


@pytest.mark.parametrize("body", [
    # a multi-line string whose lines sit at the method's indentation or left of it
    'class A:\n    def f(self):\n        s = """\nx = 1\n    def g(self): pass\n"""\n        return s\n'
    '    def h(self, b):\n        return b.seq_lens_cpu\n',
    # a bracket closed left of the body's indentation
    "class A:\n    def f(self):\n        x = [\n1, 2,\n    ]\n        return x\n"
    "    def h(self, b):\n        return b.seq_lens_cpu\n",
    # a backslash continuation, and a comment left of the body
    "def f():\n    x = 1 + \\\n2\n# a comment\n    return x\n\ndef h(b):\n    return b.seq_lens_cpu\n",
    # tabs, async, decorators, a nested class (walked), a lone def at the end without a newline
    "import functools\n\n@functools.cache\nasync def f(a):\n\tawait a\n\treturn 1\n\n"
    "def g():\n    class Inner:\n        pass\n    return Inner\n\ndef h(b):\n    return b.seq_lens_cpu",
    # a header spread over lines with a string holding a bracket, and a docstring
    'def f(a=")",\n      b="""x""") -> None:\n    """doc"""\n    return a\n\ndef h(b):\n    return b.seq_lens_sum\n',
    # `def` inside a module docstring at column 0
    '"""\ndef fake():\n    pass\n"""\n\ndef h(b):\n    return b.seq_lens_cpu\n',
])
def test_layouts_the_text_reading_could_get_wrong_give_the_same_facts(body):
    reduced, whole = _both(body.encode())
    assert reduced == whole
    assert reduced.error is None and reduced.accesses


# From an adversarial review: a triple quote in a one-quote string or a comment made the
# body look closed, and the reduced text then hid a real read or made one of a string;
# a form feed resets a line's indentation, so the text misread where a block ends.
@pytest.mark.parametrize("data", [
    b'def f():\n    x = \'"""\' + """\n"""\ndef g(b):\n    return b.seq_lens_cpu[0]\n# """\n',
    b'def f():\n    x = \'"""\' + """\ndef g(b):\n    return b.seq_lens_cpu[0]\n# """\n',
    b'def f():\n    x = \'"""\' + """\n# """\n',
    b'def f():\n    # """\n    x = """\ndef g(b):\n    return b.seq_lens_cpu[0]\n# """\n',
    b'def f():\n    y = 1\n\x0cimport os, \\\n    sys\n',
    b'def f():\n    y = 1\n    \x0cimport os, \\\n    sys\n',
    b'def f():\n    y = 1\n\x0cdef h():\n    pass\n',
    b'class A:\n    def m(self):\n        y = 1\n\x0c    def n(self):\n        pass\n',
    b'def f():\n    y = "\x00"\nimport os\n',
])
def test_what_an_adversarial_review_found_gives_the_same_facts(data):
    reduced, whole = _both(data)
    assert reduced == whole


def test_a_module_level_call_after_a_quote_in_a_string_is_not_read_as_a_docstring():
    text = 'def f():\n    x = \'"""\' + """\n"""\nhelper(batch)\n# """\n'
    tree = tree_without_bodies(text, []) or ast.parse(text)
    assert ast.dump(tree) == ast.dump(ast.parse(text)) or all(
        not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)) or "helper" not in s.value.value
        for s in tree.body)


def test_a_misread_text_falls_back_to_the_whole_parse():
    # the text says `f` ends at `x = [`; the reduced text would not parse as it said
    text = "class A:\n    def f(self):\n        x = [\n1]\n        return x\n"
    assert tree_without_bodies(text, []) is None
    spans = {s.qualname: (s.line, s.last) for s in def_spans(text)}
    assert spans == {"A.f": (2, 3)}   # the misreading: the walk's parse is of the whole text


def test_a_syntax_error_where_the_walk_goes_is_reported():
    text = b"def h(b):\n    return b.seq_lens_cpu +\n\ndef f():\n    return 1\n"
    reduced, whole = _both(text)
    assert reduced == whole and reduced.error is not None and "cannot parse" in reduced.error[2]


def test_crlf_text_is_parsed_whole():
    text = b"def f():\r\n    return 1\r\n\r\ndef h(b):\r\n    return b.seq_lens_cpu\r\n"
    reduced, whole = _both(text)
    assert reduced == whole and [a.line for a in reduced.accesses] == [5]


def _python_files(root: Path, limit: int) -> list[Path]:
    return sorted(root.rglob("*.py"))[:limit]


@pytest.mark.parametrize("preset", ["", 'preset = "sglang"'])
def test_the_engine_fixture_and_the_standard_library_give_the_same_facts(preset):
    config = config_from_table(preset)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = [*_python_files(ROOT / "fixtures", 200), *_python_files(stdlib, 40),
             *(stdlib / name for name in ("ast.py", "inspect.py", "typing.py", "argparse.py", "dataclasses.py"))]
    shortened = 0
    for path in files:
        data = path.read_bytes()
        reduced, whole = _both(data, config)
        assert reduced == whole, path
        text = data.decode("utf-8", "replace")
        if "\r" not in text and skeleton(text, []) is not None:
            shortened += 1
    assert shortened > 30   # the check is of reduced texts, not of fallbacks


def test_a_def_the_text_finds_inside_a_string_is_refused():
    text = '"""\ndef fake():\n    pass\n"""\n\ndef h(b):\n    x = 1\n    return b\n'
    assert {s.qualname for s in skeleton(text, [])[1]} == {"fake", "h"}
    assert tree_without_bodies(text, []) is None   # no `def fake` in the tree: the text was misread


def test_a_body_that_leaves_a_string_or_bracket_open_is_kept():
    # the text ends `f` where its string's lines go left; `f` keeps its body
    text = 'class A:\n    def f(self):\n        s = """\n    def g(self):\n        return 1\n"""\n        return s\n'
    assert "A.f" in {s.qualname for s in def_spans(text)}
    assert "A.f" not in {s.qualname for s in skeleton(text, [])[1]}
    text = "class A:\n    def k(self):\n        x = [\n    1]\n        return x\n    def m(self):\n        return 2\n"
    assert {s.qualname for s in skeleton(text, [])[1]} == {"A.m"}


@pytest.mark.parametrize("text", ["", "a", "a\n", "\n\n", "ab\ncd\n\nef", "x\r\ny\rz\n", "é\nü\n", "f\x0cg\u2028h\n"])
def test_line_breaks_are_found_where_python_ends_lines(text):
    from seqguard.lint.analysis.source import LINE_BREAK, line_break_offsets

    assert line_break_offsets(text) == [m.start() for m in LINE_BREAK.finditer(text)]


@pytest.mark.parametrize("text", [
    "def f():\n    y = 1\n\x0c    z = 2\n",
    "def f():\n    y = 1\n\x0cdef h():\n    pass\n",
    "class A:\n    def m(self):\n        y = 1\n\x0c    def n(self):\n        pass\n",
    "class A:\n    def m(self):\n        y = 1\n    \x0c    z = 2\n    def n(self):\n        pass\n",
])
def test_the_text_reads_a_form_feed_as_python_does(text):
    # a form feed starts a line's indentation again (the spans the callers read off
    # the text of a file never parsed); the skeleton itself parses such a text whole
    expected = []
    for stmt in ast.parse(text).body:
        if isinstance(stmt, ast.FunctionDef):
            expected.append((stmt.name, stmt.lineno, stmt.end_lineno))
        elif isinstance(stmt, ast.ClassDef):
            expected += [(f"{stmt.name}.{m.name}", m.lineno, m.end_lineno) for m in stmt.body
                         if isinstance(m, ast.FunctionDef)]
    assert [(s.qualname, s.line, s.last) for s in def_spans(text)] == expected
    assert skeleton(text, []) is None


# ---- the line search that decides which statements the walk enters ----------------------

def _lines_naively(source: str, words) -> list[int]:
    return [n for n, line in enumerate(source.split("\n"), 1) if any(w in line for w in words)]


@pytest.mark.parametrize("source, words", [
    ("a\nseq_lens_cpu\nb seq_lens_cpu seq_lens_cpu\n", ("seq_lens_cpu",)),
    ("x := 1\nif (y := f()):\n    pass\n", (":=",)),
    ("seq_lens seq_lens_cpu\nseq\n\nseq_lens", ("seq_lens", "seq_lens_cpu", "seq")),
    ("forward_mode\nspec_info.forward_mode\n", ("forward_mode", "spec_info", "in_capture")),
    ("", ("x",)),
    ("no match here\n", ("zz",)),
    ("endswordx", ("x",)),
])
def test_line_search_finds_each_line_once_in_order(source, words):
    from seqguard.lint.analysis.walk import _lines_mentioning

    assert _lines_mentioning(source, words) == _lines_naively(source, words)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab:=\n ", max_size=80), st.lists(st.text(alphabet="ab:=", min_size=1, max_size=3),
                                                            min_size=1, max_size=3))
def test_line_search_agrees_with_a_line_by_line_search(source, words):
    from seqguard.lint.analysis.walk import _lines_mentioning

    assert _lines_mentioning(source, words) == _lines_naively(source, words)
