from __future__ import annotations

from typing import Iterator

from seqguard.lint.questions.mirror_present import MirrorPresent
from seqguard.lint.rule import (
    FileContext,
    Finding,
    Invalid,
    Rule,
    Subject,
    Valid,
    read_words,
    span_end,
    subject_of,
    through_call,
)

_MODES = ("mode-enum = \"example.ForwardMode\"\n"
          "skip-modes = [\"DECODE\", \"TARGET_VERIFY\"]\n")
# A forward-mode enum as engines write it: `is_extend()` holds for verify too.
_ENUM = ("import enum\n\n\nclass ForwardMode(enum.IntEnum):\n    EXTEND = 1\n    DECODE = 2\n    TARGET_VERIFY = 3\n\n"
         "    def is_extend(self):\n        return self == ForwardMode.EXTEND or self == ForwardMode.TARGET_VERIFY\n\n"
         "    def is_target_verify(self):\n        return self == ForwardMode.TARGET_VERIFY\n\n\n")
# A present-condition that holds only outside a mode (a verify batch has other inputs).
_POSITIONS = 'present-when = [{ test = "*.spec_info.positions is None", outside-modes = ["TARGET_VERIFY"] }]\n'
# A graph runner whose gate, in another method, admits prefill batches only, and the
# model fact that says so (SGLang 0.5.23's prefill CUDA-graph runner refuses verify
# batches in `can_run_graph`): the code cannot tell the read in `replay` that.
_RUNNER = ("class PrefillGraphRunner:\n    def can_run(self, fb):\n"
           "        return fb.forward_mode == ForwardMode.EXTEND\n\n"
           "    def replay(self, fb):\n        return fb.seq_lens_cpu.max()\n")
_RUNNER_GATE = '"fb.forward_mode == ForwardMode.EXTEND"'
_RUNNER_FACT = ('models = [{{ about = "example.PrefillGraphRunner", modes = ["EXTEND"], cites = [{cites}], '
                'why = "can_run admits EXTEND batches only (example.py:18)" }}]\n')
# An aggregator with a feature that forces the mirror on.
_AGGREGATOR = ("def decide(args, backends):\n    if args.enable_two_batch_overlap:\n        return True\n"
               "    return any(getattr(b, 'needs_cpu_seq_lens', True) for b in backends)\n\n\n")


class UnguardedMirrorRead(Rule):
    """Flags a read of a host mirror (`seq_lens_cpu`, `seq_lens_sum`) with no `None`
    guard, where it can be None.

    Reads that count: dereferencing, arithmetic, comparison, subscripting, iteration,
    consuming calls (`int()`, `len()`, `sum()`, `torch.cat`, ...), augmented assignment,
    also through a local alias, and a value handed to a function of the project that
    reads that parameter unguarded (followed through up to three calls that pass it
    on). Passing the value on unchanged is not a read. A read inside a backend is
    SG003's to judge (safe where the backend's flag is True).

    Only a read that can see None at run time is reported: one is cleared where its
    object can never hold None, where its path rules the skip out (a `present-when`
    test, a feature the aggregator forces the mirror on for, no skip mode left, a model
    fact about its function or class), or
    where every call of its function is made where the mirror cannot be None.
    `seqguard explain PATH:LINE` says which reason holds, or why none does.

    Why: when no active attention backend needs the mirror, the FutureMap skips the
    device-to-host copy and leaves both attributes `None`; an unguarded read then
    raises `'NoneType' object has no attribute ...` on exactly those configurations.

    Fix: guard it (`if b.seq_lens_cpu is not None:`), fall back to the device tensor
    (`seqguard codemod` does this), or read it only inside a backend whose
    `needs_cpu_seq_lens` is True.

    Options: `mirror-attributes`, `device-attribute`, `aggregator`, `mode-enum`,
    `mode-attribute`, `skip-modes`, `present-when`, `models`, `test-paths`.
    """

    CODE = "SG002"
    SUBJECT = Subject.USE
    QUESTIONS = (MirrorPresent,)
    NAME = "unguarded-mirror-read"
    MESSAGE = "{subject} may be None here and {read} without a guard"
    REASON = "{why}{through}"
    VALID = [
        Valid("def f(b):\n    if b.seq_lens_cpu is not None:\n        return b.seq_lens_cpu.max()\n"),
        Valid("def f(b):\n    if b.seq_lens_sum is None:\n        return 0\n    return b.seq_lens_sum + 1\n"),
        Valid("def f(b):\n    return b.seq_lens_cpu.tolist() if b.seq_lens_cpu is not None else []\n"),
        Valid("def f(b):\n    return b.seq_lens_cpu is not None and b.seq_lens_cpu.max() > 3\n"),
        Valid("def f(b):\n    assert b.seq_lens_cpu is not None\n    return len(b.seq_lens_cpu)\n"),
        Valid("def f(b, o):\n    o.seq_lens_cpu = b.seq_lens_cpu\n    return Fb(seq_lens_cpu=b.seq_lens_cpu)\n"),
        Valid("def f(b):\n    return f'{b.seq_lens_sum}'\n"),
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens = True\n    def g(self, fb):\n        return "
              "fb.seq_lens_cpu.max()\n"),
        Valid("def f(b):\n    for r in rs:\n        if r.seq_lens_cpu is None:\n            continue\n        "
              "r.seq_lens_cpu.max()\n"),
        # SGLang's own idioms (reduced from trtllm_mla_backend.py, eagle_worker_common.py,
        # flashinfer_backend.py and managers/overlap_utils.py in 0.5.23)
        Valid("def f(fb, n):\n    if getattr(fb, 'seq_lens_cpu', None) is not None:\n"
              "        return fb.seq_lens_cpu.max().item()\n    return n\n"),
        Valid("def f(fb):\n    if not getattr(fb, 'seq_lens_cpu', None):\n        return 0\n    return "
              "fb.seq_lens_cpu.max()\n"),
        Valid("def f(batch, a):\n    gpu_only = batch.seq_lens_cpu is None\n    if a:\n        x = 1\n"
              "    elif gpu_only:\n        x = 2\n    else:\n        x = batch.seq_lens_cpu.tolist()\n    return x\n"),
        Valid("def f(fb, n, flag):\n    host_lengths = fb.seq_lens_cpu\n"
              "    use_host = (flag\n        and host_lengths is not None\n        and host_lengths.numel() == n)\n"
              "    return max(host_lengths.tolist()) if use_host else 1\n"),
        Valid("def f(batch, pinned):\n    batch.seq_lens_cpu = pinned[batch.req_pool_indices_cpu]\n"
              "    batch.seq_lens_sum = int(batch.seq_lens_cpu.sum())\n"),
        # other guard forms
        Valid("def f(b):\n    if (lens := b.seq_lens_cpu) is None:\n        return 0\n    return lens.max()\n"),
        Valid("def f(b):\n    try:\n        return b.seq_lens_cpu.max()\n    except (AttributeError, TypeError):\n     "
              "   return 0\n"),
        Valid("def f(b):\n    while b.seq_lens_cpu is None:\n        b = nxt(b)\n    return b.seq_lens_cpu.max()\n"),
        Valid("def f(b):\n    if b.seq_lens_cpu is None:\n        return 0\n"
              "    def g():\n        return b.seq_lens_cpu.max()\n    return g()\n"),
        Valid("def f(b):\n    if b.seq_lens_sum is None:\n        b.seq_lens_sum = 0\n    return b.seq_lens_sum + 1\n"),
        # booleans built from themselves or from each other (each step costs one step)
        Valid("def f(b, c):\n    ok = c\n    ok = ok and b.seq_lens_cpu is not None\n    if ok:\n"
              "        return b.seq_lens_cpu.max()\n"),
        Valid("def f(b):\n    ok0 = b.seq_lens_cpu is not None\n    ok1 = ok0 and ok0\n    ok2 = ok1 and ok1\n    ok3 "
              "= ok2 and ok2\n    ok4 = ok3 and ok3\n    ok5 = ok4 and ok4\n    ok6 = ok5 and ok5\n    ok7 = ok6 and "
              "ok6\n    ok8 = ok7 and ok7\n    ok9 = ok8 and ok8\n    ok10 = ok9 and ok9\n    ok11 = ok10 and ok10\n   "
              " ok12 = ok11 and ok11\n    ok13 = ok12 and ok12\n    ok14 = ok13 and ok13\n    ok15 = ok14 and ok14\n   "
              " ok16 = ok15 and ok15\n    ok17 = ok16 and ok16\n    ok18 = ok17 and ok17\n    ok19 = ok18 and ok18\n   "
              " ok20 = ok19 and ok19\n    ok21 = ok20 and ok20\n    ok22 = ok21 and ok21\n    ok23 = ok22 and ok22\n   "
              " ok24 = ok23 and ok23\n    ok25 = ok24 and ok24\n    ok26 = ok25 and ok25\n    ok27 = ok26 and ok26\n   "
              " ok28 = ok27 and ok27\n    ok29 = ok28 and ok28\n    ok30 = ok29 and ok29\n    if ok30:\n        "
              "b.seq_lens_cpu.max()\n"),
        Valid("def f(b):\n    ok = b.seq_lens_cpu is None\n    if ok:\n        return\n    return "
              "b.seq_lens_cpu.max()\n"),
        Valid("def f(b):\n    if b.seq_lens_cpu is None:\n        return\n"
              "    return sorted(range(3), key=lambda i: b.seq_lens_cpu[i])\n"),
        # a callee that guards its parameter, passes it on, or cannot be seen into
        Valid("def build(total):\n    return 0 if total is None else total * 2\n\n\ndef f(b):\n    return "
              "build(b.seq_lens_sum)\n"),
        Valid("def keep(total):\n    return {'total': total}\n\n\ndef f(b):\n    return keep(b.seq_lens_sum)\n"),
        Valid("from elsewhere import build\n\n\ndef f(b):\n    return build(b.seq_lens_sum)\n"),
        Valid("def build(total):\n    return total * 2\n\n\ndef f(b):\n    if b.seq_lens_sum is not None:\n"
              "        return build(b.seq_lens_sum)\n"),
        # ---- the engine model: when the mirror can be None at all ----
        # a persistent buffer: no store ever makes its attribute None
        Valid("from types import SimpleNamespace\n\n\nclass Runner:\n    def __init__(self):\n"
              "        self.buffers = SimpleNamespace(seq_lens_cpu=torch.zeros(8))\n\n"
              "    def replay(self, n):\n        return self.buffers.seq_lens_cpu[:n].tolist()\n"),
        # a prefill-only path: no skip mode is still possible (the enum's own predicates)
        Valid(_ENUM + "def plan(fb):\n    if fb.forward_mode.is_extend() and not fb.forward_mode.is_target_verify():\n"
                      "        return fb.seq_lens_cpu.tolist()\n", model=_MODES),
        Valid(_ENUM + "def plan(fb):\n    if fb.forward_mode.is_target_verify():\n        return 0\n"
                      "    elif fb.forward_mode.is_extend():\n        return fb.seq_lens_cpu.tolist()\n", model=_MODES),
        # a model fact: a runner whose gate (in another method) admits prefill batches only
        Valid(_ENUM + _RUNNER, model=_MODES + _RUNNER_FACT.format(cites=_RUNNER_GATE)),
        # a present-condition that holds outside some modes only, where none is left
        # (sglang 0.5.23 forward_batch_info.py:1271-1284: no spec positions, not draft-extend)
        Valid(_ENUM + "def build(fb):\n    if fb.forward_mode.is_target_verify():\n        return 0\n"
              "    if fb.spec_info.positions is None:\n        return fb.seq_lens_cpu.max()\n",
              model=_MODES + _POSITIONS),
        # a stated present-condition, after an early return
        Valid("def tail(self):\n    if not self.spec_algorithm.is_none():\n        return\n    return "
              "self.seq_lens_cpu + 1\n",
              model='present-when = ["*.spec_algorithm.is_none()"]\n'),
        # a feature the aggregator forces the mirror on for
        Valid(_AGGREGATOR + "def split(args, batch):\n    if not args.enable_two_batch_overlap:\n        return 0\n"
                            "    return batch.seq_lens_cpu.sum()\n", model='aggregator = "example.decide"\n'),
        # ... and a class only ever created under it
        Valid(_AGGREGATOR + "class Splitter:\n    def run(self, batch):\n        return batch.seq_lens_cpu.sum()\n\n\n"
                            "def make(args):\n    if args.enable_two_batch_overlap:\n        return Splitter()\n",
              model='aggregator = "example.decide"\n'),
        # the branch where the device lengths are None never runs
        Valid("def f(fb):\n    if fb.seq_lens is not None:\n        return fb.seq_lens.max()\n"
              "    else:\n        return fb.seq_lens_cpu.max()\n"),
        # a class the aggregator counts (no flag: True) keeps the mirror for its own reads
        Valid("class TritonMultiStepDraftBackend:\n    def init(self, fb):\n        return fb.seq_lens_sum * 2\n",
              model='backend-classes = ["*MultiStepDraftBackend"]\n'),
        # guards in the caller: every call is made where the mirror was tested
        Valid("def helper(b):\n    return b.seq_lens_cpu.max()\n\n\n"
              "def caller(b):\n    if b.seq_lens_cpu is None:\n        return 0\n    return helper(b)\n"),
        # ... a comment naming the function is no use of it (sglang 0.5.23 base_attn_backend.py:27)
        Valid("class Ends:\n    PRE = 1  # after helper\n\n\ndef helper(b):\n    return b.seq_lens_cpu.max()\n\n\n"
              "def caller(b):\n    if b.seq_lens_cpu is None:\n        return 0\n    return helper(b)\n"),
        # a guard on the source of a copy holds for the copy
        Valid("class Fb:\n    @classmethod\n    def init_new(cls, batch):\n        return "
              "cls(seq_lens_cpu=batch.seq_lens_cpu)\n\n\n"
              "def run(batch):\n    gpu_only = batch.seq_lens_cpu is None\n    fb = Fb.init_new(batch)\n"
              "    if not gpu_only:\n        return fb.seq_lens_cpu.max()\n"),
        # a predicate of the project, read through its body
        Valid("def usable(fb):\n    if fb.seq_lens_cpu is None:\n        return False\n    return True\n\n\n"
              "def f(fb):\n    if usable(fb):\n        return fb.seq_lens_cpu.max()\n"),
    ]
    INVALID = [
        Invalid("def f(b):\n    return b.seq_lens_cpu.max()\n", line=2),
        Invalid("def f(b):\n    lens = b.seq_lens_cpu\n    return lens.tolist()\n", line=3),
        Invalid("def f(b, n):\n    b.seq_lens_sum += n\n", line=2),
        Invalid("def f(b):\n    return int(b.seq_lens_sum)\n", line=2),
        Invalid("def f(b):\n    for x in b.seq_lens_cpu:\n        print(x)\n", line=2),
        Invalid("def f(b, idx):\n    b.seq_lens_cpu = b.seq_lens_cpu[idx]\n", line=2),
        Invalid("def f(b, o):\n    return torch.cat([b.seq_lens_cpu, o])\n", line=2),
        Invalid("def f(b):\n    if b.seq_lens_cpu is not None:\n        pass\n    return b.seq_lens_cpu.max()\n",
                line=4),
        # the idioms above, where they do not guard
        Invalid("def f(batch, a):\n    gpu_only = batch.seq_lens_cpu is None\n    if a:\n        x = 1\n"
                "    elif not gpu_only:\n        x = 2\n    else:\n        x = batch.seq_lens_cpu.tolist()\n    return "
                "x\n", line=8),
        Invalid("def f(fb, n, flag):\n    host_lengths = fb.seq_lens_cpu\n"
                "    use_host = flag or host_lengths is not None\n"
                "    return max(host_lengths.tolist()) if use_host else 1\n", line=4),
        Invalid("def f(batch, other):\n    ok = batch.seq_lens_cpu is not None\n    batch = other\n"
                "    if ok:\n        return batch.seq_lens_cpu.max()\n", line=5),
        Invalid("def f(fb):\n    if getattr(fb, 'seq_lens_cpu', None) is None:\n        pass\n    return "
                "fb.seq_lens_cpu.max()\n", line=4),
        Invalid("def f(batch, maybe):\n    batch.seq_lens_cpu = maybe.get()\n    return batch.seq_lens_cpu.sum()\n",
                line=3),
        # a guard that no longer holds
        Invalid("def f(b, other):\n    if b.seq_lens_cpu is None:\n        return 0\n    b = other\n    return "
                "b.seq_lens_cpu.max()\n", line=5),
        Invalid("def f(b, bs):\n    if b.seq_lens_cpu is None:\n        return 0\n    for b in bs:\n        "
                "b.seq_lens_cpu.max()\n", line=5),
        Invalid("def f(b):\n    if b.seq_lens_cpu is None:\n        return 0\n    b.seq_lens_cpu = None\n    return "
                "b.seq_lens_cpu.max()\n", line=5),
        Invalid("def f(b, c):\n    if b.seq_lens_cpu is None:\n        return 0\n    if c:\n        b = c\n    return "
                "b.seq_lens_cpu.max()\n", line=6),
        Invalid("def f(b):\n    try:\n        return b.seq_lens_cpu.max()\n    except KeyError:\n        return 0\n",
                line=3),
        # every read form Python allows
        Invalid("def f(b):\n    return (m := b.seq_lens_cpu).max()\n", line=2),
        Invalid("def f(b):\n    return lambda: b.seq_lens_cpu.max()\n", line=2),
        Invalid("def f(b):\n    def g(n=b.seq_lens_sum + 1):\n        return n\n    return g\n", line=2),
        Invalid("def f(b):\n    a, *rest = b.seq_lens_cpu\n    return a\n", line=2),
        Invalid("def f(b):\n    print(*b.seq_lens_cpu)\n", line=2),
        Invalid("def f(b):\n    yield from b.seq_lens_cpu\n", line=2),
        Invalid("def f(b):\n    lens = getattr(b, 'seq_lens_cpu')\n    return lens.max()\n", line=3),
        Invalid("def f(b, x):\n    match x:\n        case 1 if b.seq_lens_sum > 3:\n            return 1\n", line=3),
        Invalid("def f(b, c, idx):\n    lens = b.seq_lens_cpu\n    if c and lens is not None:\n        lens = "
                "lens[idx]\n"
                "    return sum(lens)\n", line=5),
        Invalid("def f(b, other):\n    if b.seq_lens_cpu is None:\n        return\n    match other:\n"
                "        case [b]:\n            pass\n    return b.seq_lens_cpu.max()\n", line=7),
        Invalid("def f(b, c):\n    lens = b.seq_lens_cpu\n    if c:\n        lens = torch.zeros(3)\n"
                "    return lens.max()\n", line=5),
        Invalid("def f(b):\n    lens = b.seq_lens_cpu\n    if lens is not None:\n        lens = lens + 1\n"
                "    return lens.max()\n", line=5),
        # reads through calls: the callee does arithmetic on the parameter it is handed
        # (reduced from sglang 0.5.12's EagleDraftWorker.draft -> build_tree_kernel_efficient)
        Invalid("def build(a, total, n, buf=None):\n    if buf is None:\n        buf = total * n\n    return buf\n\n\n"
                "def draft(b):\n    return build(1, b.seq_lens_sum, 4)\n", line=8),
        Invalid("def build(a, *, total):\n    return total + a\n\n\ndef draft(b):\n    return build(1, "
                "total=b.seq_lens_sum)\n",
                line=6),
        Invalid("class W:\n    def _plan(self, lens):\n        return lens.max()\n\n"
                "    def step(self, b):\n        return self._plan(b.seq_lens_cpu)\n", line=6),
        Invalid("def inner(x):\n    return sum(x)\n\n\ndef outer(y):\n    return inner(y)\n\n\n"
                "def f(b):\n    return outer(b.seq_lens_cpu)\n", line=10),
        # three calls that pass it on, as documented
        Invalid("def reads(x):\n    return x + 1\ndef hop1(x):\n    return hop2(x)\ndef hop2(x):\n    return hop3(x)\n"
                "def hop3(x):\n    return reads(x)\ndef caller(b):\n    hop1(b.seq_lens_sum)\n", line=10),
        Invalid("class Base:\n    def m(self, x):\n        return x + 1\n\n\nclass Child(Base):\n"
                "    def call(self, b):\n        return super().m(b.seq_lens_sum)\n", line=8),
        # ---- the engine model: where it can still be None ----
        # `is_extend()` holds for TARGET_VERIFY, a skip mode (read from the enum's body)
        Invalid(_ENUM + "def plan(fb):\n    if fb.forward_mode.is_extend():\n        return fb.seq_lens_cpu.tolist()\n",
                line=18, model=_MODES),
        # the same runner, its fact stale (the cited gate is not in its code): it clears nothing
        Invalid(_ENUM + _RUNNER, line=21, model=_MODES + _RUNNER_FACT.format(cites='"fb.forward_mode.is_extend()"')),
        # ... nor when a mode it names is no member of the enum (a typo cannot be checked)
        Invalid(_ENUM + "def build(fb):\n    if fb.forward_mode.is_target_verify():\n        return 0\n"
                "    if fb.spec_info.positions is None:\n        return fb.seq_lens_cpu.max()\n", line=20,
                model=_MODES + _POSITIONS.replace('"TARGET_VERIFY"', '"TARGET_VERIFI"')),
        # ... not where one of those modes is still possible
        Invalid(_ENUM + "def build(fb):\n    if fb.spec_info.positions is None:\n"
                "        return fb.seq_lens_cpu.max()\n", line=18, model=_MODES + _POSITIONS),
        # a caller that does not guard it
        Invalid("def helper(b):\n    return b.seq_lens_cpu.max()\n\n\n"
                "def caller(b):\n    return helper(b)\n", line=2),
        # ... or a use that is no call, even on a line with a comment that names it
        Invalid("def helper(b):\n    return b.seq_lens_cpu.max()\n\n\n"
                "def caller(b):\n    if b.seq_lens_cpu is None:\n        return 0\n    return helper(b)\n\n\n"
                "register(helper)  # helper\n", line=2),
        # ... in an f-string (its own token on Python 3.12+), or after a form feed (no
        # line end for Python: the lines must be numbered as Python numbers them)
        Invalid("def helper(b):\n    return b.seq_lens_cpu.max()\n\n\n"
                "def caller(b):\n    if b.seq_lens_cpu is None:\n        return 0\n    return helper(b)\n\n\n"
                "register(getattr(mod, f\"helper\"))  # helper\n", line=2),
        Invalid("def helper(b):\n    return b.seq_lens_cpu.max()\n\n\n"
                "def caller(b):\n    if b.seq_lens_cpu is None:\n        return 0\n    return helper(b)\n\n\n"
                "\x0c\nclass Ends:\n    PRE = 1  # helper\n    HOOK = register(helper)\n", line=2),
        # a buffer that some store makes None is no persistent buffer
        Invalid("from types import SimpleNamespace\n\n\nclass Runner:\n    def __init__(self):\n"
                "        self.buffers = SimpleNamespace(seq_lens_cpu=torch.zeros(8))\n\n"
                "    def drop(self):\n        self.buffers.seq_lens_cpu = None\n\n"
                "    def replay(self, n):\n        return self.buffers.seq_lens_cpu[:n].tolist()\n", line=12),
        # a class created outside the forced feature too
        Invalid(_AGGREGATOR + "class Splitter:\n    def run(self, batch):\n        return "
                              "batch.seq_lens_cpu.sum()\n\n\n"
                              "def make(args):\n    return Splitter()\n", line=9, model='aggregator = '
                                                                                        '"example.decide"\n'),
        # what a read is, in the forms a hostile test round found
        Invalid("def f(b, c, x):\n    return (b.seq_lens_cpu if c else x).max()\n", line=2),
        Invalid("def f(b):\n    return lambda n=b.seq_lens_sum: n * 2\n", line=2),
        Invalid("def f(b, xs):\n    b.seq_lens_cpu = max(xs, default=None)\n    return b.seq_lens_cpu.max()\n", line=3),
        Invalid("def f(bs, i):\n    if bs[i].seq_lens_cpu is not None:\n        i += 1\n"
                "        return bs[i].seq_lens_cpu.max()\n", line=4),
        Invalid("def f(bs, i):\n    if bs[i].seq_lens_cpu is not None:\n        if (i := i + 1):\n"
                "            return bs[i].seq_lens_cpu.max()\n", line=4),
        Invalid("def f(b):\n    return b.\uff53eq_lens_cpu.max()\n", line=2),  # NFKC: `ｓ` is `s`
    ]

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        for access, callee in ctx.unguarded_reads():
            if ctx.backend_of(access) is not None:
                continue  # the backend's own flag decides: safe (True) or SG003
            verdict = ctx.ask(MirrorPresent).judge(ctx.relpath, access)
            if not verdict.may_be_none:
                continue
            yield Finding(access.line, access.col, self.MESSAGE.format(subject=subject_of(access),
                                                                       read=read_words(callee)),
                          scope=access.scope, steps=verdict.steps, end_col=span_end(access),
                          reason=self.REASON.format(why=verdict.reason, through=through_call(callee)))
