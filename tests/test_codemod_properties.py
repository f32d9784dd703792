"""Property tests: on generated code the codemod always compiles, is idempotent,
and leaves nothing for SG002/SG003 to report."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqguard.lint.runner import lint_source

from test_codemod import transform

OBJECTS = st.sampled_from(["b", "self", "fb", "batch.inner", "xs[0]"])
MIRRORS = st.sampled_from(["seq_lens_cpu", "seq_lens_sum"])


@st.composite
def statement(draw, depth=0):
    obj, other, attr = draw(OBJECTS), draw(OBJECTS), draw(MIRRORS)
    m, o = f"{obj}.{attr}", f"{other}.{attr}"
    simple = [
        f"{m} += n",
        f"{m} = {m}[idx]",
        f"{m} = torch.cat([{m}, {o}])",
        f"{m}[0] = n",
        f"{obj}.seq_lens_cpu.add_(1)",
        f"y = int({m}.max()) + n",
        f"y = {m} / n",
        f"y = [v for v in {obj}.seq_lens_cpu]",
        f"lens = {m}",
        "y = lens.max() if n else 0",
        f"g(seq_lens_cpu={m})",
        f"y = f'{{{m}}}'",
        f"if {m} is not None:\n    y = {m} + 1",
        f"y = {m} + 1  # a comment",
        "pass",
    ]
    text = draw(st.sampled_from(simple))
    if depth < 2 and draw(st.booleans()):
        inner = draw(st.lists(statement(depth + 1), min_size=1, max_size=3))
        header = draw(st.sampled_from(["if n > 1:", "for k in range(n):", "while n:", "with ctx:", "try:"]))
        body = "\n".join(_indent(s) for s in inner)
        text = f"{header}\n{body}" + ("\nexcept Exception:\n    pass" if header == "try:" else "")
    return text


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


@st.composite
def module(draw):
    bodies = draw(st.lists(statement(), min_size=1, max_size=6))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = "def f(b, fb, self, batch, xs, n, idx, ctx, g, torch):\n" + "\n".join(_indent(s) for s in bodies) + "\n"
    return text.replace("\n", newline)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(module())
def test_generated_code_compiles_is_idempotent_and_lint_clean(source):
    once = transform(source)
    compile(once, "<generated>", "exec")
    assert transform(once) == once
    assert [d for d in lint_source(once) if d.code in ("SG002", "SG003")] == []
    if "\r\n" in source:
        assert "\n" not in once.replace("\r\n", "")
