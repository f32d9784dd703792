"""The launch shortcut's cache: one compiled kernel per specialisation, the launcher
called with every argument in signature order, and Triton's own path whenever the
shortcut cannot be sure (first call, hooks, missing arguments, off). On the CPU a
recording kernel stands in for the GPU; the GPU suite checks real launches."""

import pytest

# the runtime extra: without torch and triton this module is skipped, not a collection error
torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import triton.language as tl  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

from seqguard.runtime.ops import launch  # noqa: E402


def _kernel(x_ptr, n, scale, BLOCK: tl.constexpr):
    pass


class _Compiled:
    function = 0xF00
    packed_metadata = (4, 1, 0)

    def __init__(self, log):
        self.log = log

    def run(self, *args):
        self.log.append(("fast", args))


class _RecordingJIT(JITFunction):
    """A real JITFunction (so the shortcut engages) whose launch only records."""

    def __init__(self, fn):
        super().__init__(fn)
        self.log = []

    def __getitem__(self, grid):
        def run(*args, **kwargs):
            self.log.append(("jit", grid, args, kwargs))
            return _Compiled(self.log)
        return run


@pytest.fixture
def kernel(monkeypatch):
    monkeypatch.setattr(launch, "ENABLED", True)
    monkeypatch.setattr(launch, "_cuda_device_index", lambda arg: 0 if isinstance(arg, torch.Tensor) else None)
    monkeypatch.setattr(launch, "_current_device", lambda: 0)
    monkeypatch.setattr(launch, "_current_raw_stream", lambda device: 77)
    jit = _RecordingJIT(_kernel)
    return jit, launch.FastKernel(jit)


def _paths(jit):
    return [entry[0] for entry in jit.log]


def test_second_call_of_a_shape_goes_straight_to_the_launcher(kernel):
    jit, fast = kernel
    x = torch.zeros(64)
    fast[(3, 2)](x, 40, 0.5, BLOCK=32, num_warps=4)
    fast[(3, 2)](x, 40, 0.5, BLOCK=32, num_warps=4)
    assert _paths(jit) == ["jit", "fast"]
    assert jit.log[1][1] == (3, 2, 1, 77, 0xF00, (4, 1, 0), None, None, None, x, 40, 0.5, 32)
    assert fast.cached_variants() == 1


@pytest.mark.parametrize("first, second", [
    ((torch.zeros(64), 40, 0.5, 32), (torch.zeros(64), 40, 0.5, 64)),       # another constexpr
    ((torch.zeros(64), 40, 0.5, 32), (torch.zeros(65)[1:], 40, 0.5, 32)),   # a pointer off 16-byte alignment
    ((torch.zeros(64), 40, 0.5, 32), (torch.zeros(64, dtype=torch.float16), 40, 0.5, 32)),  # a dtype
    ((torch.zeros(64), 40, 0.5, 32), (torch.zeros(64), 1, 0.5, 32)),        # an int of 1 becomes a constant
    ((torch.zeros(64), 48, 0.5, 32), (torch.zeros(64), 41, 0.5, 32)),       # divisibility by 16 changes
    ((torch.zeros(64), 40, 0.5, 32), (torch.zeros(64), 2 ** 40, 0.5, 32)),  # 64-bit integers
])
def test_each_specialisation_compiles_its_own_kernel(kernel, first, second):
    jit, fast = kernel
    for args in (first, second, second):
        fast[(1,)](*args[:3], BLOCK=args[3])
    assert _paths(jit) == ["jit", "jit", "fast"]


def test_values_triton_does_not_specialise_on_share_a_kernel(kernel):
    jit, fast = kernel
    x = torch.zeros(64)
    fast[(1,)](x, 48, 0.5, BLOCK=32)
    fast[(1,)](torch.zeros(128), 96, 3.0, BLOCK=32)  # both ints multiples of 16, any float, aligned
    assert _paths(jit) == ["jit", "fast"]


def test_launch_options_are_part_of_the_key(kernel):
    jit, fast = kernel
    x = torch.zeros(64)
    fast[(1,)](x, 40, 0.5, BLOCK=32, num_warps=4)
    fast[(1,)](x, 40, 0.5, BLOCK=32, num_warps=8)
    assert _paths(jit) == ["jit", "jit"]


def test_attached_launch_hooks_keep_tritons_path(kernel):
    jit, fast = kernel
    x = torch.zeros(64)

    def hook(metadata):
        return None

    triton.knobs.runtime.launch_enter_hook.add(hook)
    try:
        for _ in range(3):
            fast[(1,)](x, 40, 0.5, BLOCK=32)
    finally:
        triton.knobs.runtime.launch_enter_hook.remove(hook)
    for _ in range(2):
        fast[(1,)](x, 40, 0.5, BLOCK=32)
    assert _paths(jit) == ["jit"] * 4 + ["fast"]


def test_missing_arguments_and_the_off_switch_keep_tritons_path(kernel, monkeypatch):
    jit, fast = kernel
    x = torch.zeros(64)
    for _ in range(2):
        fast[(1,)](x, 40, 0.5)  # BLOCK missing: Triton reports it
    assert _paths(jit) == ["jit", "jit"]
    monkeypatch.setattr(launch, "ENABLED", False)
    for _ in range(2):
        fast[(1,)](x, 40, 0.5, BLOCK=32)
    assert _paths(jit) == ["jit"] * 4 and fast.cached_variants() == 0


def test_interpreted_kernels_are_passed_through():
    # conftest runs the suite under TRITON_INTERPRET=1 off the GPU
    from seqguard.runtime.ops.decode_attention import _DECODE
    if torch.cuda.is_available():
        pytest.skip("kernels are compiled here")
    if launch.fast_launch_tested(triton.__version__):
        assert isinstance(_DECODE, launch.FastKernel) and not _DECODE._jit
    else:
        assert not isinstance(_DECODE, launch.FastKernel)


def test_only_tested_triton_releases_get_the_shortcut(monkeypatch, caplog):
    """FastKernel reads Triton internals: an untested release launches through
    `kernel[grid]` itself (one debug note for the whole process), a tested one through
    FastKernel, whatever triton is installed here."""
    jit = _RecordingJIT(_kernel)
    monkeypatch.setattr(launch, "_untested_release_noted", False)
    caplog.set_level("DEBUG", logger="seqguard.runtime")
    for version in ("3.6.0", "3.9.1", "3.6.1+git4f2b9a0"):
        monkeypatch.setattr(triton, "__version__", version)
        assert isinstance(launch.launcher_for(jit), launch.FastKernel), version
    assert caplog.records == []
    for version in ("3.7.0", "3.10.0", "4.0.0", "3.5.1"):
        monkeypatch.setattr(triton, "__version__", version)
        assert launch.launcher_for(jit) is jit, version
    notes = [r for r in caplog.records if r.name == "seqguard.runtime"]
    assert len(notes) == 1 and notes[0].levelname == "DEBUG" and "Triton 3.7.0" in notes[0].getMessage()
    jit.log.clear()
    launch.launcher_for(jit)[(2,)](torch.zeros(4), 3, 0.5, BLOCK=16)  # the plain launch is Triton's own
    assert _paths(jit) == ["jit"] and jit.log[0][1] == (2,)


def _one_program(x):
    pass


def test_cpu_tensors_for_a_compiled_kernel_are_one_clear_error():
    """Without the interpreter, Triton fails on CPU tensors deep inside ("0 active
    drivers"); the public launchers say what to do instead."""
    from triton.runtime.jit import JITFunction

    from seqguard.runtime.ops.launch import interpreter_required

    compiled = JITFunction(_one_program)  # what `triton.jit` gives outside the interpreter
    error = interpreter_required(compiled, -1)
    assert isinstance(error, RuntimeError) and "set TRITON_INTERPRET=1" in str(error)
    assert interpreter_required(compiled, 0) is None        # a CUDA tensor
    assert interpreter_required(_one_program, -1) is None   # an interpreted kernel runs CPU tensors
