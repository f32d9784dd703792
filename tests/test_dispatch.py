"""Calls through a base class: an override runs wherever an object typed as the base is
called, delegating backends hand the batch on to each other, and `self.m()` in a base
runs with `self` any subclass. Each mechanism with a case it clears and one it keeps."""

from pathlib import Path

import pytest

from seqguard.config import load_config
from seqguard.lint.runner import lint_paths

MODEL = """\
[tool.seqguard]
backend-bases = ["eng.base.Backend"]
mode-enum = "eng.modes.Mode"
mode-attribute = "forward_mode"
skip-modes = ["DECODE"]
present-when = [{ test = "*.cp_metadata is not None", why = "context-parallel batches are prefill" }]
"""
MODES = """\
import enum


class Mode(enum.IntEnum):
    EXTEND = 1
    DECODE = 2

    def is_decode(self):
        return self == Mode.DECODE
"""
# the base dispatches on the mode; every backend's forward_extend sees extends only
BASE = """\
class Backend:
    needs_cpu_seq_lens: bool = True

    def forward(self, fb):
        if fb.forward_mode.is_decode():
            return self.forward_decode(fb)
        return self.forward_extend(fb)

    def forward_decode(self, fb):
        return None

    def forward_extend(self, fb):
        return None
"""
READER = """\
from .base import Backend


class Reader(Backend):
    needs_cpu_seq_lens = False

    def forward_extend(self, fb):
        return fb.seq_lens_cpu.max()
"""


def _reads(root: Path) -> set[tuple[str, int]]:
    result = lint_paths([root], load_config([root]), use_cache=False, jobs=1)
    return {(Path(d.path).relative_to(root).as_posix() if Path(d.path).is_absolute() else d.path, d.line)
            for d in result.diagnostics if d.code in ("SG002", "SG003")}


def _wrapper(name: str, inner: str, dispatch: str = "") -> str:
    """A backend holding another, typed as the base, and handing extends on to it."""
    return (f"from .base import Backend\n\n\nclass {name}(Backend):\n"
            f"    needs_cpu_seq_lens = False\n\n"
            f"    def __init__(self, inner: Backend):\n        self.inner = inner\n\n"
            f"    def forward_extend(self, fb):\n        return self.inner.forward_extend(fb)\n{dispatch}")


def _engine(project, wrappers: dict[str, str], extra: dict[str, str] = {}):
    files = {"eng/__init__.py": "", "eng/modes.py": MODES, "eng/base.py": BASE, "eng/reader.py": READER,
             **wrappers, **extra}
    return project(files, pyproject=MODEL)


def test_delegating_backends_calling_each_other_are_judged_by_the_calls_into_them(project):
    # five wrappers, each may hold any other (a cycle through the base type), more than
    # the four callers followed up: only the base's dispatch calls into them
    wrappers = {f"eng/w{i}.py": _wrapper(f"W{i}", "") for i in range(5)}
    assert _reads(_engine(project, wrappers)) == set()


def test_one_delegating_caller_handing_on_a_decode_batch_is_found_through_the_chain(project):
    wrappers = {f"eng/w{i}.py": _wrapper(f"W{i}", "") for i in range(5)}
    # W4 also runs the inner backend's extend for decode batches
    wrappers["eng/w4.py"] += ("\n    def forward_decode(self, fb):\n"
                              "        return self.inner.forward_extend(fb)\n")
    assert _reads(_engine(project, wrappers)) == {("eng/reader.py", 8)}


@pytest.mark.parametrize("bind, reported", [
    # the linear layers dispatch on the logical mode, the others on the mode: either way
    # a decode goes to forward_decode
    ("mode = fb.logical_forward_mode if linear else fb.forward_mode\n", False),
    # the alias is rebound to something else before the test: it says nothing
    ("mode = fb.logical_forward_mode if linear else fb.forward_mode\n        mode = pick(fb)\n", True),
    # ... or by a walrus
    ("mode = fb.forward_mode\n        print(mode := pick(fb))\n", True),
    # the batch it was read from is rebound: it names the old batch's mode
    ("mode = fb.forward_mode\n        fb = other\n", True),
    ("mode = fb.forward_mode\n        for fb in other:\n            pass\n", True),
    ("mode = fb.forward_mode\n        fb.forward_mode = other.forward_mode\n", True),
])
def test_a_local_naming_the_mode_is_a_test_of_the_mode(project, bind, reported):
    hybrid = ("from .base import Backend\n\n\nclass Hybrid(Backend):\n    needs_cpu_seq_lens = False\n\n"
              "    def __init__(self, inner: Backend):\n        self.inner = inner\n\n"
              "    def forward(self, fb, other=None, linear=False):\n"
              f"        {bind}"
              "        if mode.is_decode():\n            return self.inner.forward_decode(fb)\n"
              "        return self.inner.forward_extend(fb)\n")
    root = _engine(project, {"eng/hybrid.py": hybrid})
    assert _reads(root) == ({("eng/reader.py", 8)} if reported else set())


@pytest.mark.parametrize("call, reported", [
    # three positional arguments: neither `forward_extend(self, fb)` nor
    # `forward_extend(self, fb, q=None)` can take them, so the call is of neither
    ("backend.forward_extend(q, fb, 2)", set()),
    # a keyword neither names
    ("backend.forward_extend(fb, layer=1)", set()),
    # `(q, fb)` fits Other's signature (it takes `q` for its batch: names are not
    # checked, a variable need not be named as the parameter it is passed to), not
    # Reader's
    ("backend.forward_extend(q, fb)", {("eng/other.py", 8)}),
    # written to fit both: both reads are reached by a batch nulled just before
    ("backend.forward_extend(fb)", {("eng/reader.py", 8), ("eng/other.py", 8)}),
])
def test_a_call_the_override_cannot_take_is_not_of_it(project, call, reported):
    other = ("from .base import Backend\n\n\nclass Other(Backend):\n    needs_cpu_seq_lens = False\n\n"
             "    def forward_extend(self, fb, q=None):\n        return fb.seq_lens_cpu.max()\n")
    caller = ("from .base import Backend\n\n\ndef run(backend: Backend, q, fb):\n"
              "    fb.seq_lens_cpu = None\n"
              f"    return {call}\n")
    root = _engine(project, {}, {"eng/other.py": other, "eng/caller.py": caller})
    assert _reads(root) == reported


def test_a_test_through_getattr_matches_a_stated_condition(project):
    cp = ("from .base import Backend\n\n\nclass Cp(Backend):\n    needs_cpu_seq_lens = False\n\n"
          "    def forward_decode(self, fb):\n"
          "        if getattr(fb, 'cp_metadata', None) is not None:\n"
          "            return fb.seq_lens_cpu.max()\n"
          "        return None\n")
    assert _reads(_engine(project, {}, {"eng/cp.py": cp})) == set()
    # without the condition the same read is open
    assert _reads(_engine(project, {}, {"eng/cp.py": cp.replace("cp_metadata", "other_metadata")})) == \
        {("eng/cp.py", 9)}


@pytest.mark.parametrize("subclass_flag, reported", [("True", False), ("False", True)])
def test_a_call_made_in_a_backend_keeping_the_mirror_is_made_for_its_subclasses_too(project, subclass_flag,
                                                                                     reported):
    # a helper reads the mirror, called from a method of a backend whose flag is True
    # (inherited); a subclass that opts out runs that method as well
    helper = "def host_max(fb):\n    return fb.seq_lens_cpu.max()\n"
    keeper = ("from .base import Backend\nfrom .helper import host_max\n\n\nclass Keeper(Backend):\n\n"
              "    def forward_decode(self, fb):\n        return host_max(fb)\n")
    sub = f"from .keeper import Keeper\n\n\nclass Sub(Keeper):\n    needs_cpu_seq_lens = {subclass_flag}\n"
    root = _engine(project, {}, {"eng/helper.py": helper, "eng/keeper.py": keeper, "eng/sub.py": sub})
    assert _reads(root) == ({("eng/helper.py", 2)} if reported else set())


def test_the_overrides_defining_a_method_do_not_make_its_name_too_common_to_follow(project):
    # thirty backends define forward_extend (more files than callers are searched in);
    # none calls it, so the base's dispatch is still its one call
    plain = {f"eng/p{i}.py": f"from .base import Backend\n\n\nclass P{i}(Backend):\n"
                             f"    def forward_extend(self, fb):\n        return None\n" for i in range(30)}
    assert _reads(_engine(project, {}, plain)) == set()


def test_a_partial_made_in_a_backend_keeping_the_mirror_runs_wherever_it_is_called(project):
    keeper = ("import functools\n\nfrom .base import Backend\nfrom .helper import host_max\n\n\n"
              "class Keeper(Backend):\n    needs_cpu_seq_lens = True\n\n"
              "    def init(self):\n        self.fn = functools.partial(host_max, 4)\n")
    helper = "def host_max(n, fb):\n    return fb.seq_lens_cpu[:n].max()\n"
    user = "def run(keeper, fb):\n    fb.seq_lens_cpu = None\n    return keeper.fn(fb)\n"
    root = _engine(project, {}, {"eng/keeper.py": keeper, "eng/helper.py": helper, "eng/user.py": user})
    assert ("eng/helper.py", 2) in _reads(root)


def test_wrappers_delegating_to_each_other_are_judged_in_bounded_work(project):
    # every wrapper's forward_extend may be called by every other's (each holds a
    # Backend): the orders to enter that cycle grow as n!. Five are judged through (the
    # test above); for twelve the questions one read may ask run out first, and the read
    # stays reported rather than cleared for want of work (before, this ran for hours)
    wrappers = {f"eng/w{i}.py": _wrapper(f"W{i}", "") for i in range(12)}
    assert _reads(_engine(project, wrappers)) == {("eng/reader.py", 8)}


# The batch's mode is tested, then a call sets it, then it is tested again: the two tests
# contradict each other only because the model does not see the call change the mode.
RESET = """\
from .modes import Mode


def prepare(batch):
    batch.forward_mode = Mode.DECODE


def step(batch):
    if batch.forward_mode.is_decode():
        return None
    prepare(batch)
    assert batch.forward_mode.is_decode()
    return batch.seq_lens_cpu.max()


def caller(batch):
    if batch.forward_mode.is_decode():
        return None
    prepare(batch)
    if batch.forward_mode.is_decode():
        return helper(batch)
    return None


def helper(batch):
    return batch.seq_lens_sum + 1
"""


def test_tests_that_leave_no_mode_at_all_clear_nothing(project):
    # (no mode left says a call changed the mode, not that the line never runs)
    root = project({"eng/__init__.py": "", "eng/modes.py": MODES, "eng/base.py": BASE, "eng/worker.py": RESET},
                   MODEL)
    assert _reads(root) == {("eng/worker.py", 13), ("eng/worker.py", 26)}
