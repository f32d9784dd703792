from __future__ import annotations

from typing import Iterator

from seqguard.lint.analysis.usage import pull_words
from seqguard.lint.model import FlagState
from seqguard.lint.questions.per_step_sync import PerStepSync
from seqguard.lint.rule import FileContext, Finding, Invalid, Rule, Subject, Valid


class OptOutSyncsLengths(Rule):
    """Flags a backend whose `needs_cpu_seq_lens` is False (or conditional) that
    copies sequence lengths to the host itself.

    A copy is `.cpu()`, `.to("cpu")`, `.item()`, `.tolist()` or `.numpy()` of a device
    length (`seq_lens`, `extend_seq_lens`, the `device-lengths`), or `int()`, `float()`,
    `bool()`, `list()`, `tuple()` of a value computed from one, on the per-step path:
    not at CUDA-graph capture, not where no skip mode is left. A field that every class
    of the project declares as a host type (`total_seq_lens: int = 0`), and that no file
    stores as an attribute, holds no device tensor: declared types are trusted, as
    NullAway trusts annotations. A helper's parameter that every call hands a host copy
    (`seq_lens=m.seq_lens_cpu_int`) and that the helper never rebinds is no device
    tensor; nor is a helper's `if seq_lens_cpu is None:` fallback that every caller
    passes a tested host copy.

    Why: opting out exists to remove the per-step device-to-host sync; pulling the
    lengths in the backend brings the same stall back, hidden from the scheduler.

    Fix: build the metadata on the device (cumsum, max over a preallocated buffer),
    or declare `needs_cpu_seq_lens = True` and read the mirror the scheduler provides.

    Options: `device-attribute`, `device-lengths`, `sync-allowed-when`,
    `capture-functions`, `skip-modes`, `flag-attribute`.
    """

    CODE = "SG004"
    SUBJECT = Subject.PULL
    QUESTIONS = (PerStepSync,)
    NAME = "opt-out-syncs-lengths"
    MESSAGE = "`{cls}` {opts} but pulls `{receiver}` to the host with `{how}`"
    REASON = "{conditional}a device sync{why}"
    VALID = [
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
              "    def f(self, fb):\n        return torch.cumsum(fb.seq_lens, 0)\n"),
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens = True\n"
              "    def f(self, fb):\n        return fb.seq_lens.max().item()\n"),
        # sizes are host metadata: no sync
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
              "    def f(self, fb):\n        return int(fb.seq_lens.shape[0]) + int(len(fb.seq_lens))\n"),
        # no device tensor at all: every class declaring the field says it holds a host int
        # (sglang 0.5.23 layers/cp/base.py:91 `total_seq_lens: int = 0`)
        Valid("@dataclass\nclass Meta:\n    total_seq_lens: int = 0\n    bs: int = 1\n\n\n"
              "class Other:\n    total_seq_lens: Optional[List[int]] = None\n\n\n"
              "class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
              "    def f(self, fb):\n        meta = fb.attn_cp_metadata\n        return int(meta.total_seq_lens)\n"),
        # a host copy is no sync: `seq_lens_cpu_int` is on the host already
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
              "    def f(self, m):\n        return m.seq_lens_cpu_int.cpu()\n"),
        # not per step: CUDA-graph capture (a stated condition, or a capture function)
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
              "    def plan(self, fb, in_capture=False):\n        return fb.seq_lens.cpu() if in_capture else None\n",
              model='sync-allowed-when = ["in_capture"]\n'),
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
              "    def capture_one_shape(self, fb):\n        return fb.seq_lens.cpu()\n",
              model='capture-functions = ["capture_*"]\n'),
        # ... or a helper only ever called from capture
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
              "    def _plan(self, fb):\n        return fb.seq_lens.tolist()\n"
              "    def capture_one_shape(self, fb):\n        return self._plan(fb)\n",
              model='capture-functions = ["capture_*"]\n'),
        # ... or inside a context the model names as capture (a `with` holds for its body;
        # sglang 0.5.23 multi_layer_eagle_draft_extend_cuda_graph_runner.py:1029)
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
              "    def _plan(self, fb):\n        return fb.seq_lens.tolist()\n"
              "    def warmup(self, fb):\n        with capture_mode():\n            return self._plan(fb)\n",
              model='sync-allowed-when = ["capture_mode()"]\n'),
        # not at all: a helper's parameter that every call hands a host copy (sglang
        # 0.5.23 ascend_backend.py:1200, `attn_alibi(seq_lens=...seq_lens_cpu_int)`)
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
              "    def _walk(self, seq_lens):\n        return seq_lens[0].item()\n"
              "    def f(self, m):\n        return self._walk(seq_lens=m.seq_lens_cpu_int)\n"
              "    def g(self):\n        return self._walk(self.host_lens[:2])\n"),
        # not at all: a helper's fallback for a None host copy, and its one caller passes
        # the mirror only where it is not None (a static method: no `self` bound)
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
              "    @staticmethod\n    def _lens(seq_lens_cpu, seq_lens):\n"
              "        if seq_lens_cpu is None:\n            return seq_lens.cpu()\n        return seq_lens_cpu\n"
              "    def f(self, fb):\n        if fb.seq_lens_cpu is None:\n            return None\n"
              "        return self._lens(fb.seq_lens_cpu, fb.seq_lens)\n"),
        # not per step: a prefill-only path (no skip mode left)
        Valid("import enum\n\n\nclass ForwardMode(enum.IntEnum):\n    EXTEND = 1\n    DECODE = 2\n\n"
              "    def is_extend(self):\n        return self == ForwardMode.EXTEND\n\n\n"
              "class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
              "    def f(self, fb):\n        if fb.forward_mode.is_extend():\n"
              "            return fb.seq_lens.tolist()\n",
              model='mode-enum = "example.ForwardMode"\nskip-modes = ["DECODE"]\n'),
    ]
    INVALID = [
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def f(self, fb):\n        return fb.seq_lens.max().item()\n", line=4),
        # a field declared as a tensor in one class, as an int in another: either may be it
        Invalid("class Meta:\n    total_seq_lens: int = 0\n\n\nclass Lens:\n    total_seq_lens: torch.Tensor\n\n\n"
                "class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def f(self, m):\n        return int(m.total_seq_lens)\n", line=12),
        # the backend stores a tensor in a field of that name: another class's `int` says nothing of it
        Invalid("class Meta:\n    total_seq_lens: int = 0\n\n\n"
                "class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def init_forward_metadata(self, fb):\n        self.total_seq_lens = fb.seq_lens.sum()\n"
                "    def f(self):\n        return int(self.total_seq_lens)\n", line=10),
        # a tensor declaration on one line with its class, or as an alias, is one all the same
        Invalid("class Meta:\n    total_seq_lens: int = 0\n\n\nclass Lens: total_seq_lens: torch.Tensor\n\n\n"
                "class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def f(self, m):\n        return int(m.total_seq_lens)\n", line=11),
        Invalid("from torch import Tensor as T\n\n\nclass Meta:\n    total_seq_lens: List[T] = None\n\n\n"
                "class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def f(self, m):\n        return int(m.total_seq_lens[0])\n", line=11),
        # never declared: its type cannot be read
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def f(self, m):\n        return int(m.total_seq_lens)\n", line=4),
        # a local of that name is no field: `total_seq_lens: int` elsewhere says nothing of it
        Invalid("class Meta:\n    total_seq_lens: int = 0\n\n\n"
                "class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def f(self, fb):\n        total_seq_lens = fb.seq_lens.sum()\n"
                "        return int(total_seq_lens)\n", line=9),
        # a parameter annotated `int` is not a field either
        Invalid("def g(total_seq_lens: int):\n    return total_seq_lens\n\n\n"
                "class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def f(self, m):\n        return int(m.total_seq_lens)\n", line=8),
        # every spelling of a copy to the host is one, as for the codemod's templates
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def f(self, fb):\n        return fb.seq_lens.to('cpu')\n", line=4),
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def f(self, fb):\n        return list(fb.seq_lens)\n", line=4),
        # ... but a caller that may pass None reaches the fallback
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    @staticmethod\n    def _lens(seq_lens_cpu, seq_lens):\n"
                "        if seq_lens_cpu is None:\n            return seq_lens.cpu()\n        return seq_lens_cpu\n"
                "    def f(self, fb):\n        return self._lens(fb.seq_lens_cpu, fb.seq_lens)\n", line=6),
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def f(self, fb):\n        lens = fb.seq_lens[:4]\n        return lens.tolist()\n", line=5),
        # the fallback the codemod once wrote: a sync all the same
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def f(self, fb):\n        return int(fb.seq_lens.sum())\n", line=4),
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def f(self, fb):\n        return int(fb.seq_lens.max().item())\n", line=4),  # one finding
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def f(self, fb):\n        return int(fb.seq_lens.cpu()[0])\n", line=4),  # at `.cpu()` only
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def f(self, fb):\n        return fb.seq_lens.cpu().tolist()\n", line=4),  # one sync, not two
        # a conditional flag may be False: its syncs count too
        Invalid("class B(AttentionBackend):\n    def __init__(self, fast):\n        self.needs_cpu_seq_lens = not "
                "fast\n"
                "    def f(self, fb):\n        return fb.seq_lens.max().item()\n", line=5),
        # ... one call that hands it the device lengths is enough
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def _walk(self, seq_lens):\n        return seq_lens[0].item()\n"
                "    def f(self, m):\n        return self._walk(seq_lens=m.seq_lens_cpu_int)\n"
                "    def g(self, fb):\n        return self._walk(fb.seq_lens)\n", line=4),
        # ... nor one the helper binds again, nor a local merely named as a host copy
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def _walk(self, fb, seq_lens):\n        seq_lens = fb.seq_lens\n"
                "        return seq_lens[0].item()\n"
                "    def f(self, fb, m):\n        return self._walk(fb, seq_lens=m.seq_lens_cpu_int)\n", line=5),
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def _walk(self, seq_lens):\n        return seq_lens[0].item()\n"
                "    def f(self, fb):\n        host_lens = fb.seq_lens[:4]\n        return self._walk(host_lens)\n",
                line=4),
        # ... nor a position a `*args` before it hides
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def _walk(self, a, seq_lens):\n        return seq_lens[0].item()\n"
                "    def f(self, fb, m):\n        return self._walk(*(0, fb.seq_lens), m.seq_lens_cpu)\n", line=4),
        # the capture context is closed after its block
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def warmup(self, fb):\n        with capture_mode():\n            pass\n"
                "        return fb.seq_lens.tolist()\n", line=6, model='sync-allowed-when = ["capture_mode()"]\n'),
        # ... and a closure or lambda made inside it may run after it closed
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def warmup(self, fb):\n        with capture_mode():\n"
                "            def replay():\n                return fb.seq_lens.tolist()\n"
                "        return replay\n", line=6, model='sync-allowed-when = ["capture_mode()"]\n'),
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def warmup(self, fb):\n        with capture_mode():\n"
                "            self.later = lambda: fb.seq_lens.tolist()\n",
                line=5, model='sync-allowed-when = ["capture_mode()"]\n'),
        # the other device lengths a backend pulls per step
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                "    def f(self, fb):\n        return fb.extend_prefix_lens.tolist()\n", line=4,
                model='device-lengths = ["extend_prefix_lens"]\n'),
    ]

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        for cls in ctx.backends():
            if cls.flag is not False and cls.flag != FlagState.CONDITIONAL:
                continue
            opts = "opts out of the host mirror" if cls.flag is False else "may opt out of the host mirror"
            conditional = "" if cls.flag is False else f"its {ctx.flag} is conditional; "
            for pull in cls.facts.host_pulls:
                verdict = ctx.ask(PerStepSync).judge(ctx.relpath, pull)
                if not verdict.per_step:
                    continue  # capture-time, or a path the skip never runs on
                how = pull_words(pull.method)
                yield Finding(pull.line, pull.col, self.MESSAGE.format(cls=cls.name, opts=opts, receiver=pull.receiver,
                                                                       how=how),
                              scope=cls.facts.qualname, reason=self.REASON.format(
                                  conditional=conditional, why=f" {verdict.reason}" if verdict.reason else ""))
