from __future__ import annotations

from typing import Iterator

from seqguard.lint.model import Usage
from seqguard.lint.questions.mirror_present import MirrorPresent
from seqguard.lint.rule import FileContext, Finding, Invalid, Rule, Subject, Valid, span_end


class AssertMirrorNotNone(Rule):
    """Flags `assert <mirror> is not None` on a path where the skip can leave the mirror None.

    Why: the assert guards the code after it only by crashing where the mirror is absent,
    with an `AssertionError` instead of an `AttributeError`: the same outage, on the same
    configurations (SGLang shipped such asserts in its DSA indexer and removed them). Under
    `python -O` it is not even there, and the read after it crashes instead.

    Fix: take the path that needs no host lengths when the mirror is None (the device
    tensor, or an upper bound), or keep the mirror for this code (`needs_cpu_seq_lens = True`).

    Options: `mirror-attributes`, `device-attribute`, `skip-modes`, `present-when`.
    """

    CODE = "SG009"
    SUBJECT = Subject.USE
    QUESTIONS = (MirrorPresent,)
    NAME = "assert-mirror-not-none"
    MESSAGE = "`assert {subject} is not None` fails where the skip leaves the mirror None"
    REASON = "{why}"
    VALID = [
        # what to write instead: the device lengths where the mirror is None (no host sync)
        Valid("def f(b):\n    if b.seq_lens_cpu is None:\n        return b.seq_lens.max()\n"
              "    return b.seq_lens_cpu.max()\n"),
        Valid("def f(b):\n    if b.seq_lens_cpu is None:\n        return 0\n    assert b.seq_lens_cpu is not None\n"
              "    return b.seq_lens_cpu.max()\n"),
        # a path the skip never runs on: the engine model's modes (see `seqguard rules SG002`)
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens = True\n"
              "    def f(self, fb):\n        assert fb.seq_lens_cpu is not None\n"
              "        return fb.seq_lens_cpu.max()\n"),
    ]
    INVALID = [
        Invalid("def f(b):\n    assert b.seq_lens_cpu is not None\n    return b.seq_lens_cpu.max()\n", line=2),
        Invalid("def f(b):\n    assert b.seq_lens_sum is not None and b.seq_lens_sum > 0\n", line=2),
    ]

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        for access in ctx.facts.accesses:
            if access.usage != Usage.ASSERT or access.guarded:
                continue
            verdict = ctx.ask(MirrorPresent).judge(ctx.relpath, access)
            if not verdict.may_be_none:
                continue
            yield Finding(access.line, access.col, self.MESSAGE.format(subject=access.mirror_key),
                          scope=access.scope, steps=verdict.steps, end_col=span_end(access),
                          reason=self.REASON.format(why=verdict.reason))
