"""Triton kernels against a float64 torch reference on fresh random inputs.

Without a GPU these run in Triton's interpreter at small sizes; on a GPU the `gpu`
tests run real sizes."""

import math

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

from seqguard.runtime.ops import build_kv_indices, decode_attention_fwd, extend_attention_fwd
from seqguard.runtime.ops import decode_attention as decode_module
from seqguard.runtime.ops.decode_attention import DecodeConfig, DecodeWorkspace, decode_config

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def rel_err(out, ref):
    assert not torch.isnan(out).any()
    return ((out.double() - ref).norm() / ref.norm()).item()


def tolerance(dtype):
    # float32 dots run as TF32 on a GPU (10-bit mantissa, as SGLang's kernels do): 5e-4
    # relative error on head dim 256 is that, not a bug; the interpreter computes in full float32.
    float32 = 3e-3 if DEVICE == "cuda" else 1e-4
    return {torch.float32: float32, torch.float16: 3e-3, torch.bfloat16: 2e-2}[dtype]


def paged(lengths, num_kv_heads, head_dim, dtype, extra=37, head_dim_v=None):
    """A KV cache with randomly permuted slots; returns caches, indptr, indices."""
    total = sum(lengths)
    slots = total + extra
    k = torch.randn(slots, num_kv_heads, head_dim, dtype=dtype, device=DEVICE)
    v = torch.randn(slots, num_kv_heads, head_dim_v or head_dim, dtype=dtype, device=DEVICE)
    indices = torch.randperm(slots, device=DEVICE)[:total].to(torch.int32)
    indptr = torch.zeros(len(lengths) + 1, dtype=torch.int32, device=DEVICE)
    indptr[1:] = torch.cumsum(torch.tensor(lengths, device=DEVICE), 0)
    return k, v, indptr, indices


def attention_ref(q, keys, values, scale, cap=0.0, causal_offset=None):
    """q: [M, Hq, D], keys/values: [N, Hkv, D] (float64). causal_offset: query i sees keys <= offset + i."""
    group = q.shape[1] // keys.shape[1]
    k = keys.double().repeat_interleave(group, 1)
    v = values.double().repeat_interleave(group, 1)
    s = torch.einsum("mhd,nhd->hmn", q.double(), k) * scale
    if cap:
        s = cap * torch.tanh(s / cap)
    if causal_offset is not None:
        m, n = s.shape[1], s.shape[2]
        visible = torch.arange(n, device=s.device)[None, :] <= causal_offset + torch.arange(m, device=s.device)[:, None]
        s = s.masked_fill(~visible, float("-inf"))
    return torch.einsum("hmn,nhd->mhd", s.softmax(-1), v)


def decode_ref(q, k, v, indptr, indices, scale, cap=0.0):
    out = []
    for b in range(q.shape[0]):
        rows = indices[indptr[b]:indptr[b + 1]].long()
        out.append(attention_ref(q[b:b + 1], k[rows], v[rows], scale, cap)[0])
    return torch.stack(out)


CASES = [
    # (lengths, Hq, Hkv, D, dtype, cap, max_splits)
    ([1, 37, 70], 8, 2, 64, torch.float16, 0.0, 4),
    ([17, 5], 4, 4, 32, torch.bfloat16, 30.0, 3),          # MHA, logit cap
    ([40, 3, 1], 4, 1, 256, torch.float32, 0.0, 2),        # head dim 256, multi-query
    ([129], 8, 2, 128, torch.bfloat16, 0.0, 8),            # not a multiple of any block
    ([200, 131], 8, 2, 128, torch.float16, 0.0, 7),        # fused merge over several split chunks, a ragged last one
]


@pytest.mark.parametrize("fuse_reduce", [True, False], ids=["fused-merge", "merge-launch"])
@pytest.mark.parametrize("lengths, hq, hkv, d, dtype, cap, splits", CASES)
def test_decode_matches_reference(lengths, hq, hkv, d, dtype, cap, splits, fuse_reduce):
    k, v, indptr, indices = paged(lengths, hkv, d, dtype)
    q = torch.randn(len(lengths), hq, d, dtype=dtype, device=DEVICE)
    out = torch.full((len(lengths), hq, d), float("nan"), dtype=dtype, device=DEVICE)
    decode_attention_fwd(q, k, v, out, indptr, indices, sm_scale=1 / math.sqrt(d), logit_cap=cap,
                         max_kv_splits=splits, fuse_reduce=fuse_reduce)
    assert rel_err(out, decode_ref(q, k, v, indptr, indices, 1 / math.sqrt(d), cap)) < tolerance(dtype)


class _CountingLauncher:
    def __init__(self, launcher):
        self.launcher, self.launches = launcher, 0

    def __getitem__(self, grid):
        self.launches += 1
        return self.launcher[grid]


def test_the_merge_choice_is_honoured_and_both_paths_run_one_merge(monkeypatch):
    """Fused or in a second launch, the split partials go through the same log-sum-exp
    merge over the same rows: the outputs agree to the bit (float32, 7 splits)."""
    merge = _CountingLauncher(decode_module._MERGE)
    monkeypatch.setattr(decode_module, "_MERGE", merge)
    k, v, indptr, indices = paged([200, 131, 1], 2, 32, torch.float32)
    q = torch.randn(3, 8, 32, device=DEVICE)
    outs = {}
    for fuse in (True, False):
        outs[fuse] = torch.full_like(q, float("nan"))
        decode_attention_fwd(q, k, v, outs[fuse], indptr, indices, sm_scale=0.2, max_kv_splits=7, fuse_reduce=fuse)
        assert merge.launches == (0 if fuse else 1)
    assert rel_err(outs[True], decode_ref(q, k, v, indptr, indices, 0.2)) < 3e-3  # float32 dots are tf32 on a GPU
    if DEVICE == "cpu":
        assert torch.equal(outs[True], outs[False])
    else:  # compiled into two kernels, the same merge may be scheduled differently
        assert torch.allclose(outs[True], outs[False], rtol=0, atol=1e-5)


def test_decode_config_is_built_by_keyword_and_its_merge_rule_is_the_batch_shape():
    with pytest.raises(TypeError):
        DecodeConfig(16, 1, 4, 1, 4)  # positional fields: a reordering would go unnoticed
    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    # off the GPU the merge follows the GPU's rule (fused up to 256 KV-head programs), not a test's need
    assert [decode_config(b, 2, 64, cpu).fuse_reduce for b in range(1, 9)] == [True] * 8
    assert decode_config(128, 2, 64, cpu).fuse_reduce and not decode_config(129, 2, 64, cpu).fuse_reduce
    # the GPU table, as measured (BENCHMARKS.md): (block_n, min_tiles, num_warps, num_stages, programs_per_sm, fused)
    table = {(1, 8, 128): (64, 2, 4, 2, 16, True), (8, 8, 128): (64, 8, 2, 2, 8, True),
             (16, 8, 128): (32, 2, 2, 2, 8, True), (32, 8, 128): (128, 1, 4, 3, 4, True),
             (64, 8, 128): (128, 1, 4, 3, 4, False), (8, 8, 256): (32, 2, 4, 2, 8, True),
             (16, 8, 256): (32, 2, 4, 2, 8, False)}
    for (batch, kv_heads, head_dim), expected in table.items():
        c = decode_config(batch, kv_heads, head_dim, gpu)
        assert (c.block_n, c.min_tiles, c.num_warps, c.num_stages, c.programs_per_sm, c.fuse_reduce) == expected


def test_decode_split_count_does_not_change_the_answer():
    k, v, indptr, indices = paged([50, 9], 2, 32, torch.float32)
    q = torch.randn(2, 4, 32, device=DEVICE)
    outs = []
    for splits in (1, 2, 5):
        out = torch.empty(2, 4, 32, device=DEVICE)
        decode_attention_fwd(q, k, v, out, indptr, indices, sm_scale=0.2, max_kv_splits=splits)
        outs.append(out)
    assert torch.allclose(outs[0], outs[1], atol=1e-5) and torch.allclose(outs[0], outs[2], atol=1e-5)


def test_decode_with_a_preallocated_workspace_and_padding_rows():
    # indptr longer than the batch (a CUDA-graph buffer): only the first B+1 entries count
    k, v, indptr, indices = paged([6, 11], 2, 32, torch.float16)
    indptr = torch.cat([indptr, torch.full((3,), 999, dtype=torch.int32, device=DEVICE)])
    q = torch.randn(2, 4, 32, dtype=torch.float16, device=DEVICE)
    workspace = DecodeWorkspace.allocate(8, 4, 4, 32, DEVICE, num_kv_heads=2)
    out = torch.empty(2, 4, 32, dtype=torch.float16, device=DEVICE)
    for _ in range(2):  # the arrival counters are left at zero for the next launch
        decode_attention_fwd(q, k, v, out, indptr, indices, sm_scale=0.3, workspace=workspace, max_kv_splits=3)
        assert rel_err(out, decode_ref(q, k, v, indptr, indices, 0.3)) < 3e-3
        assert int(workspace.counters.abs().sum()) == 0


@pytest.mark.parametrize("prefix, extend, hq, hkv, d, dtype", [
    ([0, 9, 33], [5, 1, 18], 4, 2, 64, torch.float16),
    ([20], [7], 2, 2, 32, torch.bfloat16),
    ([3, 0], [2, 16], 4, 1, 128, torch.float32),
])
def test_extend_with_cached_prefix_matches_reference(prefix, extend, hq, hkv, d, dtype):
    k_cache, v_cache, kv_indptr, kv_indices = paged(prefix, hkv, d, dtype)
    n = sum(extend)
    q = torch.randn(n, hq, d, dtype=dtype, device=DEVICE)
    k_new = torch.randn(n, hkv, d, dtype=dtype, device=DEVICE)
    v_new = torch.randn(n, hkv, d, dtype=dtype, device=DEVICE)
    qo_indptr = torch.zeros(len(extend) + 1, dtype=torch.int64, device=DEVICE)
    qo_indptr[1:] = torch.cumsum(torch.tensor(extend, device=DEVICE), 0)
    out = torch.full_like(q, float("nan"))
    scale = 1 / math.sqrt(d)
    extend_attention_fwd(q, k_new, v_new, out, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices,
                         sm_scale=scale, max_extend_len=max(extend))
    refs = []
    for b in range(len(extend)):
        rows = kv_indices[kv_indptr[b]:kv_indptr[b + 1]].long()
        lo, hi = qo_indptr[b].item(), qo_indptr[b + 1].item()
        keys = torch.cat([k_cache[rows], k_new[lo:hi]])
        values = torch.cat([v_cache[rows], v_new[lo:hi]])
        refs.append(attention_ref(q[lo:hi], keys, values, scale, causal_offset=prefix[b]))
    assert rel_err(out, torch.cat(refs)) < tolerance(dtype)


def test_build_kv_indices_from_req_to_token():
    req_to_token = torch.randint(0, 10_000, (6, 300), dtype=torch.int32, device=DEVICE)
    rows = torch.tensor([4, 0, 2], device=DEVICE)
    lengths = torch.tensor([1, 290, 17], device=DEVICE)
    start = torch.tensor([0, 5, 100], device=DEVICE)
    indptr = torch.zeros(4, dtype=torch.int32, device=DEVICE)
    indptr[1:] = torch.cumsum(lengths, 0)
    out = torch.full((400,), -1, dtype=torch.int32, device=DEVICE)
    build_kv_indices(req_to_token, rows, lengths, indptr, out, start=start)
    expected = torch.cat([req_to_token[4, 0:1], req_to_token[0, 5:295], req_to_token[2, 100:117]])
    assert torch.equal(out[:308], expected) and (out[308:] == -1).all()


@pytest.mark.parametrize("mutate, error, needle", [
    (lambda a: a.update(q=a["q"].float()), TypeError, "k_cache: expected dtype torch.float32"),
    (lambda a: a.update(kv_indptr=a["kv_indptr"].float()), TypeError, "kv_indptr: expected dtype"),
    (lambda a: a.update(kv_indptr=a["kv_indptr"][:2]), ValueError, "kv_indptr: expected at least 3"),
    (lambda a: a.update(out=a["out"][:, :2]), ValueError, "out: expected shape"),
    (lambda a: a.update(q=a["q"][:, :3]), ValueError, "multiple of the 2 KV heads"),
    (lambda a: a.update(k_cache=[1]), TypeError, "k_cache: expected a torch.Tensor, got list"),
    (lambda a: a.update(q=a["q"].int()), TypeError, "q: expected dtype torch.float16 or"),
    (lambda a: a.update(kv_indices=a["kv_indices"][None]), ValueError, "kv_indices: expected 1 dimensions"),
    (lambda a: a.update(v_cache=a["v_cache"][:, :1]), ValueError, r"v_cache: expected shape \(.*, 2, '\*'\)"),
    (lambda a: a.update(k_cache=a["k_cache"].transpose(0, 1).contiguous().transpose(0, 1)), ValueError,
     "expected contiguous caches"),
    (lambda a: a.update(q=torch.randn(2, 16, 4, dtype=torch.float16, device=DEVICE).transpose(1, 2)), ValueError,
     "q, out: expected contiguous heads"),
])
def test_decode_launcher_rejects_bad_arguments(mutate, error, needle):
    k, v, indptr, indices = paged([3, 4], 2, 16, torch.float16)
    args = dict(q=torch.randn(2, 4, 16, dtype=torch.float16, device=DEVICE), k_cache=k, v_cache=v,
                out=torch.empty(2, 4, 16, dtype=torch.float16, device=DEVICE), kv_indptr=indptr, kv_indices=indices)
    mutate(args)
    with pytest.raises(error, match=needle):
        decode_attention_fwd(**args, sm_scale=0.25)


@pytest.mark.gpu
@pytest.mark.parametrize("batch, context", [(1, 4096), (8, 4096), (64, 8192), (16, 32768)])
def test_gpu_decode_real_sizes(batch, context):
    torch.manual_seed(batch)
    lengths = torch.randint(context // 2, context + 1, (batch,)).tolist()
    lengths[0] = 1
    k, v, indptr, indices = paged(lengths, 8, 128, torch.bfloat16)
    q = torch.randn(batch, 32, 128, dtype=torch.bfloat16, device="cuda")
    out = torch.full((batch, 32, 128), float("nan"), dtype=torch.bfloat16, device="cuda")
    decode_attention_fwd(q, k, v, out, indptr, indices, sm_scale=128 ** -0.5)
    ref = decode_ref(q, k, v, indptr, indices, 128 ** -0.5)
    assert rel_err(out, ref) < 1e-2


@pytest.mark.gpu
@pytest.mark.parametrize("batch", [1, 8, 64])
def test_gpu_fast_launch_matches_tritons_launch_path(batch, monkeypatch):
    """The launch shortcut runs the very binary Triton would: identical bits, and it is
    really taken once a shape has launched (decode, its merge, kv_indices, extend)."""
    from seqguard.runtime.ops import launch
    from seqguard.runtime.ops.decode_attention import _DECODE
    from seqguard.runtime.ops.extend_attention import _EXTEND
    from seqguard.runtime.ops.kv_indices import _BUILD_KV_INDICES

    if not launch.fast_launch_tested(triton.__version__):
        pytest.skip(f"Triton {triton.__version__} is not a release the launch shortcut is tested on")
    torch.manual_seed(batch)
    lengths = torch.randint(1, 3000, (batch,)).tolist()
    k, v, indptr, indices = paged(lengths, 8, 128, torch.bfloat16)
    q = torch.randn(batch, 32, 128, dtype=torch.bfloat16, device="cuda")
    req_to_token = torch.randint(0, 10_000, (batch, 3000), dtype=torch.int32, device="cuda")
    rows = torch.arange(batch, device="cuda")
    new = torch.full((batch,), 3, device="cuda")
    new_indptr = torch.arange(0, 3 * batch + 1, 3, device="cuda")
    q_ext, k_ext, v_ext = (torch.randn(3 * batch, h, 128, dtype=torch.bfloat16, device="cuda") for h in (32, 8, 8))

    def step():
        out = torch.empty_like(q)
        decode_attention_fwd(q, k, v, out, indptr, indices, sm_scale=128 ** -0.5)
        flat = torch.full((3 * batch,), -1, dtype=torch.int32, device="cuda")
        build_kv_indices(req_to_token, rows, new, new_indptr, flat)
        ext = torch.empty_like(q_ext)
        extend_attention_fwd(q_ext, k_ext, v_ext, ext, k, v, new_indptr, indptr, indices, sm_scale=128 ** -0.5,
                             max_extend_len=3)
        return out, flat, ext

    monkeypatch.setattr(launch, "ENABLED", False)
    expected = step()
    monkeypatch.setattr(launch, "ENABLED", True)
    for _ in range(3):
        got = step()
        assert all(torch.equal(a, b) for a, b in zip(got, expected))
    assert all(kern.cached_variants() > 0 for kern in (_DECODE, _EXTEND, _BUILD_KV_INDICES))
