"""Who calls a function, and with what: names a method imports for itself, and test
harnesses, which are not the engine's callers."""

from pathlib import Path

import pytest

from seqguard.config import load_config
from seqguard.lint.runner import lint_paths

# A runner whose read is safe only through its one engine caller, which tested the
# mirror first; `execute` is a method of two classes, so a call on an object of unknown
# type may be of either.
RUNNER = """\
class GraphRunner:
    def execute(self, fb):
        return fb.seq_lens_sum + 1


class OtherRunner:
    def execute(self, fb):
        return 0
"""
WORKER = """\
class Worker:
    def setup(self):
        from .runner import GraphRunner as Runner
        self.runner = Runner()

    def step(self, fb):
        if fb.seq_lens_sum is None:
            return None
        return self.runner.execute(fb)
"""
HARNESS = """\
def check(runner, fb):
    return runner.execute(fb)
"""


def _reads(root: Path, pyproject: str = "[tool.seqguard]\n") -> set[tuple[str, int]]:
    config = load_config([root])
    result = lint_paths([root], config, use_cache=False, jobs=1)
    return {(Path(d.path).relative_to(root).as_posix() if Path(d.path).is_absolute() else d.path, d.line)
            for d in result.diagnostics if d.code == "SG002"}


def test_a_class_a_method_imports_for_itself_types_the_attribute_it_builds(project):
    root = project({"eng/__init__.py": "", "eng/runner.py": RUNNER, "eng/worker.py": WORKER})
    assert _reads(root) == set()


def test_a_call_on_an_object_of_unknown_type_is_judged_as_a_call_of_the_method(project):
    # the same worker, building the runner through a factory nobody can read: its call
    # may be of `GraphRunner.execute`, and is made where the sum was tested
    worker = WORKER.replace("        from .runner import GraphRunner as Runner\n", "")
    worker = worker.replace("Runner()", "make_runner()")
    files = {"eng/__init__.py": "", "eng/runner.py": RUNNER, "eng/worker.py": worker}
    assert _reads(project(files)) == set()
    # a file that imports nothing of the runner, handed one, calls it untested
    handed = "def replay(runner, fb):\n    return runner.execute(fb)\n"
    assert _reads(project({**files, "eng/replay.py": handed})) == {("eng/runner.py", 3)}
    # ... and a call that cannot take the method's arguments is not one of it
    other = "def replay(runner):\n    return runner.execute()\n"
    assert _reads(project({**files, "eng/replay.py": other})) == set()


def test_a_local_import_of_a_function_types_what_it_returns(project):
    # (the worker names the runner's class where it imports for annotations only)
    factory = "from .runner import GraphRunner\n\n\ndef make_runner():\n    return GraphRunner()\n"
    worker = WORKER.replace("from .runner import GraphRunner as Runner", "from .factory import make_runner")
    worker = "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .runner import GraphRunner\n\n\n" + \
        worker.replace("Runner()", "make_runner()")
    root = project({"eng/__init__.py": "", "eng/runner.py": RUNNER, "eng/factory.py": factory,
                    "eng/worker.py": worker})
    assert _reads(root) == set()


def test_a_test_harness_calling_on_an_unknown_object_does_not_hide_the_engine_callers(project):
    files = {"eng/__init__.py": "", "eng/runner.py": RUNNER, "eng/worker.py": WORKER,
             "eng/tests/__init__.py": "", "eng/tests/kit.py": "from eng.runner import GraphRunner\n\n\n" + HARNESS}
    root = project(files)
    assert _reads(root) == set()
    # ... unless the project says test code is engine code
    root = project(files, pyproject="[tool.seqguard]\ntest-paths = []\n")
    assert _reads(root) == {("eng/runner.py", 3)}


def test_test_paths_match_folders_and_file_names_not_lookalikes():
    config = load_config([Path(".")])
    assert config.is_test_path("sglang/test/kits/dsa_metadata_kit.py")
    assert config.is_test_path("tests/conftest.py")
    assert config.is_test_path("pkg/test_runner.py") and config.is_test_path("pkg/runner_test.py")
    assert not config.is_test_path("sglang/srt/test_time_scaling/runner.py")
    assert not config.is_test_path("sglang/srt/testing.py")
    assert not config.is_test_path("sglang/srt/layers/attention/contest.py")


def test_a_harness_s_own_helpers_count_its_calls(project):
    # a function of the test code is called by test code: those calls are its callers
    kit = ("def helper(b):\n    return b.seq_lens_cpu.max()\n\n\n"
           "def caller(b):\n    if b.seq_lens_cpu is None:\n        return 0\n    return helper(b)\n")
    root = project({"eng/__init__.py": "", "tests/__init__.py": "", "tests/kit.py": kit})
    assert _reads(root) == set()


def test_a_bad_test_paths_value_is_one_error_naming_the_key(project, runner, chdir):
    from seqguard.cli import main
    root = project({"eng/__init__.py": ""}, pyproject="[tool.seqguard]\ntest-paths = \"tests\"\n")
    chdir(root)
    result = runner.invoke(main, ["lint", "--no-cache", "eng"])
    assert result.exit_code == 2
    assert "test-paths" in result.output and "Traceback" not in result.output


def test_a_test_creating_a_class_does_not_undo_that_the_engine_creates_it_only_under_a_forced_feature(project):
    engine = ("def decide(args, backends):\n    if args.enable_two_batch_overlap:\n        return True\n"
              "    return any(getattr(b, 'needs_cpu_seq_lens', True) for b in backends)\n\n\n"
              "class Splitter:\n    def run(self, batch):\n        return batch.seq_lens_cpu.sum()\n\n\n"
              "def make(args):\n    if args.enable_two_batch_overlap:\n        return Splitter()\n")
    files = {"eng/__init__.py": "", "eng/split.py": engine,
             "eng/tests/__init__.py": "", "eng/tests/test_split.py": "from eng.split import Splitter\n\n\n"
                                                                     "def test_run():\n    Splitter()\n"}
    model = '[tool.seqguard]\naggregator = "eng.split.decide"\n'
    assert _reads(project(files, pyproject=model)) == set()
    assert _reads(project(files, pyproject=model + "test-paths = []\n")) == {("eng/split.py", 9)}


# Another caller that hands OtherRunner a tested batch: were the worker's unguarded call
# taken to be GraphRunner's alone, OtherRunner's read would look cleared.
GUARDED_OTHER = ("\n\ndef other(fb):\n"
                 "    if fb.seq_lens_sum is None:\n        return None\n    return OtherRunner().execute(fb)\n")
READING_OTHER = RUNNER.replace("        return 0\n", "        return fb.seq_lens_sum - 1\n")


@pytest.mark.parametrize("first, second", [("OtherRunner", "GraphRunner"), ("GraphRunner", "OtherRunner")])
def test_a_name_a_method_imports_in_two_branches_may_be_either_class(project, first, second):
    worker = WORKER.replace(
        "        from .runner import GraphRunner as Runner\n",
        f"        if self.eager:\n            from .runner import {first} as Runner\n"
        f"        else:\n            from .runner import {second} as Runner\n")
    worker = worker.replace("        if fb.seq_lens_sum is None:\n            return None\n", "")
    worker = "from .runner import OtherRunner\n\n\n" + worker + GUARDED_OTHER
    root = project({"eng/__init__.py": "", "eng/runner.py": READING_OTHER, "eng/worker.py": worker})
    assert {("eng/runner.py", 3), ("eng/runner.py", 8)} <= _reads(root)


def test_a_parameter_annotation_names_the_module_s_class_not_one_the_body_imports(project):
    # annotations are evaluated where the def is: `r: Runner` is the module's Runner
    worker = ("from .runner import OtherRunner as Runner\n\n\nclass Worker:\n"
              "    def setup(self, r: Runner):\n        from .runner import GraphRunner as Runner\n"
              "        self.r = r\n\n    def step(self, fb):\n        return self.r.execute(fb)\n")
    other = GUARDED_OTHER.replace("OtherRunner()", "Runner()")
    root = project({"eng/__init__.py": "", "eng/runner.py": READING_OTHER, "eng/worker.py": worker + other})
    assert ("eng/runner.py", 8) in _reads(root)


def test_path_globs_match_as_globstar_does():
    import fnmatch
    import functools
    import random

    from seqguard.config import _path_glob_match

    def reference(parts, globs):
        @functools.lru_cache(None)
        def match(i, j):
            if j == len(globs):
                return i == len(parts)
            if globs[j] == "**":
                return any(match(k, j + 1) for k in range(i, len(parts) + 1))
            return i < len(parts) and fnmatch.fnmatchcase(parts[i], globs[j]) and match(i + 1, j + 1)
        return match(0, 0)

    names, globs = ["a", "b", "test", "x.py", "test_a.py"], ["**", "*", "a", "test", "*.py", "test_*", "?", "[ab]"]
    rng = random.Random(7)
    for _ in range(3000):
        path = [rng.choice(names) for _ in range(rng.randint(1, 5))]
        glob = [rng.choice(globs) for _ in range(rng.randint(1, 5))]
        assert _path_glob_match("/".join(path), "/".join(glob)) == reference(tuple(path), tuple(glob)), (path, glob)
    # a pattern that makes a regex backtrack for minutes is matched part by part
    assert not _path_glob_match("x/" + "a" * 40 + "c.py", "**/" + "a*" * 12 + "b.py")


# A mixin's method, called on instances of the class that inherits it, by a file that
# imports only that class (SGLang: `ForwardBatchDeepSeekMHAMixin.fetch_mha_one_shot_kv_indices`,
# called as `forward_batch.fetch_mha_one_shot_kv_indices()` in forward_mha.py).
MIXIN = """\
class LengthsMixin:
    def host_max(self):
        return self.seq_lens_cpu.max()
"""
BATCH = """\
from typing import Optional

from .mixin import LengthsMixin


class Batch(LengthsMixin):
    seq_lens_cpu: Optional[object] = None
"""


@pytest.mark.parametrize("guarded", [True, False])
def test_a_mixin_s_method_is_called_by_the_importers_of_the_class_inheriting_it(project, guarded):
    user = ("from .batch import Batch\n\n\ndef plan(b: Batch):\n"
            + ("    if b.seq_lens_cpu is None:\n        return 0\n" if guarded else "")
            + "    return b.host_max()\n")
    root = project({"eng/__init__.py": "", "eng/mixin.py": MIXIN, "eng/batch.py": BATCH, "eng/user.py": user})
    # guarded: its one call tested the mirror; unguarded: the call is found, and leaves it open
    assert _reads(root) == (set() if guarded else {("eng/mixin.py", 3)})


def test_a_mixin_s_safe_caller_does_not_hide_an_unsafe_one_through_the_subclass(project):
    # a guarded call by a file importing the mixin used to be the only call found
    safe = ("from .mixin import LengthsMixin\n\n\ndef check(m: LengthsMixin):\n"
            "    if m.seq_lens_cpu is None:\n        return 0\n    return m.host_max()\n")
    unsafe = "from .batch import Batch\n\n\ndef plan(b: Batch):\n    return b.host_max()\n"
    root = project({"eng/__init__.py": "", "eng/mixin.py": MIXIN, "eng/batch.py": BATCH, "eng/safe.py": safe,
                    "eng/user.py": unsafe})
    assert _reads(root) == {("eng/mixin.py", 3)}


# A warmup runner whose dummy forward reads a persistent host buffer, called three ways:
# through `functools.partial`, from a closure over the caller's parameter, and with a
# local bound to what a factory returns. The buffer is a SimpleNamespace of tensors
# (never None); a batch handed in instead may have its mirror nulled.
BUFFERS_RUNNER = """\
import functools
from types import SimpleNamespace

import torch


class Runner:
    def alloc_buffers(self, max_bs):
        return SimpleNamespace(seq_lens=torch.zeros((max_bs,)), seq_lens_cpu=torch.full((max_bs,), 1))

    def dummy_run(self, batch_size, *, buffers):
        return buffers.seq_lens_cpu[:batch_size]

    def warmup(self, batch_size, buffers):
        def forward_fn():
            self.dummy_run(batch_size=batch_size, buffers=buffers)
{rebind}
        run_later(forward_fn)

    def start(self):
        self.warmup(4, {warmup_argument})


def run_later(fn):
    fn()


def sweep(runner: Runner, batch):
    dummy = runner.alloc_buffers(16)
{sweep_extra}    run_later(functools.partial(runner.dummy_run, batch_size=4, buffers={partial_argument}))
"""
BUFFERS_BATCH = """\
from typing import Optional


class Batch:
    seq_lens_cpu: Optional[object] = None


def skip(b: Batch):
    b.seq_lens_cpu = None
"""


def _buffers_project(project, rebind="", warmup_argument="self.alloc_buffers(8)", sweep_extra="",
                     partial_argument="dummy"):
    runner = BUFFERS_RUNNER.format(rebind=rebind, warmup_argument=warmup_argument, sweep_extra=sweep_extra,
                                   partial_argument=partial_argument)
    return project({"eng/__init__.py": "", "eng/runner.py": runner, "eng/batch.py": BUFFERS_BATCH})


def test_calls_through_partial_closures_and_factory_locals_bind_what_they_pass(project):
    assert _reads(_buffers_project(project)) == set()


@pytest.mark.parametrize("change", [
    # the partial passes the caller's untyped batch: its mirror may be None
    {"partial_argument": "batch"},
    # a loop rebinds the local too: what it holds is not only the factory's buffer
    {"sweep_extra": "    for dummy in (batch,):\n        pass\n"},
    # the function around the closure rebinds the name the closure reads
    {"rebind": "        buffers = make_buffers()\n"},
    # the closure's binding comes from a caller passing an object of unknown type
    {"warmup_argument": "make_buffers()"},
])
def test_each_binding_is_followed_to_what_it_holds(project, change):
    assert _reads(_buffers_project(project, **change)) == {("eng/runner.py", 12)}


def test_a_partial_is_a_call_not_a_value_that_escapes(project):
    # before, `functools.partial(runner.dummy_run, ...)` counted as using the method as a
    # value, and the read was judged on its own, whatever its callers passed
    root = _buffers_project(project)
    from seqguard.lint.runner import lint_paths
    from seqguard.lint.contract.sites import Function
    result = lint_paths([root], load_config([root]), use_cache=False, jobs=1)
    sites = result.contract.sites.sites(Function("eng/runner.py", "Runner.dummy_run"), "buffers")
    assert sorted((s.record.line, s.record.scope, s.argument) for s in sites) == [
        (16, "Runner.warmup.forward_fn", "buffers"), (30, "sweep", "dummy")]


# A runner base whose warmup unpacks what an overridable method returns; the override
# lives two classes down, in a file that names no mirror (so it is not parsed for facts).
TUPLE_RUNNER = """\
from types import SimpleNamespace

import torch


def alloc(max_bs) -> SimpleNamespace:
    return SimpleNamespace(seq_lens=torch.zeros((max_bs,)), seq_lens_cpu=torch.full((max_bs,), 1))


class BaseRunner:
    def autotune_buffers(self):
        return {base_returned}

    def dummy_run(self, batch_size, *, buffers):
        return buffers.seq_lens_cpu[:batch_size]

    def warmup(self):
        buffers, batch_size = self.autotune_buffers()
        assert buffers is not None
        self.dummy_run(batch_size, buffers=buffers)
        del buffers
"""
TUPLE_EAGER = """\
from typing import Any, Tuple

from .batch import Batch
from .runner import BaseRunner, alloc


class Middle(BaseRunner):
    pass


class EagerRunner(Middle):
    def autotune_buffers(self) -> Tuple[Any, int]:
        return {returned}
"""


@pytest.mark.parametrize("base_returned, returned, reported", [
    # the override's buffer is a namespace of tensors: with the base's `(None, None)`
    # (which the assert rules out) nothing the unpacking binds can hold None
    ("None, None", "alloc(8), 8", False),
    # an override handing out a batch, whose mirror the project sets to None, even where
    # the base's own buffer is safe (the subclass's file is found by its scan)
    ("None, None", "Batch(), 8", True),
    ("alloc(4), 4", "Batch(), 8", True),
    # a tuple the override got from elsewhere cannot be split: of unknown type
    ("alloc(4), 4", "self.pair", True),
])
def test_a_tuple_a_method_returns_is_split_over_every_override(project, base_returned, returned, reported):
    root = project({"eng/__init__.py": "", "eng/runner.py": TUPLE_RUNNER.format(base_returned=base_returned),
                    "eng/batch.py": BUFFERS_BATCH, "eng/eager.py": TUPLE_EAGER.format(returned=returned)})
    assert _reads(root) == ({("eng/runner.py", 15)} if reported else set())


# An override called through an object typed as its base: the caller's file imports
# only the base, and the base's file names no mirror (only the byte scan saw it).
BASE = "class Backend:\n    def plan(self, fb):\n        return None\n"
IMPL = ("from .base import Backend\n\n\nclass Impl(Backend):\n    def plan(self, fb):\n"
        "        return fb.seq_lens_cpu.max()\n")
GUARDED_USER = """\
from .impl import Impl


def safe(fb):
    if fb.seq_lens_cpu is None:
        return None
    return Impl().plan(fb)
"""
BASE_RUNNER = """\
from typing import Optional

from .base import Backend


class Batch:
    seq_lens_cpu: Optional[object] = None


class Runner:
    def __init__(self, backend: Backend):
        self.backend = backend

    def step(self, fb: Batch):
        fb.seq_lens_cpu = None
{guard}        return self.backend.plan(fb)
"""


@pytest.mark.parametrize("guard, reported", [
    # the guarded call in user.py used to be the only call found, and cleared the read
    ("", True),
    ("        if fb.seq_lens_cpu is None:\n            return None\n", False),
])
def test_an_override_is_called_where_an_object_typed_as_its_base_is(project, guard, reported):
    root = project({"eng/__init__.py": "", "eng/base.py": BASE, "eng/impl.py": IMPL, "eng/user.py": GUARDED_USER,
                    "eng/runner.py": BASE_RUNNER.format(guard=guard)})
    assert _reads(root) == ({("eng/impl.py", 6)} if reported else set())


def test_an_object_of_unknown_type_may_be_the_override(project):
    # the same runner, its backend built by a factory nobody can read: that backend may
    # be an `Impl`, so the untested call is one of `Impl.plan` (it was once taken not to
    # be, as a call in a file naming neither the class nor a base was)
    runner = BASE_RUNNER.format(guard="").replace("def __init__(self, backend: Backend):\n        "
                                                  "self.backend = backend",
                                                  "def __init__(self):\n        self.backend = make()")
    # (a second parsed class with the method: else an untyped `.plan()` can only be Impl's)
    other = "class Other:\n    def plan(self, fb):\n        return fb.seq_lens_cpu is None\n"
    root = project({"eng/__init__.py": "", "eng/base.py": BASE, "eng/impl.py": IMPL, "eng/user.py": GUARDED_USER,
                    "eng/runner.py": runner, "eng/other.py": other})
    assert _reads(root) == {("eng/impl.py", 6)}


# ---- from a hostile review of the caller and type work: each of these once cleared a
# read that a run can reach with the mirror None

NULLABLE_BATCH = "from typing import Optional\n\n\nclass Batch:\n    seq_lens_cpu: Optional[object] = None\n"
ALLOC_RUNNER = """\
from types import SimpleNamespace

import torch


def alloc(n):
    return SimpleNamespace(seq_lens=torch.zeros((n,)), seq_lens_cpu=torch.full((n,), 1))


def use(buffers):
    return buffers.seq_lens_cpu[:4]


def caller(batches, other, pair):
    dummy = alloc(8)
{extra}    use(dummy)
"""


@pytest.mark.parametrize("extra, reported", [
    ("", False),                                        # only the buffer: never None
    ("    if batches:\n        dummy = batches[0]\n", True),  # a binding of no known type
    ("    dummy, n = pair\n", True),
    ("    dummy: object = other\n", True),
    ("    dummy = other or alloc(8)\n", True),                # either side may be the value
    ("    dummy = other if batches else alloc(8)\n", True),
])
def test_a_local_is_of_a_known_type_only_when_every_binding_is(project, extra, reported):
    root = project({"eng/__init__.py": "", "eng/batch.py": NULLABLE_BATCH,
                    "eng/runner.py": ALLOC_RUNNER.format(extra=extra)})
    assert _reads(root) == ({("eng/runner.py", 11)} if reported else set())


@pytest.mark.parametrize("walk, reported", [
    # called only by itself: no call from outside shows the mirror present
    ("def total(fb, n):\n    if n > 0:\n        return total(fb, n - 1)\n    return fb.seq_lens_cpu.sum()\n", True),
    # mutual recursion, nobody else calling
    ("def total(fb, n):\n    if n > 0:\n        return other(fb, n - 1)\n    return fb.seq_lens_cpu.sum()\n\n\n"
     "def other(fb, n):\n    return total(fb, n)\n", True),
    # the same cycle entered once, by a caller that tested the mirror: the fixpoint holds
    ("def total(fb, n):\n    if n > 0:\n        return total(fb, n - 1)\n    return fb.seq_lens_cpu.sum()\n\n\n"
     "def entry(fb):\n    if fb.seq_lens_cpu is None:\n        return None\n    return total(fb, 3)\n", False),
])
def test_a_cycle_is_safe_only_through_a_call_from_outside_it(project, walk, reported):
    root = project({"eng/__init__.py": "", "eng/batch.py": NULLABLE_BATCH, "eng/walk.py": walk})
    assert _reads(root) == ({("eng/walk.py", 4)} if reported else set())
    if reported:  # and explain says why, without going round the cycle for ever
        from seqguard.lint.contract.reasons import Kind
        from seqguard.lint.contract.sites import Function
        from seqguard.lint.questions.mirror_present import MirrorAtCalls
        result = lint_paths([root], load_config([root]), use_cache=False, jobs=1)
        why = result.contract.fixpoint.why_safe(Function("eng/walk.py", "total"),
                                                MirrorAtCalls("fb", "seq_lens_cpu", None))
        assert not why.holds and Kind.CYCLE_ONLY in {node.kind for node in why.chain()}


def test_an_answer_does_not_depend_on_the_order_reads_are_judged_in(project):
    # `x`'s read needs one caller more than are followed; `a`, judged first in a one-core
    # run, once left an answer found with depth to spare that `x`'s question then reused
    files = {"eng/__init__.py": "", "eng/batch.py": NULLABLE_BATCH,
             "eng/m1.py": "def x(fb):\n    return fb.seq_lens_cpu.sum()\n",
             "eng/m2.py": "from .m1 import x\n\n\ndef a(fb):\n    r = x(fb)\n    return r + fb.seq_lens_cpu.max()\n",
             "eng/chain.py": "from .m2 import a\n\n\ndef b(fb):\n    return a(fb)\n\n\n"
                             "def c(fb):\n    return b(fb)\n\n\ndef d(fb):\n    return c(fb)\n\n\n"
                             "def e(fb):\n    if fb.seq_lens_cpu is None:\n"
                             "        return None\n    return d(fb)\n"}
    files.update({f"eng/pad{i}.py": f"def pad{i}(fb):\n    return fb.seq_lens_cpu.sum()\n" for i in range(8)})
    root = project(files)
    config = load_config([root])
    whole = {d.line for d in lint_paths([root], config, use_cache=False, jobs=1).diagnostics
             if d.code == "SG002" and d.path.endswith("m1.py")}
    alone = {d.line for d in lint_paths([root / "eng" / "m1.py"], config, use_cache=False, jobs=1).diagnostics
             if d.code == "SG002"}
    assert whole == alone == {2}


PARTIAL_HELPER = "def host_max(n, fb):\n    return fb.seq_lens_cpu[:n].max()\n"


@pytest.mark.parametrize("maker", [
    # the partial binds `n`, not the batch: the call that passes the batch comes later (a
    # guard here cleared it only inside a backend keeping the mirror: tests/test_dispatch.py)
    "import functools\n\nfrom .helper import host_max\n\n\ndef make(fb):\n    if fb.seq_lens_cpu is None:\n"
    "        return None\n    return functools.partial(host_max, 4)\n",
    # it binds the batch, tested here; but the partial runs later, when that may no longer hold
    "import functools\n\nfrom .helper import host_max\n\n\ndef make(fb):\n    if fb.seq_lens_cpu is None:\n"
    "        return None\n    return functools.partial(host_max, 4, fb)\n",
    # a `partial` of the project's own is not functools'
    "from .helper import host_max\n\n\ndef partial(fn, *bound):\n    return lambda: fn(*bound, None)\n\n\n"
    "def make(fb):\n    if fb.seq_lens_cpu is None:\n        return None\n    return partial(host_max, 4, fb)\n",
])
def test_a_partial_says_nothing_of_the_path_where_it_is_made(project, maker):
    user = ("from .maker import make\n\n\ndef run(fb, other):\n    other.seq_lens_cpu = None\n"
            "    return make(fb)(other)\n")
    root = project({"eng/__init__.py": "", "eng/batch.py": NULLABLE_BATCH, "eng/maker.py": maker,
                    "eng/helper.py": PARTIAL_HELPER, "eng/user.py": user})
    assert ("eng/helper.py", 2) in _reads(root)


MIXIN_RUNNER = """\
from types import SimpleNamespace

import torch


def alloc(n):
    return SimpleNamespace(seq_lens=torch.zeros((n,)), seq_lens_cpu=torch.full((n,), 1))


class BaseRunner:
    def make_buffers(self):
        return alloc(4)

    def dummy_run(self, batch_size, *, buffers):
        return buffers.seq_lens_cpu[:batch_size]

    def warmup(self):
        buffers = self.make_buffers()
        self.dummy_run(4, buffers=buffers)
"""


@pytest.mark.parametrize("sub, reported", [
    # without a subclass, only the buffer is ever passed
    ("", False),
    # a subclass takes `make_buffers` from a mixin before its runner base
    ("from .mixin import BatchMixin\nfrom .runner import BaseRunner\n\n\nclass Eager(BatchMixin, BaseRunner):\n"
     "    pass\n", True),
    # a subclass naming the base by another name
    ("from .batch import Batch\nfrom .runner import BaseRunner as BR\n\n\nclass Eager(BR):\n"
     "    def make_buffers(self):\n        return Batch()\n", True),
])
def test_what_a_method_returns_counts_every_class_that_can_answer_the_call(project, sub, reported):
    mixin = "from .batch import Batch\n\n\nclass BatchMixin:\n    def make_buffers(self):\n        return Batch()\n"
    root = project({"eng/__init__.py": "", "eng/batch.py": NULLABLE_BATCH, "eng/runner.py": MIXIN_RUNNER,
                    "eng/mixin.py": mixin, "eng/sub.py": sub})
    assert _reads(root) == ({("eng/runner.py", 15)} if reported else set())


def test_a_call_on_an_object_of_the_class_itself_is_of_its_method_whatever_its_arguments_are_named(project):
    impl = "class Impl:\n    def merge(self, fb, other_fb):\n        return fb.seq_lens_cpu.max()\n"
    safe = ("from .impl import Impl\n\n\ndef run(fb, other_fb):\n    if fb.seq_lens_cpu is None:\n"
            "        return None\n    return Impl().merge(fb, other_fb)\n")
    unsafe = ("from .impl import Impl\n\n\ndef run(obj: Impl, fb, other_fb):\n    other_fb.seq_lens_cpu = None\n"
              "    return obj.merge(other_fb, fb)\n")
    root = project({"eng/__init__.py": "", "eng/batch.py": NULLABLE_BATCH, "eng/impl.py": impl, "eng/safe.py": safe,
                    "eng/unsafe.py": unsafe})
    assert _reads(root) == {("eng/impl.py", 3)}


@pytest.mark.parametrize("spelling", ["runner.execute(fb)", "runner.\\\n        execute(fb)",
                                      "(runner  # the runner\n        .execute(fb))", "runner.ｅxecute(fb)"])
def test_a_file_handed_the_object_is_searched_however_it_spells_the_attribute(project, spelling):
    # the factory's runner called untested, in a file importing nothing of its class:
    # a line continuation, a comment in brackets, an NFKC spelling are the same attribute
    worker = WORKER.replace("        from .runner import GraphRunner as Runner\n", "")
    worker = worker.replace("Runner()", "make_runner()")
    handed = f"def replay(runner, fb):\n    return {spelling}\n"
    root = project({"eng/__init__.py": "", "eng/runner.py": RUNNER, "eng/worker.py": worker, "eng/replay.py": handed})
    assert _reads(root) == {("eng/runner.py", 3)}


def test_the_scan_keeps_every_attribute_word():
    from seqguard.lint.facts import scan
    facts = scan("a.b(c). d\nx = (y  # note\n  .z)\nw.\\\n  v\nq.ｅxecute\n".encode(), ["seq_lens_cpu"])
    assert set(facts.attributes.split()) == {"b", "d", "z", "v", "execute"}


def test_the_line_binding_the_object_of_a_call_types_it(project):
    # `batch = pick()` names nothing the search looks for, yet says what `batch` is: a
    # `Plain`, whose `filter` is not `Split.filter` (left out, the call may be of it)
    split = ("class Split:\n    def filter(self, fb):\n        return fb.seq_lens_cpu.max()\n\n\n"
             "def forced(fb):\n    if fb.seq_lens_cpu is not None:\n        Split().filter(fb)\n")
    plain = ("class Plain:\n    def filter(self, fb):\n        return None\n\n\n"
             "def pick() -> Plain:\n    return Plain()\n")
    user = ("from .plain import pick\n\n\ndef step(fb):\n    batch = pick()\n    batch.filter(fb)\n")
    root = project({"eng/__init__.py": "", "eng/split.py": split, "eng/plain.py": plain, "eng/user.py": user})
    assert _reads(root) == set()
    unknown = user.replace("    batch = pick()\n", "    batch = fb.owner\n")
    root = project({"eng/__init__.py": "", "eng/split.py": split, "eng/plain.py": plain, "eng/user.py": unknown})
    assert _reads(root) == {("eng/split.py", 3)}


# `GraphRunner.execute` again; elsewhere a method of the same name is handed out as a
# value. Which method it is would be told by the object's type, and every gap in the
# types (a subclass the scan missed, `__new__`, a class shadowed in a function, a proxy
# base) would then clear a read unseen: any such use of the name gives up the callers.
TIMERS = """\
class Timer:
    def execute(self):
        return 0


def timed(timer: Timer):
    run = timer.execute
    return run()
"""


def test_a_method_of_the_same_name_used_as_a_value_gives_up_the_callers(project):
    files = {"eng/__init__.py": "", "eng/runner.py": RUNNER, "eng/worker.py": WORKER, "eng/timers.py": TIMERS}
    assert _reads(project(files)) == {("eng/runner.py", 3)}


def test_a_method_name_on_an_object_of_unknown_type_used_as_a_value_may_be_this_one(project):
    handed = "def register(runner, table):\n    table['run'] = runner.execute\n"
    files = {"eng/__init__.py": "", "eng/runner.py": RUNNER, "eng/worker.py": WORKER, "eng/table.py": handed}
    assert _reads(project(files)) == {("eng/runner.py", 3)}
    # ... and so may the method itself, on its class or on an object typed as it
    for use in ("GraphRunner.execute", "typed.execute"):
        handed = ("from .runner import GraphRunner\n\n\ndef register(typed: GraphRunner, table):\n"
                  f"    table['run'] = {use}\n")
        files["eng/table.py"] = handed
        assert _reads(project(files)) == {("eng/runner.py", 3)}, use


def test_a_function_imported_under_a_method_s_name_is_not_the_method(project):
    # `from .tools import execute as run_tool`: a module-level function, never the method
    tools = "def execute(fb):\n    return 0\n"
    user = "from .tools import execute as run_tool\n\nHANDLERS = {'tool': run_tool}\n"
    files = {"eng/__init__.py": "", "eng/runner.py": RUNNER, "eng/worker.py": WORKER, "eng/tools.py": tools,
             "eng/user.py": user}
    assert _reads(project(files)) == set()


# The verify read is guarded by its one caller; `Child.verify` calls `super().verify`,
# its base's. Telling that needs `other.py` parsed, which no read in it asks for: before,
# it was parsed only if an earlier question had needed it (judging `Peeker.peek` walks
# `use`), so the read was cleared when `a_reader.py` was judged first and reported when
# `runner.py` was linted alone.
ORDER_FILES = {
    "eng/__init__.py": "",
    "eng/runner.py": "class DraftVerify:\n    def verify(self, batch):\n        return batch.seq_lens_cpu.max()\n",
    "eng/worker.py": ("from .runner import DraftVerify\n\n\ndef step(batch):\n    if batch.seq_lens_cpu is None:\n"
                      "        return None\n    return DraftVerify().verify(batch)\n"),
    "eng/a_reader.py": "class Peeker:\n    def peek(self, fb):\n        return fb.seq_lens_sum + 1\n",
    "eng/other.py": """\
from .a_reader import Peeker


class Base:
    def verify(self, *args, **kwargs):
        return 0


class Child(Base):
    def verify(self, *args, **kwargs):
        return super().verify(*args, **kwargs)


def entry(thing):
    return Child().verify(thing)


def use(p: Peeker, fb):
    return p.peek(fb)
""",
}


@pytest.mark.parametrize("targets", [["."], ["eng/runner.py"], ["eng/a_reader.py", "eng/runner.py"],
                                     ["eng/runner.py", "eng/a_reader.py"]])
@pytest.mark.parametrize("jobs", [1, 2])
def test_what_is_known_of_a_class_does_not_depend_on_what_was_judged_before(project, targets, jobs):
    root = project(ORDER_FILES)
    config = load_config([root])
    result = lint_paths([root / t for t in targets], config, use_cache=False, jobs=jobs)
    found = {(Path(d.path).name, d.line) for d in result.diagnostics if d.code == "SG002"}
    assert ("runner.py", 3) not in found
    assert (("a_reader.py", 3) in found) == ("." in targets or "eng/a_reader.py" in targets)


# A module-level string that mentions a function (a patch spec naming its target, a
# help text) does not use it; a string that is its name, or a dotted path to it, may
# be a reference by name (getattr, a registry) and does (issue 39: explain stopped at a
# YAML string in SGLang 0.5.23's debug_utils/pr_fix_toggle.py:78).
_GUARDED_CALLER = ("def total(fb):\n    return fb.seq_lens_cpu.sum()\n\n\n"
                   "def caller(fb):\n    if fb.seq_lens_cpu is not None:\n        return total(fb)\n")


@pytest.mark.parametrize("module_text, reported", [
    # text that mentions it, on a line of its own inside a string
    ('PATCH = """\ntarget: eng.walk.total\nedits: []\n"""\n', False),
    ('HELP = """\nSee total for the sum of the host lengths.\n"""\n', False),
    # ... but not a call written in it, nor a one-line string (a registry's "module:attr")
    ('CODE = """\nrun(total(fb))\n"""\n', True),
    ('register("eng.walk:total")\n', True),
    ('register(\n    "eng.walk:total",\n)\n', True),
    ('exec("total(GLOBAL)")\n', True),
    # a string that is its name or a path to it: maybe a reference by name
    ('NAME = """\neng.walk.total\n"""\n', True),
    ('REGISTRY = dict(\n    sum="eng.walk.total",\n)\n', True),
    ('REGISTRY = dict(\n    sum=total,\n)\n', True),
])
def test_a_string_that_mentions_a_function_is_no_use_of_it(project, module_text, reported):
    root = project({"eng/__init__.py": "", "eng/batch.py": NULLABLE_BATCH,
                    "eng/walk.py": "from eng.batch import Batch\n\n\n" + _GUARDED_CALLER.replace("(fb)", "(fb: Batch)")
                    .replace("total(fb: Batch)\n", "total(fb)\n") + "\n\n" + module_text})
    assert _reads(root) == ({("eng/walk.py", 5)} if reported else set())
