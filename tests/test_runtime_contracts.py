"""Batch contracts: with and without the mirror, the device side is identical and an
absent mirror stays absent; the runtime passes its own lint; the class-creation guard."""

import warnings

import pytest

torch = pytest.importorskip("torch")

from seqguard.bench.batch import ForwardBatch, Req, ScheduleBatch, SpecInfo
from seqguard.runtime import AttentionBackend, UndeclaredFlagWarning, decode_total_seq_lens, draft_seq_lens_sum

from conftest import REPO


def reqs(lengths, start=0):
    out = []
    for i, n in enumerate(lengths):
        r = Req(rid=start + i, origin_input_ids=list(range(n)), req_pool_idx=start + i)
        out.append(r)
    return out


def run_ops(with_mirror):
    a = ScheduleBatch.init_new(reqs([5, 9, 1, 17]), "cpu", with_mirror)
    b = ScheduleBatch.init_new(reqs([3, 8], start=10), "cpu", with_mirror)
    a.prepare_for_decode()
    for r in a.reqs:
        r.output_ids.append(0)
    a.filter_batch([0, 2, 3])
    a.merge_batch(b)
    a.prepare_for_decode(num_new_tokens=2)
    for r in a.reqs:
        r.output_ids.extend([0, 0])
    return a


def test_mirror_present_and_absent_agree_on_the_device():
    with_mirror, without = run_ops(True), run_ops(False)
    assert torch.equal(with_mirror.seq_lens, without.seq_lens)
    assert torch.equal(with_mirror.req_pool_indices, without.req_pool_indices)
    assert torch.equal(with_mirror.seq_lens_cpu, with_mirror.seq_lens)
    assert with_mirror.seq_lens_sum == int(with_mirror.seq_lens.sum())
    assert without.seq_lens_cpu is None and without.seq_lens_sum is None
    assert decode_total_seq_lens(with_mirror) == decode_total_seq_lens(without) == int(without.seq_lens.sum())


def test_merging_a_mirrored_and_an_unmirrored_batch_drops_the_mirror():
    a = ScheduleBatch.init_new(reqs([2, 3]), "cpu", True)
    a.merge_batch(ScheduleBatch.init_new(reqs([4], start=5), "cpu", False))
    assert a.seq_lens_cpu is None and a.seq_lens_sum is None and a.seq_lens.tolist() == [2, 3, 4]


def test_filter_keeps_future_indices_aligned():
    a = ScheduleBatch.init_new(reqs([2, 3, 4]), "cpu", False)
    a.spec_info = SpecInfo(future_indices=torch.tensor([10, 11, 12]))
    a.filter_batch([2, 0])
    assert a.spec_info.future_indices.tolist() == [12, 10]


@pytest.mark.parametrize("extend", [[3, 1], torch.tensor([3, 1])])
def test_forward_batch_accepts_list_or_tensor_and_sums_only_with_a_mirror(extend):
    for with_mirror in (True, False):
        batch = ScheduleBatch.init_new(reqs([6, 2]), "cpu", with_mirror)
        fb = ForwardBatch.init_new(batch, extend_seq_lens=extend)
        assert fb.extend_seq_lens.tolist() == [3, 1] and fb.extend_num_tokens == 4
        assert fb.seq_lens_sum == (8 if with_mirror else None)
        assert (fb.seq_lens_cpu is None) is (not with_mirror)


def test_draft_seq_lens_sum_fallbacks():
    mirrored = ScheduleBatch.init_new(reqs([6, 2]), "cpu", True)
    bare = ScheduleBatch.init_new(reqs([6, 2]), "cpu", False)
    assert draft_seq_lens_sum(mirrored, 4096, tree_mask_preallocated=False) == 8
    assert draft_seq_lens_sum(bare, 4096, tree_mask_preallocated=True) == 0
    assert draft_seq_lens_sum(bare, 4096, tree_mask_preallocated=False) == 2 * 4096


def test_undeclared_backend_warns_naming_class_and_inherited_value():
    with pytest.warns(UndeclaredFlagWarning, match=r"Forgetful: expected an explicit `needs_cpu_seq_lens`, got the "
                                                   r"value True inherited from AttentionBackend"):
        class Forgetful(AttentionBackend):
            pass


def test_strict_mode_makes_it_an_error(monkeypatch):
    monkeypatch.setenv("SEQGUARD_STRICT", "1")
    with pytest.raises(TypeError, match="Forgetful2"):
        class Forgetful2(AttentionBackend):
            pass


def test_declared_in_body_annotation_or_init_is_fine():
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        class InBody(AttentionBackend):
            needs_cpu_seq_lens = False

        class Annotated(AttentionBackend):
            needs_cpu_seq_lens: bool

        class InInit(AttentionBackend):
            def __init__(self, fast: bool):
                self.needs_cpu_seq_lens = not fast

    assert InInit(True).needs_cpu_seq_lens is False and InBody.needs_cpu_seq_lens is False


def test_the_runtime_and_the_bench_engine_pass_their_own_lint():
    from seqguard.config import load_config
    from seqguard.lint.runner import lint_paths
    runtime, bench = REPO / "src" / "seqguard" / "runtime", REPO / "src" / "seqguard" / "bench"
    result = lint_paths([runtime, bench], load_config([runtime]), use_cache=False)
    assert result.diagnostics == []
    assert result.files_checked >= 20
