"""The overlapped speculative serving loop and `seqguard bench` (CPU: Triton interpreter)."""

import dataclasses
import json
import re

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from seqguard.cli import main
from seqguard.runtime import fallback
from seqguard.bench.runner import PRESETS, run_bench, run_mode
from seqguard.bench.sentinel import SyncDetectedError, SyncSentinel

TINY = PRESETS["tiny"]
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def report():
    return run_bench(TINY, CPU)


@pytest.mark.interpreter
def test_both_modes_produce_identical_tokens(report):
    assert report["identical_tokens"] is True
    mirror, decided = report["runs"]
    assert (mirror["mode"], mirror["needs_cpu_seq_lens"]) == ("mirror", True)
    assert (decided["mode"], decided["needs_cpu_seq_lens"]) == ("decided", False)


@pytest.mark.interpreter
def test_the_decision_turns_the_host_pulls_off(report):
    mirror, decided = report["runs"]
    assert decided["host_pulls_per_step"] == 0.0
    assert mirror["host_pulls_per_step"] > 0.5
    assert decided["sentinel_checked_steps"] > 0
    assert "every backend opts out" in report["decision"]


@pytest.mark.interpreter
def test_every_request_finishes_at_its_own_length_through_filter_and_merge():
    result = run_mode(TINY, "decided", CPU)
    arrivals = [r for reqs in TINY.arrivals().values() for r in reqs]
    assert len(result.outputs) == len(arrivals) == TINY.requests > TINY.max_running  # later ones were merged in
    expected = [r.max_new_tokens for r in sorted(arrivals, key=lambda r: r.rid)]
    assert [len(o) for o in result.outputs] == expected
    assert len(set(expected)) > 1  # they finish at different lengths


@pytest.mark.interpreter
def test_accepted_tokens_vary_per_request():
    result = run_mode(dataclasses.replace(TINY, requests=3), "decided", CPU)
    assert result.tokens > result.steps  # more than one token per step on average: drafts were accepted


def test_sentinel_names_the_step_that_pulled_lengths_to_the_host():
    sentinel = SyncSentinel(enabled=True, device=CPU)
    with pytest.raises(SyncDetectedError, match="decode step 7: expected no host pull"):
        with sentinel.step(7):
            fallback.host_seq_lens(None, torch.tensor([3, 4]))
    with sentinel.step(8):
        pass
    assert sentinel.checked_steps == 1


@pytest.mark.interpreter
def test_bench_cli_json(runner):
    result = runner.invoke(main, ["bench", "--device", "cpu", "--json", "--requests", "3", "--repeats", "1"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert isinstance(report["identical_tokens"], bool)
    for run in report["runs"]:
        assert {"mode", "needs_cpu_seq_lens", "host_pulls_per_step", "step_ms_median", "tokens_per_s"} <= set(run)
        assert isinstance(run["host_pulls_per_step"], float)
        assert 0.0 < run["host_pre_launch_ms"] <= run["cpu_only_ms"]  # the pre-launch part of the host time


@pytest.mark.interpreter
@pytest.mark.slow
def test_bench_repeats_report_each_speedup_and_show_the_median_one():
    report = run_bench(dataclasses.replace(TINY, requests=2, max_steps=4, warmup_steps=1), CPU, repeats=3)
    speedups = [r["speedup"] for r in report["repeats"]]
    assert len(speedups) == 3 and report["speedup"] == sorted(speedups)[1]
    assert report["identical_tokens"] and all(r["identical_tokens"] for r in report["repeats"])


def test_bench_refuses_a_workload_that_does_not_fit_with_the_estimate(runner, monkeypatch):
    """gpu-bound on this CPU was killed by the kernel at 21 GB resident; now it says why first."""
    from seqguard.bench import footprint
    monkeypatch.setattr(footprint, "available_bytes", lambda device: 24 << 30)
    result = runner.invoke(main, ["bench", "--preset", "gpu-bound", "--device", "cpu", "--steps", "2"])
    assert result.exit_code == 2 and result.stdout == ""
    assert re.fullmatch(r"error: memory: expected the workload to fit in the 24\.0 GiB free on the host "
                        r"\(MemAvailable\), got an estimate of at least 1\d\d\.\d GiB \(GiB per rank: KV caches 52\.9, "
                        r"weights [\d.]+, request table [\d.]+, first prefill [\d.]+, while building [\d.]+\); use a "
                        r"smaller preset, fewer --batch/--requests, or a device with more memory\n", result.stderr)


def test_a_refusal_for_ranks_sharing_the_host_says_the_total_then_one_rank_times_the_ranks(monkeypatch):
    """`at least 120.1 GiB x 2 ranks (GiB per rank: ... 60.1 in all)` read as 240 GiB."""
    import torch

    from seqguard.bench import footprint
    monkeypatch.setattr(footprint, "available_bytes", lambda device: 1 << 30)
    workload = PRESETS["gpu-bound"]
    one = footprint.estimate(workload, 2).total / footprint.GIB
    with pytest.raises(footprint.WontFitError) as refused:
        footprint.check_fits(workload, torch.device("cpu"), tp_size=2, ranks_sharing_device=2)
    said = re.search(r"at least ([\d.]+) GiB \(([\d.]+) GiB x 2 ranks\) \(GiB per rank: ", str(refused.value))
    assert said is not None, str(refused.value)
    assert float(said.group(2)) == pytest.approx(one, abs=0.05)
    assert float(said.group(1)) == pytest.approx(2 * one, abs=0.1)


def test_footprint_counts_exactly_what_the_worker_keeps():
    from seqguard.bench.runner import pool_rows
    from seqguard.bench.footprint import estimate
    from seqguard.bench.worker import SpecWorker
    workload = dataclasses.replace(TINY, model=dataclasses.replace(TINY.model, max_context_len=256, num_kv_heads=2))
    for tp_size in (1, 2):
        from seqguard.bench.tp import TensorParallel
        m = workload.model
        worker = SpecWorker(m, workload.draft_layers, workload.draft_steps, workload.max_running,
                            pool_rows(workload), "cpu", seed=0, tp=TensorParallel(rank=0, size=tp_size))
        kv = sum(t.nbytes for pool in (worker.target_kv, worker.draft_kv) for t in pool.k_buffer + pool.v_buffer)
        weights = sum(t.nbytes for t in (worker.target.embed, worker.target.positions)) + sum(
            w.nbytes for layer in worker.target.layers for w in (layer.qkv, layer.o, layer.up, layer.down))
        parts = estimate(workload, tp_size).parts
        assert (parts["KV caches"], parts["weights"], parts["request table"]) == (
            kv, weights, worker.req_pool.req_to_token.nbytes)


def test_bench_preset_choices_are_the_presets():
    option = next(p for p in main.commands["bench"].params if p.name == "preset")
    assert sorted(option.type.choices) == sorted(PRESETS)  # the CLI lists them without importing torch


@pytest.mark.interpreter
@pytest.mark.slow
def test_bench_cli_table_and_bad_options(runner):
    table = runner.invoke(main, ["bench", "--device", "cpu", "--requests", "2", "--repeats", "2"])
    assert table.exit_code == 0 and "| decided | False |" in table.stdout and "identical tokens: True" in table.stdout
    # the decision line names each backend once (the target and draft-extend backends share a class)
    assert "every backend opts out: TritonAttnBackend, TritonMultiStepDraftBackend)" in table.stdout
    # on the CPU: the spread over the repeats, and a word that the timings are noise
    assert re.search(r"speedup \(mean step, mirror / decided\): [0-9.]+x \(the median of 2 repeats: min [0-9.]+x, "
                     r"max [0-9.]+x; each [0-9.]+x, [0-9.]+x\)", table.stdout)
    assert "note: on the CPU the kernels run in Triton's interpreter" in table.stdout and "timings are noisy" in \
        table.stdout
    bad = runner.invoke(main, ["bench", "--device", "cpu", "--heads", "3", "--kv-heads", "2"])
    assert bad.exit_code == 2 and "num_q_heads: expected a multiple" in bad.stderr


@pytest.mark.interpreter
def test_step_trace_is_opt_in_and_splits_each_timed_steps_host_time(report):
    assert all("step_trace" not in run for run in report["runs"])
    traced = run_bench(dataclasses.replace(TINY, requests=3), CPU, with_trace=True)
    for run in traced["runs"]:
        trace = run["step_trace"]
        assert len(trace) == run["steps"]
        assert all(pre > 0.0 and post >= 0.0 and prefill == decode == 0.0 for pre, post, prefill, decode in trace)
        assert sum(pre + post for pre, post, _, _ in trace) / len(trace) == pytest.approx(run["cpu_only_ms"])


@pytest.mark.gpu
def test_gpu_decided_run_has_zero_syncs_under_the_sentinel():
    workload = dataclasses.replace(TINY, model=dataclasses.replace(TINY.model, dtype=torch.float16), max_steps=30)
    report = run_bench(workload, torch.device("cuda"), with_trace=True)
    assert report["identical_tokens"]
    decided = report["runs"][1]
    assert decided["host_pulls_per_step"] == 0.0 and decided["sentinel_checked_steps"] >= 5
    trace = decided["step_trace"]
    assert any(prefill > 0.0 for _, _, prefill, _ in trace)  # requests arrive while others decode
    assert sum(decode > 0.0 for _, _, _, decode in trace) > len(trace) / 2
    assert decided["gpu_only_ms"] > 0.0


def test_timed_steps_hold_the_device_work_of_the_step_before_them_not_of_the_last():
    from seqguard.bench.runner import timed_window
    from seqguard.bench.scheduler import StepRecord
    records = [StepRecord(wall_s=i, host_s=0.0) for i in range(6)]
    timed, waited_for = timed_window(records, 2)
    assert [r.wall_s for r in timed] == [2, 3, 4, 5]
    assert [r.wall_s for r in waited_for] == [1, 2, 3, 4]
    assert timed_window(records, 0) == (records, records)
    assert timed_window(records[:2], 5) == (records[:2], records[:2])  # too short to warm up: all of it


def test_capture_sizes_cover_every_batch_up_to_the_maximum():
    from seqguard.bench.graphs import capture_sizes
    assert capture_sizes(1) == [1]
    assert capture_sizes(8) == [1, 2, 4, 8]
    assert capture_sizes(30) == [1, 2, 4, 8, 16, 24, 30]
    sizes = capture_sizes(96)
    assert sizes == sorted(set(sizes)) and sizes[-1] == 96
    assert all(any(s >= bs for s in sizes) for bs in range(1, 97))


@pytest.mark.interpreter
def test_bench_cli_takes_the_graph_switch_and_reports_it(runner):
    result = runner.invoke(main, ["bench", "--device", "cpu", "--json", "--requests", "2", "--no-cuda-graphs",
                                  "--repeats", "1"])
    assert result.exit_code == 0, result.output
    assert [run["cuda_graphs"] for run in json.loads(result.stdout)["runs"]] == [False, False]


def _admitted_batch(worker, count):
    from seqguard.bench.batch import Req, ScheduleBatch, SpecInfo
    reqs = [Req(rid=i, origin_input_ids=[(7 * i + j) % 100 for j in range(4 + 3 * i)], max_new_tokens=8)
            for i in range(count)]
    worker.admit(reqs)
    first = worker.prefill(reqs)
    batch = ScheduleBatch.init_new(reqs, worker.device, with_mirror=False)
    batch.spec_info = SpecInfo(future_indices=batch.req_pool_indices.clone(), num_draft_tokens=worker.draft_steps + 1,
                               last_tokens=first)
    return batch


@pytest.mark.gpu
@pytest.mark.parametrize("count", [4, 3])
def test_gpu_graph_replay_matches_the_eager_step(count):
    """At a captured size the replay is the eager step, bit for bit; below it the
    padded rows leave the real rows' tokens alone."""
    from seqguard.bench.worker import SpecWorker
    config = dataclasses.replace(TINY.model, dtype=torch.float16)
    worker = SpecWorker(config, 1, 2, max_running=4, pool_rows=12, device="cuda", seed=0)
    batch = _admitted_batch(worker, count)
    last = batch.spec_info.last_tokens.clone()
    eager = worker.eager_decode_step(batch)
    eager_last = batch.spec_info.last_tokens
    worker.use_cuda_graphs(4)
    batch.spec_info.last_tokens = last
    replayed = worker.decode_step(batch)
    for a, b in ((eager.tokens, replayed.tokens), (eager.accepted, replayed.accepted),
                 (eager.new_seq_lens, replayed.new_seq_lens), (eager_last, batch.spec_info.last_tokens)):
        assert a.shape == b.shape
        if count == 4:
            assert torch.equal(a, b)
    if count == 3:  # another matmul shape: compare the decisions, which random weights keep well apart
        assert (eager.tokens == replayed.tokens).float().mean() > 0.9


def test_step_record_sums_device_time_by_kind():
    from seqguard.bench.scheduler import StepRecord

    class Event:
        def __init__(self, t):
            self.t = t

        def elapsed_time(self, end):
            return end.t - self.t

    record = StepRecord(0.01, 0.008, 0.006, gpu_spans=[("prefill", Event(0.0), Event(1.5)),
                                                        ("decode", Event(2.0), Event(5.0))])
    assert (record.gpu_ms(), record.gpu_ms("prefill"), record.gpu_ms("decode")) == (4.5, 1.5, 3.0)
    assert StepRecord(0.01, 0.01).gpu_ms() == 0


def test_a_request_too_long_for_the_context_is_refused_without_taking_a_row():
    from seqguard.bench.batch import Req
    from seqguard.bench.worker import SpecWorker
    worker = SpecWorker(TINY.model, 1, 2, max_running=2, pool_rows=4, device="cpu", seed=0)
    rows, slots = worker.req_pool.available, worker.target_kv.available
    too_long = Req(rid=9, origin_input_ids=[1] * TINY.model.max_context_len, max_new_tokens=4)
    with pytest.raises(ValueError, match="request 9: expected at most 128 tokens"):
        worker.admit([too_long])
    assert (worker.req_pool.available, worker.target_kv.available) == (rows, slots)
