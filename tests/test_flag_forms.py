"""Every form a flag declaration takes gives the value the runtime's `getattr` sees,
and one written on some paths only is conditional, whatever its form."""

from textwrap import dedent

import pytest

from seqguard.lint.runner import lint_source

READS = "class B(AttentionBackend):\n    def f(self, fb):\n        return fb.seq_lens_cpu.max()\n\n\n"


@pytest.mark.parametrize("declaration, value", [
    ("B.needs_cpu_seq_lens = False\n", "False"),
    ("setattr(B, 'needs_cpu_seq_lens', False)\n", "False"),
    ("if FAST:\n    B.needs_cpu_seq_lens = False\n", "a conditional value"),
    ("if FAST:\n    setattr(B, 'needs_cpu_seq_lens', False)\n", "a conditional value"),
    ("for _ in range(1):\n    setattr(B, 'needs_cpu_seq_lens', False)\n", "a conditional value"),
])
def test_a_declaration_after_the_class_body_is_read_as_written(declaration, value):
    found = [d for d in lint_source(READS + declaration) if d.code == "SG003"]
    assert [d.message.split(" (", 1)[0] for d in found] == [
        f"`B` sets `needs_cpu_seq_lens` to {value} but reads `fb.seq_lens_cpu` without a None guard"]


def test_setattr_inside_a_method_under_a_condition_is_conditional():
    source = dedent("""\
        class B(AttentionBackend):
            def __init__(self, fast):
                if fast:
                    setattr(self, "needs_cpu_seq_lens", False)
            def f(self, fb):
                return fb.seq_lens_sum * 2
        """)
    assert [(d.code, d.line, "conditional" in d.message) for d in lint_source(source) if d.code == "SG003"] \
        == [("SG003", 6, True)]
