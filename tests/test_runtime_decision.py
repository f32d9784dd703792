"""decide_needs_cpu_seq_lens: every branch, its reasons, and the OR across ranks."""

import multiprocessing

import pytest

torch = pytest.importorskip("torch")

from seqguard.bench.batch import ServerArgs
from seqguard.runtime import SpecWorkerBackends, decide_needs_cpu_seq_lens, explain_needs_cpu_seq_lens


class Needs:
    needs_cpu_seq_lens = True


class OptsOut:
    needs_cpu_seq_lens = False


class Silent:
    """A backend from elsewhere that never heard of the flag."""


ARGS = ServerArgs()


@pytest.mark.parametrize("backends, expected", [
    ([], False),
    ([OptsOut()], False),
    ([OptsOut(), OptsOut(), None], False),
    ([OptsOut(), Needs()], True),
    ([None, Needs()], True),
    ([Silent()], True),
    ([OptsOut(), Silent()], True),
])
def test_backends_are_or_ed_none_skipped_missing_counts_true(backends, expected):
    assert decide_needs_cpu_seq_lens(ARGS, backends) is expected


@pytest.mark.parametrize("args, needle", [
    (ServerArgs(enable_two_batch_overlap=True), "two-batch overlap"),
    (ServerArgs(disable_piecewise_cuda_graph=False), "piecewise CUDA graphs"),
])
def test_features_force_true(args, needle):
    decision = explain_needs_cpu_seq_lens(args, [OptsOut()])
    assert decision.needs_cpu_seq_lens is True and any(needle in r for r in decision.reasons)


def test_reasons_name_the_backends_and_summary_is_one_line():
    on = explain_needs_cpu_seq_lens(ARGS, [OptsOut(), Needs(), Silent()])
    assert on.reasons == ("Needs needs it", "Silent does not declare needs_cpu_seq_lens (counted as True)")
    assert on.summary().startswith("host seq_lens mirror: on (") and "\n" not in on.summary()
    off = explain_needs_cpu_seq_lens(ARGS, [OptsOut(), None])
    assert not off and off.summary() == "host seq_lens mirror: off (every backend opts out: OptsOut)"


def test_summary_names_each_backend_class_once():
    """A target and a draft-extend backend of one class were listed twice."""
    off = explain_needs_cpu_seq_lens(ARGS, [OptsOut(), None, OptsOut()])
    assert off.summary() == "host seq_lens mirror: off (every backend opts out: OptsOut)"
    on = explain_needs_cpu_seq_lens(ARGS, [Needs(), OptsOut(), Needs()])
    assert on.reasons == ("Needs needs it",)


def test_worker_lists_every_slot_and_the_aggregator_skips_empty_ones():
    worker = SpecWorkerBackends(target=OptsOut(), draft=OptsOut(), draft_extend=None)
    assert worker.attn_backends[2] is None
    assert decide_needs_cpu_seq_lens(ARGS, worker.attn_backends) is False


def _rank_main(rank: int, world: int, init_file: str, needs: list, out) -> None:
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        backend = Needs() if needs[rank] else OptsOut()
        decision = explain_needs_cpu_seq_lens(ARGS, [backend], across_ranks=True)
        out.put((rank, decision.needs_cpu_seq_lens, decision.reasons, decision.per_rank))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("needs, expected", [([False, True], True), ([False, False], False)])
def test_decision_is_or_reduced_across_two_gloo_ranks(tmp_path, needs, expected):
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    init_file = str(tmp_path / "store")
    procs = [ctx.Process(target=_rank_main, args=(r, 2, init_file, needs, out)) for r in range(2)]
    for p in procs:
        p.start()
    results = sorted(out.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert [r[1] for r in results] == [expected, expected]
    assert [r[3] for r in results] == [tuple(needs), tuple(needs)]  # every rank learns what each decided
    if expected and not needs[0]:
        assert results[0][2] == ("another tensor-parallel rank needs it (rank 1)",)
