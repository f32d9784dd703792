"""FutureMap: needed / not needed / CPU device / debug mode, and on a GPU no sync."""

import types

import pytest

torch = pytest.importorskip("torch")

from seqguard.bench.batch import SpecInfo
from seqguard.runtime import FutureMap, StalePublishError


def make_batch(rows, device="cpu"):
    rows = torch.tensor(rows, dtype=torch.int64, device=device)
    return types.SimpleNamespace(spec_info=SpecInfo(future_indices=rows), req_pool_indices=rows.clone(),
                                 seq_lens=None, seq_lens_cpu="stale", seq_lens_sum="stale")


def test_needed_on_cpu_sets_the_mirror():
    fm = FutureMap("cpu", 8, needs_cpu_seq_lens=True)
    batch = make_batch([5, 1, 3])
    fm.publish(batch.spec_info.future_indices, torch.tensor([11, 7, 9]))
    fm.resolve_seq_lens_cpu(batch)
    assert batch.seq_lens.tolist() == [11, 7, 9]
    assert batch.seq_lens_cpu.tolist() == [11, 7, 9] and batch.seq_lens_sum == 27
    assert fm.host_pulls == 1


def test_not_needed_clears_the_mirror_and_allocates_nothing_for_the_host():
    fm = FutureMap("cpu", 8, needs_cpu_seq_lens=False)
    assert not fm.has_host_buffers
    batch = make_batch([2, 0])
    fm.publish(batch.spec_info.future_indices, torch.tensor([4, 6], dtype=torch.int32))
    fm.resolve_seq_lens_cpu(batch)
    assert batch.seq_lens.tolist() == [4, 6]
    assert batch.seq_lens_cpu is None and batch.seq_lens_sum is None
    assert fm.host_pulls == 0


def test_resolve_only_reads_future_indices_and_req_pool_indices():
    fm = FutureMap("cpu", 4, needs_cpu_seq_lens=True)
    batch = make_batch([3])
    fm.publish(batch.spec_info.future_indices, torch.tensor([42]))
    fm.resolve_seq_lens_cpu(batch)  # a bare namespace: nothing else is required
    assert batch.seq_lens_sum == 42


def test_debug_mode_catches_a_resolve_without_a_fresh_publish():
    fm = FutureMap("cpu", 8, needs_cpu_seq_lens=False, debug=True)
    batch = make_batch([1, 2])
    with pytest.raises(StalePublishError, match="expected a publish since the last resolve"):
        fm.resolve_seq_lens_cpu(batch)
    fm.publish(batch.spec_info.future_indices, torch.tensor([3, 4]))
    fm.resolve_seq_lens_cpu(batch)
    with pytest.raises(StalePublishError):
        fm.resolve_seq_lens_cpu(batch)
    # a publish that misses a row: that row is still poisoned from the last resolve
    fm.publish(torch.tensor([1]), torch.tensor([9]))
    with pytest.raises(StalePublishError, match="consumed or never-published row"):
        fm.resolve_seq_lens_cpu(batch)


def test_debug_mode_from_the_environment(monkeypatch):
    monkeypatch.setenv("SEQGUARD_FUTURE_MAP_DEBUG", "1")
    assert FutureMap("cpu", 2).debug is True


@pytest.mark.parametrize("call, error, needle", [
    (lambda fm: fm.publish(torch.tensor([0.5]), torch.tensor([1])), TypeError, "future_indices: expected dtype"),
    (lambda fm: fm.publish(torch.tensor([0, 1]), torch.tensor([1])), ValueError, "new_seq_lens: expected 2 elements"),
    (lambda fm: fm.publish([0], torch.tensor([1])), TypeError, "expected a torch.Tensor, got list"),
])
def test_bad_arguments_are_clear_errors(call, error, needle):
    with pytest.raises(error, match=needle):
        call(FutureMap("cpu", 4))


def test_bad_construction():
    with pytest.raises(ValueError, match="req_pool_size: expected a positive"):
        FutureMap("cpu", 0)
    with pytest.raises(TypeError, match="dtype: expected"):
        FutureMap("cpu", 4, dtype=torch.float32)


@pytest.mark.gpu
def test_gpu_not_needed_never_syncs_over_many_steps():
    fm = FutureMap("cuda", 1024, needs_cpu_seq_lens=False)
    assert not fm.has_host_buffers
    rows = torch.randperm(1024, device="cuda")[:256]
    batch = make_batch([0], "cuda")
    batch.spec_info.future_indices, batch.req_pool_indices = rows, rows.clone()
    lens = torch.randint(1, 4096, (256,), device="cuda")
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(200):
            lens = lens + torch.randint(1, 4, (256,), device="cuda")
            fm.publish(rows, lens)
            fm.resolve_seq_lens_cpu(batch)
            assert batch.seq_lens_cpu is None
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert torch.equal(batch.seq_lens, lens)
    assert fm.host_pulls == 0


@pytest.mark.gpu
def test_gpu_needed_copies_right_without_waiting_for_the_scheduling_stream():
    fm = FutureMap("cuda", 64, needs_cpu_seq_lens=True)
    rows = torch.tensor([7, 3, 60], device="cuda")
    batch = make_batch([0], "cuda")
    batch.spec_info.future_indices, batch.req_pool_indices = rows, rows.clone()
    # A first step warms the caching allocator: a cudaMalloc on first use would
    # synchronise the device by itself, whatever the FutureMap does.
    fm.publish(rows, torch.tensor([1, 2, 3], device="cuda"))
    fm.resolve_seq_lens_cpu(batch)
    torch.cuda.synchronize()
    fm.publish(rows, torch.tensor([100, 200, 300], device="cuda"))
    torch.cuda._sleep(2_000_000_000)  # ~1 s of work queued on the scheduling stream after the publish
    fm.resolve_seq_lens_cpu(batch)
    still_busy = not torch.cuda.current_stream().query()
    assert batch.seq_lens_cpu.tolist() == [100, 200, 300] and batch.seq_lens_sum == 600
    assert still_busy, "resolve waited for the scheduling stream"
    torch.cuda.synchronize()
    assert batch.seq_lens.tolist() == [100, 200, 300]
