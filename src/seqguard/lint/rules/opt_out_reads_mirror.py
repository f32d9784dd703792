from __future__ import annotations

from typing import Iterator

from seqguard.lint.model import FlagState, flag_words
from seqguard.lint.questions.mirror_present import MirrorPresent
from seqguard.lint.rule import FileContext, Finding, Invalid, Rule, Subject, Valid, span_end, subject_of, through_call


class OptOutReadsMirror(Rule):
    """Flags a backend that opts out of the host mirror (or sets the flag
    conditionally) yet reads `seq_lens_cpu`/`seq_lens_sum` without a guard.

    Reads count as for SG002 (a read handed to a project function included), and are
    cleared by the same engine model: a read the skip cannot reach is not reported. A
    flag seqguard cannot tell (a base it cannot resolve) counts as possibly opted out.

    Why: when every active backend opts out, the FutureMap leaves the mirror `None`;
    the backend then crashes on its own read, or computes wrong sizes.

    Fix: guard the read and fall back to the device tensor (`seqguard codemod` writes a
    clear `RuntimeError` here rather than a host sync, or lists the site for a manual
    fix), or declare
    `needs_cpu_seq_lens = True` if the backend really needs the host lengths.

    Options: `backend-bases`, `backend-classes`, `flag-attribute`, `mirror-attributes`,
    `skip-modes`, `present-when`.
    """

    CODE = "SG003"
    SUBJECT = Subject.USE
    QUESTIONS = (MirrorPresent,)
    NAME = "opt-out-reads-mirror"
    MESSAGE = "`{cls}` sets `{flag}` to {value} but {reads} without a None guard"
    REASON = "{why}{through}{source}"
    VALID = [
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
              "    def f(self, fb):\n        return fb.seq_lens.max()\n"),
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
              "    def f(self, fb):\n        if fb.seq_lens_cpu is None:\n            return 0\n        return "
              "fb.seq_lens_cpu.max()\n"),
        # statements in __init__ run in order: the last unconditional assignment holds
        Valid("class B(AttentionBackend):\n    def __init__(self):\n        self.needs_cpu_seq_lens = False\n"
              "        self.needs_cpu_seq_lens = True\n    def f(self, fb):\n        return fb.seq_lens_cpu.max()\n"),
    ]
    INVALID = [
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def f(self, fb):\n        return fb.seq_lens_cpu.max()\n", line=4),
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = 0\n"
                "    def f(self, fb):\n        return fb.seq_lens_cpu.max()\n", line=4),
        Invalid("class B(AttentionBackend):\n    def __init__(self, fast):\n        self.needs_cpu_seq_lens = not "
                "fast\n"
                "    def f(self, fb):\n        return fb.seq_lens_sum * 2\n", line=5),
        # flag forms the runtime sees as conditional: set under `if`, or `|=` at run time
        Invalid("class B(AttentionBackend):\n    if FAST:\n        needs_cpu_seq_lens = False\n"
                "    def f(self, fb):\n        return fb.seq_lens_cpu.max()\n", line=5),
        Invalid("class B(AttentionBackend):\n    def __init__(self, child):\n        self.needs_cpu_seq_lens = False\n"
                "        self.needs_cpu_seq_lens |= child.needs_cpu_seq_lens\n"
                "    def f(self, fb):\n        return fb.seq_lens_cpu.max()\n", line=6),
        # a base behind `try/except ImportError` with a stub fallback is still the base
        Invalid("try:\n    from engine.base import AttentionBackend\nexcept ImportError:\n    AttentionBackend = "
                "object\n\n\n"
                "class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def f(self, fb):\n        return fb.seq_lens_cpu.max()\n", line=10),
    ]

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        for access, callee in ctx.unguarded_reads():
            backend = ctx.backend_of(access)
            if backend is None or backend.flag is True:
                continue
            verdict = ctx.ask(MirrorPresent).judge(ctx.relpath, access)
            if not verdict.may_be_none:
                continue
            source = f"; its {ctx.flag}: {backend.flag_source}" if backend.flag == FlagState.UNKNOWN else ""
            reads = f"reads {subject_of(access)}" if callee is None else \
                f"passes {subject_of(access)} to `{callee.callee}`, which reads it"
            yield Finding(access.line, access.col, self.MESSAGE.format(
                cls=backend.name, value=flag_words(backend.flag), reads=reads, flag=ctx.flag),
                scope=access.scope, steps=verdict.steps, end_col=span_end(access),
                reason=self.REASON.format(why=verdict.reason, through=through_call(callee), source=source))
