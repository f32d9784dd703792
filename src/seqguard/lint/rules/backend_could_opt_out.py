from __future__ import annotations

from typing import Iterator

from seqguard.diagnostics import Severity
from seqguard.lint.questions.composite import Composite
from seqguard.lint.rule import FileContext, Finding, Invalid, Rule, Subject, Valid


class BackendCouldOptOut(Rule):
    """Points out a backend whose flag is True although neither it nor the backends
    it inherits from ever read `seq_lens_cpu`/`seq_lens_sum`.

    A composite that hands its work to the backends it holds is not reported: their
    flags decide what it needs. Info only: it never changes the exit code.

    Why: every step of a worker using it pays a device-to-host sync nobody reads.

    Fix: if its metadata really comes from device tensors alone (check CUDA-graph
    replay too), declare `needs_cpu_seq_lens = False`.

    Options: `backend-bases`, `backend-classes`, `flag-attribute`, `mirror-attributes`.
    """

    CODE = "SG006"
    SUBJECT = Subject.CLASS
    QUESTIONS = (Composite,)
    NAME = "backend-could-opt-out"
    MESSAGE = "`{cls}` keeps the host mirror alive but never reads it"
    REASON = "its {flag} is True: {source}"
    SEVERITY = Severity.INFO
    VALID = [
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"),
        # a composite: it hands its work to the backends it holds, whose flags decide
        Valid("class Tbo(AttentionBackend):\n    def __init__(self, primary):\n        self.primary = primary\n"
              "    def init_forward_metadata(self, fb):\n        return self.primary.init_forward_metadata(fb)\n"),
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens = True\n"
              "    def f(self, fb):\n        return fb.seq_lens_cpu.max()\n"),
    ]
    INVALID = [
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = True\n"
                "    def f(self, fb):\n        return fb.seq_lens.max()\n", line=1),
    ]

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        for cls in ctx.backends():
            if cls.flag is not True or cls.facts.reads_mirror:
                continue
            if any(parent.facts.reads_mirror for parent in ctx.index.ancestors(cls)):
                continue
            if ctx.ask(Composite).delegates(cls):
                continue  # a composite: its children's flags decide what it needs
            yield Finding(cls.facts.line, cls.facts.col, self.MESSAGE.format(cls=cls.name),
                          scope=cls.facts.qualname, reason=self.REASON.format(flag=ctx.flag, source=cls.flag_source))
