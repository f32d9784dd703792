from __future__ import annotations

from typing import Iterator

from seqguard.diagnostics import Severity
from seqguard.lint.model import Usage
from seqguard.lint.rule import FileContext, Finding, Invalid, Rule, Subject, Valid, span_end, subject_of


class MirrorTruthiness(Rule):
    """Flags a truthiness test of a host mirror (`if batch.seq_lens_sum:`).

    Why: `seq_lens_sum` of 0 reads like an absent mirror, and `bool()` of a
    multi-element `seq_lens_cpu` tensor raises; neither is the `None` check meant.

    Fix: test `is not None` explicitly.

    Options: `mirror-attributes`.
    """

    CODE = "SG005"
    SUBJECT = Subject.USE
    NAME = "mirror-truthiness"
    SEVERITY = Severity.WARNING
    MESSAGE = "truthiness test of {subject}; compare with `is not None`"
    REASON = "a length sum of 0 reads like None, and the truth of a tensor of several lengths raises"
    VALID = [
        Valid("def f(b):\n    if b.seq_lens_sum is not None:\n        return 1\n"),
        Valid("def f(b):\n    if b.seq_lens_sum is not None and b.seq_lens_sum:\n        return 1\n"),
    ]
    INVALID = [
        Invalid("def f(b):\n    if b.seq_lens_sum:\n        return 1\n", line=2),
        Invalid("def f(b):\n    return 0 if not b.seq_lens_cpu else 1\n", line=2),
    ]

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        for access in ctx.facts.accesses:
            if access.usage != Usage.TRUTHINESS or access.guarded:
                continue
            backend = ctx.backend_of(access)
            if backend is not None and backend.flag is True:
                continue
            yield Finding(access.line, access.col, self.MESSAGE.format(subject=subject_of(access)),
                          scope=access.scope, end_col=span_end(access), reason=self.REASON)
