from __future__ import annotations

from typing import Iterator

from seqguard.lint.model import Usage
from seqguard.lint.questions.fresh_buffer import FreshBuffer
from seqguard.lint.rule import FileContext, Finding, Invalid, Rule, Subject, Valid, span_end


class BufferRefilledOnlyWithMirror(Rule):
    """Flags a read of a persistent host buffer that is refilled from the batch's mirror
    only when that mirror is present.

    Why: a CUDA-graph runner keeps its own `buffers.seq_lens_cpu` (never None: a
    `torch.full` buffer) and copies the batch's lengths into it under
    `if forward_batch.seq_lens_cpu is not None:`. Where the skip leaves the mirror None,
    the copy is skipped and the buffer still holds the lengths of the last step that had
    them: a read of it then computes with stale lengths, silently (SGLang 0.5.23's NPU
    draft-extend runner hands them to its kernel as `actual_seq_kvlen`).

    Fix: read the buffer only where the batch's mirror was just copied into it (under
    the same test), refill it from the device lengths without a host sync where it is
    not, or keep the mirror for this code.

    Options: `mirror-attributes`, `skip-modes`, `present-when`.
    """

    CODE = "SG010"
    SUBJECT = Subject.USE
    QUESTIONS = (FreshBuffer,)
    NAME = "buffer-refilled-only-with-mirror"
    MESSAGE = "`{buffer}` may hold the last step's lengths here"
    REASON = "it is refilled from `{source}` only when that is not None ({where})"
    VALID = [
        # read under the same test that refilled it
        Valid("class R:\n    def __init__(self):\n        self.buf = torch.zeros(8)\n"
              "    def run(self, fb, n):\n        if fb.seq_lens_cpu is not None:\n"
              "            self.buf[:n].copy_(fb.seq_lens_cpu)\n            return self.buf[:n].tolist()\n"),
        # refilled on every path
        Valid("class R:\n    def __init__(self):\n        self.buf = SimpleNamespace(seq_lens_cpu=torch.zeros(8))\n"
              "    def run(self, fb, n):\n        self.buf.seq_lens_cpu[:n].copy_(fb.seq_lens[:n])\n"
              "        return self.buf.seq_lens_cpu[:n].tolist()\n"),
    ]
    INVALID = [
        Invalid("from types import SimpleNamespace\n\n\nclass R:\n    def __init__(self):\n"
                "        self.buffers = SimpleNamespace(seq_lens_cpu=torch.zeros(8))\n\n"
                "    def load(self, fb, n):\n        if fb.seq_lens_cpu is not None:\n"
                "            self.buffers.seq_lens_cpu[:n].copy_(fb.seq_lens_cpu[:n])\n\n"
                "    def replay(self, n):\n        return self.buffers.seq_lens_cpu[:n].tolist()\n", line=13),
    ]

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        for access in ctx.facts.accesses:
            if access.usage != Usage.READ or access.written or access.fills is not None:
                continue
            stale = ctx.ask(FreshBuffer).stale(ctx.relpath, access)
            if stale is None:
                continue
            source, where = stale
            yield Finding(access.line, access.col, self.MESSAGE.format(buffer=access.mirror_key),
                          scope=access.scope, end_col=span_end(access),
                          reason=self.REASON.format(source=source, where=where))
