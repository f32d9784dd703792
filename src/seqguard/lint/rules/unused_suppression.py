from __future__ import annotations

from typing import Iterator

from seqguard.diagnostics import Severity
from seqguard.lint.rule import FileContext, Finding, Invalid, Rule, Subject, Valid


class UnusedSuppression(Rule):
    """Flags a `# seqguard: ignore[...]` marker that silences nothing on its line.

    A marker is a comment that starts with `seqguard: ignore` (a bare one silences every
    code on its line), or such a marker after another comment (`# noqa: E501  #
    seqguard: ignore`); the same words quoted in prose or a string are not a marker.
    Every rule runs, selected or not, so a marker for a deselected code is not unused.

    Why: markers outlive the code they were written for; a stale one would hide the
    next real finding on that line. Reported so suppressions do not rot.

    Fix: delete the marker (or the codes in it that no longer fire).
    """

    CODE = "SG007"
    SUBJECT = Subject.MARKER
    NAME = "unused-suppression"
    MESSAGE = "unused suppression: no {codes} finding on this line"
    SEVERITY = Severity.WARNING
    VALID = [
        Valid("def f(b):\n    return b.seq_lens_cpu.max()  # seqguard: ignore[SG002]\n"),
        Valid("def f(b):\n    return b.seq_lens_cpu.max()  # seqguard: ignore\n"),
    ]
    INVALID = [
        Invalid("def f(b):\n    return b.seq_lens.max()  # seqguard: ignore[SG002]\n", line=2),
        Invalid("x = 1  # seqguard: ignore\n", line=1),
    ]

    READS_FINDINGS = True

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        """Each marker against the codes the other rules found on its line (`ctx.fired`)."""
        for line, codes in sorted(dict(ctx.facts.suppressions).items()):
            found = ctx.fired.get(line, frozenset())
            if codes is None:
                if not found:
                    yield Finding(line, 0, self.MESSAGE.format(codes="seqguard"))
                continue
            unused = sorted(c for c in codes if c not in found and c != self.CODE)
            if unused:
                yield Finding(line, 0, self.MESSAGE.format(codes=", ".join(unused)))
