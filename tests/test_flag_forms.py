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
    assert [d.message for d in found] == [
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


class AttentionBackend:
    needs_cpu_seq_lens = True


@pytest.mark.parametrize("body, lint_sees", [
    # a property with a setter: its getter's value (no SG008 "a method")
    ("    @property\n    def needs_cpu_seq_lens(self):\n        return False\n\n"
     "    @needs_cpu_seq_lens.setter\n    def needs_cpu_seq_lens(self, value):\n        pass\n", "declared False"),
    # set and then deleted in the body: the base's value
    ("    needs_cpu_seq_lens = False\n    del needs_cpu_seq_lens\n", "SG001 inherits True"),
    # a lambda attribute: a bound method, truthy
    ("    needs_cpu_seq_lens = lambda self: False\n", "SG008"),
])
def test_each_form_is_read_as_the_runtimes_getattr_sees_it(body, lint_sees):
    """What lint concludes agrees with executing the class: `getattr(b, flag, True)`."""
    source = "class B(AttentionBackend):\n" + body
    space = {"AttentionBackend": AttentionBackend}
    exec(source, space)
    runtime = bool(getattr(space["B"](), "needs_cpu_seq_lens", True))
    child = "\n\nclass C(B):\n    def f(self, fb):\n        return fb.seq_lens_cpu.max()\n"
    found = [(d.code, d.message, d.reason) for d in lint_source(source + child)]
    codes = {code for code, _, _ in found}
    if lint_sees == "declared False":
        # C inherits the property's False and reads the mirror unguarded
        assert runtime is False and "SG008" not in codes
        assert ("SG001", "attention backend `C` does not declare `needs_cpu_seq_lens`",
                "it inherits False (inherited from B)") in found
        assert [(code, m) for code, m, _ in found if code == "SG003"] == [
            ("SG003", "`C` sets `needs_cpu_seq_lens` to False but reads `fb.seq_lens_cpu` without a None guard")]
    elif lint_sees == "SG001 inherits True":
        assert runtime is True and "SG008" not in codes and "SG003" not in codes
        assert ("SG001", "attention backend `B` does not declare `needs_cpu_seq_lens`",
                "it inherits True (default of AttentionBackend)") in found
    else:
        assert runtime is True and "SG003" not in codes
        assert [(m, why) for code, m, why in found if code == "SG008"] == [
            ("`B.needs_cpu_seq_lens` is a method, which is always truthy; make it an attribute or a @property",
             "`getattr(backend, \"needs_cpu_seq_lens\")` gives the bound method, not what it returns")]
