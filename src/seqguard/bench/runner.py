"""`seqguard bench`: the same speculative workload with the host mirror forced on and
with the aggregator's decision (off with the Triton backends), same seeds; step time,
throughput, GPU busy fraction, host pulls per step, and whether the tokens agree."""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import random
import statistics
from typing import Dict, List, Optional, Sequence, Tuple

import torch

from seqguard.bench.model import ModelConfig
from seqguard.bench.scheduler import OverlapScheduler, StepRecord
from seqguard.bench.sentinel import SyncSentinel
from seqguard.bench.tp import TensorParallel, gather_objects
from seqguard.bench.worker import SpecWorker
from seqguard.bench.batch import Req, ServerArgs
from seqguard.runtime import FutureMap, explain_needs_cpu_seq_lens


class MirrorReadingBackend:
    """Stands in for a backend that reads `seq_lens_cpu` (FlashInfer's planner does).
    `--force-mirror-rank R` adds one to rank R's list: the decision it feeds is the
    only thing it takes part in, which is what the OR-reduce has to carry to every rank."""

    needs_cpu_seq_lens = True


class UnreadableFlagBackend:
    """A backend whose flag raises when read: `--inject-fault R:raise` puts one in rank
    R's list to show that a rank failing inside the decision stops every rank."""

    @property
    def needs_cpu_seq_lens(self) -> bool:
        raise RuntimeError("injected fault: this backend's needs_cpu_seq_lens cannot be read")


@dataclasses.dataclass(frozen=True)
class Workload:
    model: ModelConfig
    draft_layers: int = 1
    draft_steps: int = 3
    max_running: int = 8
    requests: int = 16
    prompt_len: tuple[int, int] = (8, 48)
    new_tokens: tuple[int, int] = (8, 40)
    arrival_every: int = 2          # after the first full batch, one request every N steps
    prep_work_ms: float = 0.0       # host work before a step's launch that needs its lengths
    host_work_ms: float = 0.0       # host work after the launch (the previous step's tokens)
    max_steps: int = 400
    warmup_steps: int = 3
    seed: int = 0
    cuda_graphs: bool = True        # replay decode steps from CUDA graphs (CUDA only), as engines do

    def arrivals(self) -> Dict[int, List[Req]]:
        rng = random.Random(self.seed)
        out: Dict[int, List[Req]] = {}
        for rid in range(self.requests):
            step = 0 if rid < self.max_running else (rid - self.max_running + 1) * self.arrival_every
            prompt = [rng.randrange(self.model.vocab_size) for _ in range(rng.randint(*self.prompt_len))]
            out.setdefault(step, []).append(Req(rid=rid, origin_input_ids=prompt,
                                                max_new_tokens=rng.randint(*self.new_tokens)))
        return out


PRESETS = {
    # a few seconds in Triton's CPU interpreter
    "tiny": Workload(ModelConfig(vocab_size=128, hidden_size=32, num_layers=1, num_q_heads=2, num_kv_heads=1,
                                 head_dim=16, intermediate_size=64, max_context_len=128, dtype=torch.float32),
                     draft_steps=2, max_running=3, requests=4, prompt_len=(4, 10), new_tokens=(4, 9),
                     arrival_every=2, max_steps=20, warmup_steps=1),
    # the device dominates: long contexts (4-8K) verified through 8 large layers
    "gpu-bound": Workload(ModelConfig(vocab_size=32000, hidden_size=4096, num_layers=8, num_q_heads=32,
                                      num_kv_heads=8, head_dim=128, intermediate_size=11008,
                                      max_context_len=7936, dtype=torch.bfloat16),
                          draft_layers=1, draft_steps=3, max_running=96, requests=112, prompt_len=(4096, 7680),
                          new_tokens=(48, 96), arrival_every=4, prep_work_ms=2.0, max_steps=80, warmup_steps=5),
    # the host dominates: two of the gpu-bound model's layers over 1-2K contexts keep the
    # device a few ms a step, while the host spends 5 ms on scheduling work that reads
    # the step's lengths (policy, memory planning) and 0.5 ms on output processing
    "cpu-bound": Workload(ModelConfig(vocab_size=32000, hidden_size=4096, num_layers=2, num_q_heads=32,
                                      num_kv_heads=8, head_dim=128, intermediate_size=11008,
                                      max_context_len=2304, dtype=torch.bfloat16),
                          draft_layers=1, draft_steps=3, max_running=32, requests=64, prompt_len=(1024, 2048),
                          new_tokens=(64, 128), arrival_every=2, prep_work_ms=5.0, host_work_ms=0.5, max_steps=160,
                          warmup_steps=5),
}


@dataclasses.dataclass
class RunResult:
    mode: str
    needs_cpu_seq_lens: bool
    decision: str
    decision_per_rank: List[bool]       # what each rank decided from its own backends, before the OR-reduce
    cuda_graphs: bool
    steps: int
    tokens: int
    wall_s: float
    step_ms_mean: float
    step_ms_median: float
    step_ms_p99: float
    gpu_only_ms: Optional[float]
    prefill_gpu_ms: Optional[float]     # of it, the prefills queued inside the pre-launch window
    cpu_only_ms: float
    pre_launch_ms: float
    gpu_busy_fraction: Optional[float]
    host_pulls_per_step: float
    sentinel_steps: int
    outputs: List[List[int]]
    # per timed step: (host ms before the decode launch starts, host ms from then on, prefill
    # device ms, decode device ms); what benchmarks/bench_e2e.py replays synthetically
    trace: List[Tuple[float, float, float, float]] = dataclasses.field(default_factory=list)

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.wall_s if self.wall_s else 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.wall_s if self.wall_s else 0.0

    def as_json(self) -> dict:
        return {"mode": self.mode, "needs_cpu_seq_lens": self.needs_cpu_seq_lens, "decision": self.decision,
                "cuda_graphs": self.cuda_graphs,
                "steps": self.steps, "tokens": self.tokens, "steps_per_s": self.steps_per_s,
                "tokens_per_s": self.tokens_per_s, "step_ms_mean": self.step_ms_mean,
                "step_ms_median": self.step_ms_median,
                "step_ms_p99": self.step_ms_p99, "gpu_only_ms": self.gpu_only_ms,
                "prefill_gpu_ms": self.prefill_gpu_ms, "cpu_only_ms": self.cpu_only_ms,
                "host_pre_launch_ms": self.pre_launch_ms,
                "gpu_busy_fraction": self.gpu_busy_fraction, "host_pulls_per_step": self.host_pulls_per_step,
                "sentinel_checked_steps": self.sentinel_steps}


def timed_window(records: List[StepRecord], warmup: int) -> Tuple[List[StepRecord], List[StepRecord]]:
    """The timed steps, and the steps whose device work their wall time holds.

    Each step waits for the previous step's tokens, so the timed steps' walls hold
    the device work of the step before the window and not that of the last step
    (still running when the window closes). Aligning the two matters when device
    time per step trends (a batch draining): unaligned, the window would hold one
    step's device time more or less than its GPU-only time says."""
    timed = records[warmup:] or records
    if timed is records or warmup < 1:
        return timed, timed
    return timed, records[warmup - 1:len(records) - 1]


def run_mode(workload: Workload, mode: str, device: torch.device, sentinel_on: Optional[bool] = None,
             tp: TensorParallel = TensorParallel(), extra_backends: Sequence[object] = ()) -> RunResult:
    """`sentinel_on` (default: whenever the mirror is off) checks every step for syncs;
    on CUDA that check (sync debug mode) costs host time, so timed runs leave it to a
    separate checking pass. Under tensor parallelism every rank calls this in step:
    the decision is OR-reduced across the ranks, the model all-reduces each layer.
    `extra_backends` join this rank's list for the decision (and take no part in the
    model): how one rank is made to need the mirror, or to fail while deciding."""
    torch.manual_seed(workload.seed)
    gc.collect()  # the previous run's pools and graphs, before this run allocates its own
    if device.type == "cuda":
        torch.cuda.empty_cache()
    worker = SpecWorker(workload.model, workload.draft_layers, workload.draft_steps, workload.max_running,
                        pool_rows=pool_rows(workload), device=device, seed=workload.seed, tp=tp)
    backends = worker.backends.attn_backends + list(extra_backends)
    decision = explain_needs_cpu_seq_lens(ServerArgs(speculative_algorithm="EAGLE"), backends, group=tp.group,
                                          across_ranks=tp.size > 1)
    needs = True if mode == "mirror" else decision.needs_cpu_seq_lens
    future_map = FutureMap(device, worker.req_pool.size, needs_cpu_seq_lens=needs)
    sentinel = SyncSentinel(enabled=(not needs) if sentinel_on is None else (sentinel_on and not needs),
                            device=device)
    scheduler = OverlapScheduler(worker, future_map, workload.max_running, workload.arrivals(), sentinel,
                                 host_work_s=workload.host_work_ms / 1000, prep_work_s=workload.prep_work_ms / 1000)
    if device.type == "cuda":
        if workload.cuda_graphs:
            worker.use_cuda_graphs(workload.max_running)  # at start-up, before any step is checked or timed
        torch.cuda.synchronize()
    reqs = scheduler.run(workload.max_steps)
    if device.type == "cuda":
        torch.cuda.synchronize()
    records, waited_for = timed_window(scheduler.records, workload.warmup_steps)
    steps = len(records)
    wall = sum(r.wall_s for r in records)
    step_ms = sorted(r.wall_s * 1000 for r in records)
    gpu_ms = [r.gpu_ms() for r in waited_for] if device.type == "cuda" else []
    prefill_ms = [r.gpu_ms("prefill") for r in waited_for] if device.type == "cuda" else []
    return RunResult(
        mode=mode, needs_cpu_seq_lens=needs, decision=decision.summary(),
        decision_per_rank=list(decision.per_rank) or [decision.needs_cpu_seq_lens],
        cuda_graphs=device.type == "cuda" and workload.cuda_graphs, steps=steps,
        tokens=sum(r.tokens for r in records), wall_s=wall,
        step_ms_mean=wall * 1000 / max(1, steps),
        step_ms_median=statistics.median(step_ms), step_ms_p99=step_ms[min(len(step_ms) - 1, int(len(step_ms) * 0.99))],
        gpu_only_ms=sum(gpu_ms) / len(gpu_ms) if gpu_ms else None,
        prefill_gpu_ms=sum(prefill_ms) / len(prefill_ms) if prefill_ms else None,
        cpu_only_ms=sum(r.host_s * 1000 for r in records) / max(1, steps),
        pre_launch_ms=sum(r.pre_launch_s * 1000 for r in records) / max(1, steps),
        gpu_busy_fraction=(sum(gpu_ms) / 1000 / wall) if gpu_ms and wall else None,
        host_pulls_per_step=future_map.host_pulls / max(1, len(scheduler.records)),
        sentinel_steps=sentinel.checked_steps,
        outputs=[list(r.output_ids) for r in reqs],
        trace=[(r.pre_launch_s * 1000, (r.host_s - r.pre_launch_s) * 1000, r.gpu_ms("prefill"), r.gpu_ms("decode"))
               for r in records],  # no device time off CUDA: no events are recorded there
    )


def pool_rows(workload: Workload) -> int:
    """Request-table rows the bench allocates: twice the running batch plus two (one of
    them becomes the CUDA graphs' padding row). The memory estimate reads it too."""
    return workload.max_running * 2 + 2


def tokens_digest(outputs: List[List[int]]) -> str:
    """A short fingerprint of every request's tokens, for comparing runs and ranks."""
    return hashlib.sha256(json.dumps(outputs).encode()).hexdigest()[:16]


def _pair(workload: Workload, device: torch.device, tp: TensorParallel, extra_backends: Sequence[object],
          check_separately: bool) -> Tuple[RunResult, RunResult]:
    mirror = run_mode(workload, "mirror", device, tp=tp, extra_backends=extra_backends)
    decided = run_mode(workload, "decided", device, sentinel_on=not check_separately, tp=tp,
                       extra_backends=extra_backends)
    return mirror, decided


def _speedup(mirror: RunResult, decided: RunResult) -> Optional[float]:
    # Means, not medians: per-step work is heavy-tailed (a prefill lands on some steps).
    return mirror.step_ms_mean / decided.step_ms_mean if decided.step_ms_mean else None


def _overlap_ratio(decided: RunResult) -> Optional[float]:
    return (decided.step_ms_mean / max(decided.gpu_only_ms or 0.0, decided.cpu_only_ms)) \
        if decided.cpu_only_ms else None


def run_bench(workload: Workload, device: torch.device, with_trace: bool = False, repeats: int = 1,
              tp: TensorParallel = TensorParallel(), extra_backends: Sequence[object] = ()) -> dict:
    """`with_trace` adds each run's per-step trace (RunResult.trace) as "step_trace".

    `repeats` runs the mirror/decided pair that many times; the report shows the repeat
    with the median speedup and lists every repeat's (the spread is the noise). Under
    tensor parallelism every rank calls this in step; each report holds that rank's own
    runs and, gathered from all of them, a "ranks" entry per rank (its decision before
    the OR-reduce, syncs per step, speedup, overlap ratio, token fingerprint)."""
    checked = None
    if device.type == "cuda":
        # One checking pass: compiles every kernel variant the workload meets and runs
        # every decided step under the sync sentinel; the timed runs then go unchecked.
        checked = run_mode(workload, "decided", device, sentinel_on=True, tp=tp, extra_backends=extra_backends)
    pairs = [_pair(workload, device, tp, extra_backends, checked is not None) for _ in range(repeats)]
    speedups = [_speedup(m, d) for m, d in pairs]
    order = sorted(range(repeats), key=lambda i: speedups[i] or 0.0)
    mirror, decided = pairs[order[repeats // 2]]
    for _, run in pairs:
        if checked is not None:
            run.sentinel_steps = checked.sentinel_steps
            if checked.outputs != run.outputs:
                raise RuntimeError("seqguard bench: the checked and the timed decided runs disagree; "
                                   "please report this")
    identical = all(m.outputs == d.outputs for m, d in pairs)
    mine = {"rank": tp.rank, "decision_before_reduce": decided.decision_per_rank[tp.rank],
            "needs_cpu_seq_lens": decided.needs_cpu_seq_lens,
            "host_pulls_per_step": {"mirror": mirror.host_pulls_per_step, "decided": decided.host_pulls_per_step},
            "sentinel_checked_steps": decided.sentinel_steps, "speedup": _speedup(mirror, decided),
            "overlap_ratio": _overlap_ratio(decided), "step_ms_mean": {"mirror": mirror.step_ms_mean,
                                                                       "decided": decided.step_ms_mean},
            "gpu_only_ms": decided.gpu_only_ms, "cpu_only_ms": decided.cpu_only_ms,
            "identical_tokens": identical, "tokens_sha256": tokens_digest(decided.outputs)}
    ranks = gather_objects(tp, mine)  # after every timed step: this synchronises
    ranks_agree = len({r["tokens_sha256"] for r in ranks}) == 1
    report = {
        "identical_tokens": identical and ranks_agree and all(r["identical_tokens"] for r in ranks),
        "speedup": _speedup(mirror, decided),
        "overlap_ratio": _overlap_ratio(decided),
        "device": str(device) if device.type != "cuda" else torch.cuda.get_device_name(device),
        "decision": decided.decision,
        "tp": tp.size,
        "tokens_sha256": tokens_digest(decided.outputs),
        "repeats": [{"speedup": sp, "mirror_step_ms_mean": m.step_ms_mean, "decided_step_ms_mean": d.step_ms_mean,
                     "identical_tokens": m.outputs == d.outputs} for sp, (m, d) in zip(speedups, pairs)],
        "runs": [dict(run.as_json(), **({"step_trace": run.trace} if with_trace else {})) for run in (mirror, decided)],
    }
    if tp.size > 1:
        report["ranks_agree"] = ranks_agree
        report["decision_per_rank"] = decided.decision_per_rank
        report["ranks"] = ranks
    report["outputs"] = decided.outputs  # for --tokens-out; the CLI drops it from what it prints
    return report


def render_ranks(report: dict) -> List[str]:
    """One row per tensor-parallel rank: its own decision before the OR-reduce, what it
    ran with, and its own syncs, speedup and overlap ratio."""
    def fmt(value, spec):
        return "-" if value is None else format(value, spec)

    agree = "the same tokens on every rank" if report["ranks_agree"] else "RANKS DISAGREE ON TOKENS"
    lines = [f"tensor parallel: {report['tp']} ranks; decision before the OR-reduce, per rank: "
             f"{report['decision_per_rank']} -> needs_cpu_seq_lens={report['runs'][1]['needs_cpu_seq_lens']} "
             f"on every rank; {agree}",
             "| rank | decided (own backends) | needs_cpu_seq_lens (after OR) | D2H syncs/step mirror | "
             "D2H syncs/step decided | sentinel-checked steps | speedup | decided step / max(GPU-only, CPU-only) | "
             "tokens sha256 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in report["ranks"]:
        lines.append(f"| {r['rank']} | {r['decision_before_reduce']} | {r['needs_cpu_seq_lens']} | "
                     f"{r['host_pulls_per_step']['mirror']:.2f} | {r['host_pulls_per_step']['decided']:.2f} | "
                     f"{r['sentinel_checked_steps']} | {fmt(r['speedup'], '.2f')}x | "
                     f"{fmt(r['overlap_ratio'], '.2f')} | "
                     f"{r['tokens_sha256']} |")
    return lines


def render_table(report: dict) -> str:
    def fmt(value, spec):
        return "-" if value is None else format(value, spec)

    graphs = "decode steps replayed from CUDA graphs" if report["runs"][0]["cuda_graphs"] else "eager decode steps"
    lines = [f"seqguard bench on {report['device']} ({graphs}): {report['decision']}",
             "| mode | needs_cpu_seq_lens | steps/s | tokens/s | step ms (mean) | step ms (median) | step ms (p99) | "
             "GPU-only ms | CPU-only ms | GPU busy | D2H syncs/step |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for run in report["runs"]:
        lines.append(f"| {run['mode']} | {run['needs_cpu_seq_lens']} | {run['steps_per_s']:.1f} | "
                     f"{run['tokens_per_s']:.0f} | {run['step_ms_mean']:.2f} | {run['step_ms_median']:.2f} | "
                     f"{run['step_ms_p99']:.2f} | "
                     f"{fmt(run['gpu_only_ms'], '.2f')} | {run['cpu_only_ms']:.2f} | "
                     f"{fmt(run['gpu_busy_fraction'], '.0%')} | {run['host_pulls_per_step']:.2f} |")
    repeats = report.get("repeats") or []
    spread = ""
    if len(repeats) > 1:
        each = [r["speedup"] for r in repeats if r["speedup"] is not None]
        spread = (f" (the median of {len(repeats)} repeats: min {min(each):.2f}x, max {max(each):.2f}x; "
                  f"each {', '.join(f'{x:.2f}x' for x in each)})") if each else ""
    lines.append(f"identical tokens: {report['identical_tokens']}; speedup (mean step, mirror / decided): "
                 f"{fmt(report['speedup'], '.2f')}x{spread}; decided step / max(GPU-only, CPU-only): "
                 f"{fmt(report['overlap_ratio'], '.2f')} (GPU-only: device time of the prefill and decode work the "
                 f"steps waited for, between events queued around each; CPU-only: host time not blocked on the "
                 f"device)")
    if report.get("ranks"):
        lines.extend(render_ranks(report))
    if report["device"] == "cpu":
        lines.append(f"note: on the CPU the kernels run in Triton's interpreter and share the machine with whatever "
                     f"else runs: timings are noisy and the speedup is not a measurement of the mirror's cost"
                     f"{'' if len(repeats) > 1 else ' (one repeat: pass --repeats 3 to see the spread)'}")
    return "\n".join(lines)
