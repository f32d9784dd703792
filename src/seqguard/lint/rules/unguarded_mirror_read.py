from __future__ import annotations

from typing import Iterator

from seqguard.lint.model import READ
from seqguard.lint.rule import FileContext, Finding, Invalid, Rule, Valid, subject_of


class UnguardedMirrorRead(Rule):
    """Flags a read of a host mirror (`seq_lens_cpu`, `seq_lens_sum`) with no `None` guard.

    Why: when no active attention backend needs the mirror, the FutureMap skips the
    device-to-host copy and leaves both attributes `None`; an unguarded read then
    raises `'NoneType' object has no attribute ...` on exactly those configurations.

    Reads that count: dereferencing, arithmetic, subscripting, iteration, consuming
    calls (`int()`, `len()`, `sum()`, `torch.cat`, ...), augmented assignment, also
    through a local alias. Passing the value on unchanged is not a read.

    Fix: guard it (`if b.seq_lens_cpu is not None:`), fall back to the device tensor
    (`seqguard codemod` does this), or read it only inside a backend whose
    `needs_cpu_seq_lens` is True.
    """

    CODE = "SG002"
    NAME = "unguarded-mirror-read"
    MESSAGE = "`{subject}` may be None here (no attention backend needs the host mirror); guard it or fall back to `{device}`"
    VALID = [
        Valid("def f(b):\n    if b.seq_lens_cpu is not None:\n        return b.seq_lens_cpu.max()\n"),
        Valid("def f(b):\n    if b.seq_lens_sum is None:\n        return 0\n    return b.seq_lens_sum + 1\n"),
        Valid("def f(b):\n    return b.seq_lens_cpu.tolist() if b.seq_lens_cpu is not None else []\n"),
        Valid("def f(b):\n    return b.seq_lens_cpu is not None and b.seq_lens_cpu.max() > 3\n"),
        Valid("def f(b):\n    assert b.seq_lens_cpu is not None\n    return len(b.seq_lens_cpu)\n"),
        Valid("def f(b, o):\n    o.seq_lens_cpu = b.seq_lens_cpu\n    return Fb(seq_lens_cpu=b.seq_lens_cpu)\n"),
        Valid("def f(b):\n    return f'{b.seq_lens_sum}'\n"),
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens = True\n    def g(self, fb):\n        return fb.seq_lens_cpu.max()\n"),
        Valid("def f(b):\n    for r in rs:\n        if r.seq_lens_cpu is None:\n            continue\n        r.seq_lens_cpu.max()\n"),
    ]
    INVALID = [
        Invalid("def f(b):\n    return b.seq_lens_cpu.max()\n", line=2),
        Invalid("def f(b):\n    lens = b.seq_lens_cpu\n    return lens.tolist()\n", line=3),
        Invalid("def f(b, n):\n    b.seq_lens_sum += n\n", line=2),
        Invalid("def f(b):\n    return int(b.seq_lens_sum)\n", line=2),
        Invalid("def f(b):\n    for x in b.seq_lens_cpu:\n        print(x)\n", line=2),
        Invalid("def f(b, idx):\n    b.seq_lens_cpu = b.seq_lens_cpu[idx]\n", line=2),
        Invalid("def f(b, o):\n    return torch.cat([b.seq_lens_cpu, o])\n", line=2),
        Invalid("def f(b):\n    if b.seq_lens_cpu is not None:\n        pass\n    return b.seq_lens_cpu.max()\n", line=4),
    ]

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        for access in ctx.facts.accesses:
            if access.usage != READ or access.guarded:
                continue
            if ctx.backend_of(access) is not None:
                continue  # the backend's own flag decides: safe (True) or SG003
            yield Finding(access.line, access.col, self.MESSAGE.format(
                subject=subject_of(access), device=ctx.device_attribute), scope=access.scope)
