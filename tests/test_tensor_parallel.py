"""Tensor parallelism (CPU, gloo, real processes): every rank reaches the same
decision, one rank that needs the mirror turns it on everywhere, a failing or absent
rank stops every rank in bounded time with one clear message, and the sharded model
computes the tokens of the single-rank one."""

import dataclasses
import datetime
import json
import multiprocessing
import time

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from seqguard.cli import main
from seqguard.runtime import explain_needs_cpu_seq_lens
from seqguard.bench.batch import ServerArgs
from seqguard.runtime.decision import RankDecisionError
from seqguard.bench.runner import PRESETS, MirrorReadingBackend, UnreadableFlagBackend
from seqguard.bench.launch import PEER_FAILED, LaunchResult, RankExit
from seqguard.bench.tp import TensorParallel, TensorParallelError, check_divisible

ARGS = ServerArgs(speculative_algorithm="EAGLE")
# --kv-heads 2: the tiny preset has one KV head, which two ranks cannot split.
TP2 = ["bench", "--device", "cpu", "--json", "--repeats", "1", "--requests", "3", "--steps", "6", "--kv-heads", "2",
       "--tp", "2"]


class OptsOut:
    needs_cpu_seq_lens = False


class Other:
    needs_cpu_seq_lens = False


def _rank(rank: int, init_file: str, backends, out, skip_decision: bool = False, timeout_s: float = 3.0,
          across_ranks: bool = True) -> None:
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=timeout_s))
    started = time.monotonic()
    if skip_decision:
        time.sleep(timeout_s * 3)  # never joins the reduce
        out.put((rank, "skipped", None, None))
        return
    try:
        if across_ranks:
            decision = explain_needs_cpu_seq_lens(ARGS, backends[rank], across_ranks=True)
        elif rank == 0:
            decision = explain_needs_cpu_seq_lens(ARGS, backends[rank])  # alone: nothing to wait for
        else:
            out.put((rank, "did not decide", None, None))
            return
        out.put((rank, "ok", (decision.needs_cpu_seq_lens, decision.per_rank, decision.summary()),
                 time.monotonic() - started))
    except RankDecisionError as error:
        out.put((rank, "error", (str(error), error.caused_by_peer), time.monotonic() - started))


def _run_ranks(tmp_path, backends, skip_rank=None, wait_s=30, across_ranks=True):
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(r, str(tmp_path / "store"), backends, out, r == skip_rank),
                         kwargs={"across_ranks": across_ranks})
             for r in range(2)]
    for p in procs:
        p.start()
    try:
        expected = 2 if skip_rank is None else 1
        results = sorted(out.get(timeout=wait_s) for _ in range(expected))
    finally:
        for p in procs:
            p.join(timeout=1)
            if p.is_alive():
                p.kill()
                p.join()
    return {r[0]: r[1:] for r in results}


def test_ranks_with_different_backend_lists_reach_one_decision(tmp_path):
    results = _run_ranks(tmp_path, [[OptsOut(), Other()], [OptsOut(), None]])
    assert [results[r][0] for r in (0, 1)] == ["ok", "ok"]
    assert [results[r][1][:2] for r in (0, 1)] == [(False, (False, False))] * 2
    assert "every backend opts out: OptsOut, Other" in results[0][1][2]


def test_a_rank_deciding_alone_under_a_process_group_reduces_nothing(tmp_path):
    """Not asked to agree across ranks, the decision never joins a collective: rank 0
    decides alone (rank 1 never calls it) and returns its own answer at once."""
    results = _run_ranks(tmp_path, [[OptsOut(), MirrorReadingBackend()], [OptsOut()]], across_ranks=False)
    status, (needs, per_rank, summary), elapsed = results[0]
    assert status == "ok" and needs is True and per_rank == () and elapsed < 2.0
    assert results[1][0] == "did not decide"


def test_agreeing_across_ranks_needs_a_process_group():
    with pytest.raises(ValueError, match="across_ranks=True: expected torch.distributed to be initialised"):
        explain_needs_cpu_seq_lens(ARGS, [OptsOut()], across_ranks=True)


def test_one_rank_that_needs_the_mirror_turns_it_on_everywhere(tmp_path):
    results = _run_ranks(tmp_path, [[OptsOut()], [OptsOut(), MirrorReadingBackend()]])
    assert [results[r][1][:2] for r in (0, 1)] == [(True, (False, True))] * 2
    assert "another tensor-parallel rank needs it (rank 1)" in results[0][1][2]
    assert "MirrorReadingBackend needs it" in results[1][1][2]


def test_a_rank_failing_inside_the_decision_stops_every_rank_at_once(tmp_path):
    results = _run_ranks(tmp_path, [[OptsOut()], [OptsOut(), UnreadableFlagBackend()]])
    assert [results[r][0] for r in (0, 1)] == ["error", "error"]
    (own, own_peer), (peer, peer_peer) = results[1][1], results[0][1]
    assert own.startswith("rank 1: the needs_cpu_seq_lens decision failed: RuntimeError: injected fault")
    assert not own_peer
    assert peer.startswith("rank 0: rank(s) 1 failed during the needs_cpu_seq_lens decision") and peer_peer
    assert max(results[0][2], results[1][2]) < 2.0  # told through the reduce, not by the 3 s timeout


def test_a_rank_that_never_joins_the_reduce_ends_the_others_within_the_timeout(tmp_path):
    results = _run_ranks(tmp_path, [[OptsOut()], [OptsOut()]], skip_rank=1)
    status, (message, caused_by_peer), elapsed = results[0]
    assert status == "error" and caused_by_peer
    assert message.startswith("rank 0: the needs_cpu_seq_lens OR-reduce across 2 ranks did not complete (")
    assert "expected every rank to reach the decision at start-up" in message
    assert 2.5 < elapsed < 15  # the process group's 3 s timeout, not a hang


def test_shards_split_heads_and_mlp_and_refuse_what_does_not_divide():
    assert TensorParallel(rank=1, size=2).shard(8) == slice(4, 8)
    check_divisible(2, 32, 8, 11008)
    check_divisible(4, 32, 2, 11008)   # more ranks than KV heads: each head held by two ranks
    with pytest.raises(TensorParallelError) as error:
        check_divisible(4, 32, 3, 11008)
    assert str(error.value).startswith("num_kv_heads: expected a multiple or a divisor of --tp 4, got 3; choose")
    # rank r of 4 keeps KV head r // 2 of 2; its query heads 8r..8r+7 are all in that head's group
    assert [TensorParallel(rank=r, size=4).kv_shard(2) for r in range(4)] == [
        slice(0, 1), slice(0, 1), slice(1, 2), slice(1, 2)]
    assert [TensorParallel(rank=r, size=4).shard(32) for r in (0, 3)] == [slice(0, 8), slice(24, 32)]


def test_the_sharded_model_draws_the_single_rank_weights_and_keeps_its_slice():
    from seqguard.bench.model import TinyDecoder
    config = dataclasses.replace(PRESETS["tiny"].model, num_kv_heads=2)
    whole = TinyDecoder(config, "cpu", seed=3)
    halves = [TinyDecoder(config, "cpu", seed=3, tp=TensorParallel(rank=r, size=2)) for r in (0, 1)]
    d, q = config.head_dim, config.num_q_heads * config.head_dim
    for layer, (a, b) in zip(whole.layers, (zip(halves[0].layers, halves[1].layers))):
        assert torch.equal(torch.cat([a.o, b.o], 1), layer.o)
        assert torch.equal(torch.cat([a.up, b.up]), layer.up)
        assert torch.equal(torch.cat([a.down, b.down], 1), layer.down)
        assert torch.equal(torch.cat([a.qkv[: q // 2], b.qkv[: q // 2]]), layer.qkv[:q])  # the query heads
        assert a.qkv.shape[0] == layer.qkv.shape[0] // 2 and a.splits == (q // 2, d, d)
    assert torch.equal(halves[1].embed, whole.embed)  # embeddings and LM head stay whole


def test_launcher_names_the_rank_at_fault_even_when_a_peer_exits_first():
    result = LaunchResult("", "", [
        RankExit(0, 2, f"error: {PEER_FAILED}rank 0: rank(s) 1 failed during the decision", order=0),
        RankExit(1, 2, "error: rank 1: the decision failed: boom", order=1),
        RankExit(2, None, "", order=3)])
    assert not result.ok and result.exit_code == 2
    assert result.failure_message(3).splitlines() == [
        "error: --tp 3: rank 1 failed (exit code 2): rank 1: the decision failed: boom",
        f"  rank 0 (exit code 2): {PEER_FAILED}rank 0: rank(s) 1 failed during the decision",
        "  rank 2: stopped by the launcher after rank 1 failed"]


def test_launcher_leaves_disagreeing_tokens_to_the_report():
    result = LaunchResult("{}", "", [RankExit(0, 1, ""), RankExit(1, 1, "")])
    assert result.tokens_differ and result.exit_code == 1
    assert not LaunchResult("", "", [RankExit(0, 1, ""), RankExit(1, 2, "error: rank 1: x")]).tokens_differ


def test_launcher_names_a_rank_that_never_exited_as_the_one_that_hung():
    result = LaunchResult("", "", [
        RankExit(0, 2, f"error: {PEER_FAILED}rank 0: the OR-reduce did not complete", order=0),
        RankExit(1, None, "", order=2)])
    assert result.failure_message(2).splitlines() == [
        "error: --tp 2: rank 1 never reached a collective that the other ranks waited --tp-timeout for (hung or too "
        "slow); stopped by the launcher",
        f"  rank 0 (exit code 2): {PEER_FAILED}rank 0: the OR-reduce did not complete"]


def test_the_ranks_run_the_command_the_launcher_was_given(runner, monkeypatch):
    """The launcher gets this bench command line rebuilt from its parsed options: parsed
    again it gives the same options (the device resolved)."""
    import click

    from seqguard.bench import launch

    handed = []

    def fake_spawn(argv, tp):
        handed.append((list(argv), tp))
        return launch.LaunchResult("rank 0's table\n", "", [launch.RankExit(0, 0, ""), launch.RankExit(1, 0, "")])

    monkeypatch.setattr(launch, "spawn", fake_spawn)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    args = ["--tp", "2", "--kv-heads", "2", "--no-cuda-graphs", "--json", "--prep-work-ms", "1.5",
            "--force-mirror-rank", "1"]
    result = runner.invoke(main, ["bench", *args])
    assert (result.exit_code, result.stdout) == (0, "rank 0's table\n"), result.output
    [(argv, tp)] = handed
    assert tp == 2 and argv[:3] == ["bench", "--device", "cpu"] and "--device" not in argv[3:]
    command = main.commands["bench"]
    with click.Context(command) as ctx:
        command.parse_args(ctx, list(args))
    with click.Context(command) as again:
        command.parse_args(again, argv[1:])
    assert again.params == dict(ctx.params, device="cpu")


def test_a_failed_rank_is_named_once_and_the_launch_exits_with_its_code(runner, monkeypatch):
    from seqguard.bench import launch

    monkeypatch.setattr(launch, "spawn", lambda argv, tp: launch.LaunchResult(
        "", "", [launch.RankExit(0, 2, "error: " + launch.PEER_FAILED + "gloo timed out", 1),
                 launch.RankExit(1, 2, "error: rank 1: boom", 0)]))
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    result = runner.invoke(main, ["bench", "--device", "cpu", "--tp", "2"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.splitlines()[0] == "error: --tp 2: rank 1 failed (exit code 2): rank 1: boom"


def test_bench_tp_refuses_heads_it_cannot_split(runner):
    result = runner.invoke(main, ["bench", "--device", "cpu", "--tp", "3"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("error: num_q_heads: expected a multiple of --tp 3, got 2; intermediate_size: "
                                    "expected a multiple of --tp 3, got 64; choose a --tp")
    # three ranks can share one KV head; a KV head count that neither divides nor is a
    # multiple of --tp cannot be shared evenly
    odd = runner.invoke(main, ["bench", "--device", "cpu", "--tp", "2", "--heads", "6", "--kv-heads", "3"])
    assert odd.exit_code == 2 and "num_kv_heads: expected a multiple or a divisor of --tp 2, got 3" in odd.stderr


def test_a_replicated_kv_head_is_the_single_rank_head_on_every_rank():
    """The default model has one KV head: under --tp 2 both ranks keep it whole."""
    from seqguard.bench.model import TinyDecoder
    config = PRESETS["tiny"].model
    assert config.num_kv_heads == 1
    whole = TinyDecoder(config, "cpu", seed=3)
    halves = [TinyDecoder(config, "cpu", seed=3, tp=TensorParallel(rank=r, size=2)) for r in (0, 1)]
    d, q = config.head_dim, config.num_q_heads * config.head_dim
    for layer, a, b in zip(whole.layers, halves[0].layers, halves[1].layers):
        for half in (a, b):
            assert half.splits == (q // 2, d, d) and torch.equal(half.qkv[q // 2:], layer.qkv[q:])
        assert torch.equal(torch.cat([a.qkv[: q // 2], b.qkv[: q // 2]]), layer.qkv[:q])
    assert halves[0].local_kv_heads == halves[1].local_kv_heads == 1


def test_bench_under_a_launch_of_another_size_says_so(runner, monkeypatch):
    for name, value in (("RANK", "0"), ("WORLD_SIZE", "3"), ("LOCAL_RANK", "0"), ("MASTER_ADDR", "127.0.0.1"),
                        ("MASTER_PORT", "1")):
        monkeypatch.setenv(name, value)
    monkeypatch.setattr("os._exit", lambda code: (_ for _ in ()).throw(SystemExit(code)))
    result = runner.invoke(main, ["bench", "--device", "cpu", "--tp", "2", "--kv-heads", "2", "--repeats", "1"])
    assert result.exit_code == 2 and result.stdout == ""
    assert "--tp: expected the launch's WORLD_SIZE (3), got 2" in result.stderr


@pytest.fixture(scope="module")
def tp1_outputs():
    """The single-rank tokens of TP2's workload (the decided run; the bench checks
    that the mirror run matches it)."""
    from seqguard.bench.runner import run_mode
    workload = dataclasses.replace(PRESETS["tiny"], requests=3, max_steps=6,
                                   model=dataclasses.replace(PRESETS["tiny"].model, num_kv_heads=2))
    return run_mode(workload, "decided", torch.device("cpu")).outputs


@pytest.mark.interpreter
@pytest.mark.slow
def test_bench_tp2_gives_the_tp1_tokens_and_reports_every_rank(runner, tmp_path, tp1_outputs):
    from seqguard.bench.runner import tokens_digest
    result = runner.invoke(main, TP2 + ["--tokens-out", str(tmp_path / "two.json")])
    assert result.exit_code == 0, result.stderr
    two = json.loads(result.stdout)
    assert two["tp"] == 2
    assert json.loads((tmp_path / "two.json").read_text()) == tp1_outputs
    assert two["tokens_sha256"] == tokens_digest(tp1_outputs) and two["identical_tokens"] and two["ranks_agree"]
    assert two["decision_per_rank"] == [False, False]
    for rank in two["ranks"]:
        assert rank["host_pulls_per_step"]["decided"] == 0.0 and rank["host_pulls_per_step"]["mirror"] > 0.5
        assert rank["sentinel_checked_steps"] > 0 and rank["speedup"] > 0 and rank["overlap_ratio"] > 0


@pytest.mark.interpreter
@pytest.mark.slow
def test_bench_tp2_on_the_default_model_replicates_its_kv_head_with_the_tp1_tokens(runner):
    from seqguard.bench.runner import run_mode, tokens_digest
    workload = dataclasses.replace(PRESETS["tiny"], requests=3, max_steps=6)
    single = run_mode(workload, "decided", torch.device("cpu")).outputs
    result = runner.invoke(main, ["bench", "--device", "cpu", "--json", "--repeats", "1", "--requests", "3",
                                  "--steps", "6", "--tp", "2"])
    assert result.exit_code == 0, result.stderr
    two = json.loads(result.stdout)
    assert two["tokens_sha256"] == tokens_digest(single) and two["identical_tokens"] and two["ranks_agree"]


@pytest.mark.interpreter
@pytest.mark.slow
def test_bench_force_mirror_rank_makes_every_rank_copy_with_the_same_tokens(runner, tp1_outputs):
    from seqguard.bench.runner import tokens_digest
    result = runner.invoke(main, TP2 + ["--force-mirror-rank", "1"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["decision_per_rank"] == [False, True]
    assert report["decision"] == "host seq_lens mirror: on (another tensor-parallel rank needs it (rank 1))"
    assert all(run["needs_cpu_seq_lens"] for run in report["runs"])
    assert all(rank["needs_cpu_seq_lens"] and rank["host_pulls_per_step"]["decided"] > 0.5 for rank in report["ranks"])
    assert report["identical_tokens"] and report["ranks_agree"]
    assert report["tokens_sha256"] == tokens_digest(tp1_outputs)


@pytest.mark.slow
@pytest.mark.parametrize("fault, first_line", [
    ("1:raise", "error: --tp 2: rank 1 failed (exit code 2): rank 1: the needs_cpu_seq_lens decision failed: "
                "RuntimeError: injected fault"),
    ("1:hang", "error: --tp 2: rank 1 never reached a collective that the other ranks waited --tp-timeout for"),
])
def test_bench_tp_fault_ends_every_rank_with_one_message(runner, fault, first_line):
    started = time.monotonic()
    result = runner.invoke(main, TP2 + ["--tp-timeout", "4", "--inject-fault", fault])
    elapsed = time.monotonic() - started
    assert result.exit_code == 2 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0].startswith(first_line), result.stderr
    assert len(lines) == 2 and lines[1].startswith("  rank ")  # and one line for the other rank
    assert "Traceback" not in result.stderr
    if fault == "1:hang":
        assert lines[1].startswith(f"  rank 0 (exit code 2): {PEER_FAILED}rank 0: the needs_cpu_seq_lens OR-reduce "
                                   f"across 2 ranks did not complete (")
    assert elapsed < 50


@pytest.mark.gpu
def test_gpu_tp2_with_cuda_graphs_gives_the_tp1_tokens_without_a_sync(runner, tmp_path):
    """Two GPUs, NCCL, all-reduces captured in the decode graphs: the decided run has no
    sync on either rank (the sentinel checked every step) and both runs agree."""
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices")
    args = ["bench", "--device", "cuda", "--preset", "tiny", "--json", "--kv-heads", "2", "--requests", "6",
            "--batch", "4", "--tp-timeout", "120"]
    one = runner.invoke(main, args + ["--tokens-out", str(tmp_path / "one.json")])
    two = runner.invoke(main, args + ["--tp", "2", "--tokens-out", str(tmp_path / "two.json")])
    assert one.exit_code == 0 and two.exit_code == 0, (one.stderr, two.stderr)
    report = json.loads(two.stdout)
    assert report["identical_tokens"] and report["ranks_agree"] and report["runs"][1]["cuda_graphs"]
    for rank in report["ranks"]:
        assert rank["host_pulls_per_step"]["decided"] == 0.0 and rank["sentinel_checked_steps"] >= 5
    # Against tp=1 the sharded sums run in another order: reported (pytest -s), not assumed.
    ones, twos = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("one", "two"))
    assert len(ones) == len(twos)
    print(f"tp=2 vs tp=1 on CUDA: {sum(a == b for a, b in zip(ones, twos))}/{len(ones)} requests identical")


def test_the_bench_runs_from_python_and_returns_what_the_cli_prints(capsys):
    """`run_command` decides single process, launch or join and returns the outcome;
    it prints nothing itself (the CLI prints)."""
    from seqguard.bench.command import BenchOptions, run_command

    refused = run_command(BenchOptions(device="cpu", tp=3))
    assert refused.exit_code == 2 and refused.report is None
    assert refused.error.startswith("num_q_heads: expected a multiple of --tp 3")
    fault = run_command(BenchOptions(device="cpu", tp=2, inject_fault="5:raise"))
    assert fault.exit_code == 2 and "--inject-fault: expected R:raise or R:hang" in fault.error
    done = run_command(BenchOptions(device="cpu", workload_changes=(("requests", 2), ("max_steps", 3)), repeats=1))
    assert done.exit_code == 0 and done.report["identical_tokens"] is True and done.report["outputs"]
    assert capsys.readouterr().out == ""
