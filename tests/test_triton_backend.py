"""TritonAttnBackend and TritonMultiStepDraftBackend: metadata from device tensors
only, every forward mode right, CUDA-graph capture/replay on a GPU."""

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from seqguard.runtime.attention.triton_backend import AttentionLayer, TritonAttnBackend, TritonMultiStepDraftBackend
from seqguard.bench.batch import ForwardBatch
from seqguard.runtime import ForwardMode
from seqguard.bench.pool import ReqToTokenPool, TokenKVPool

from test_ops import attention_ref, rel_err

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
HQ, HKV, D = 4, 2, 32
DTYPE = torch.float16


class Setup:
    """Requests with random, permuted KV slots already filled in req_to_token."""

    def __init__(self, lengths, max_bs=8, context=256, draft_steps=1, num_draft_tokens=1):
        self.reqs = ReqToTokenPool(16, context, DEVICE)
        self.pool = TokenKVPool(2048, 1, HKV, D, DTYPE, DEVICE)
        self.rows = torch.tensor([self.reqs.alloc() for _ in lengths], device=DEVICE)
        for row, n in zip(self.rows.tolist(), lengths):
            slots = self.pool.alloc(n + 8)  # room for new and draft tokens
            self.reqs.req_to_token[row, : n + 8] = torch.tensor(slots, dtype=torch.int32, device=DEVICE)
        self.lengths = torch.tensor(lengths, device=DEVICE)
        self.backend = TritonAttnBackend(num_q_heads=HQ, num_kv_heads=HKV, head_dim=D,
                                         req_to_token=self.reqs.req_to_token, token_to_kv_pool=self.pool,
                                         max_bs=max_bs, num_draft_tokens=num_draft_tokens)
        self.layer = AttentionLayer(0, 1 / math.sqrt(D))

    def kv_rows(self, b, n):
        return self.reqs.req_to_token[self.rows[b], :n].long()

    def batch(self, mode, seq_lens, extend=None):
        # No host mirror at all: the backend must not need it.
        return ForwardBatch(batch_size=len(seq_lens), req_pool_indices=self.rows, seq_lens=seq_lens,
                            seq_lens_cpu=None, seq_lens_sum=None, extend_seq_lens=extend, forward_mode=mode)


class DictPool:
    """An engine's own KV pool, not seqguard's: only the three methods of SGLang's pools
    (same signatures as MHATokenToKVPool), buffers kept in a dict."""

    def __init__(self, slots, layers):
        self.buffers = {i: (torch.randn(slots, HKV, D, dtype=DTYPE, device=DEVICE),
                            torch.randn(slots, HKV, D, dtype=DTYPE, device=DEVICE)) for i in range(layers)}
        self.writes = []

    def get_key_buffer(self, layer_id):
        return self.buffers[layer_id][0]

    def get_value_buffer(self, layer_id):
        return self.buffers[layer_id][1]

    def set_kv_buffer(self, layer, loc, cache_k, cache_v, k_scale=None, v_scale=None, layer_id_override=None):
        self.writes.append(layer.layer_id)
        k_buf, v_buf = self.buffers[layer.layer_id]
        k_buf[loc] = cache_k.view(-1, HKV, D)
        v_buf[loc] = cache_v.view(-1, HKV, D)


def test_an_engines_own_pool_works_unchanged():
    from seqguard.runtime import KVPool
    pool = DictPool(64, layers=2)
    assert isinstance(pool, KVPool)  # structurally: no base class, no registration
    req_to_token = torch.randperm(64, device=DEVICE)[:40].to(torch.int32).view(2, 20)
    backend = TritonAttnBackend(num_q_heads=HQ, num_kv_heads=HKV, head_dim=D, req_to_token=req_to_token,
                                token_to_kv_pool=pool, max_bs=2)
    layer = AttentionLayer(1, 1 / math.sqrt(D))
    lengths = torch.tensor([3, 9], device=DEVICE)
    rows = torch.tensor([1, 0], device=DEVICE)
    fb = ForwardBatch(batch_size=2, req_pool_indices=rows, seq_lens=lengths + 1, forward_mode=ForwardMode.DECODE,
                      out_cache_loc=req_to_token[rows, lengths].long())
    q = torch.randn(2, HQ * D, dtype=DTYPE, device=DEVICE)
    k = torch.randn(2, HKV, D, dtype=DTYPE, device=DEVICE)
    v = torch.randn(2, HKV, D, dtype=DTYPE, device=DEVICE)
    backend.init_forward_metadata(fb)
    out = backend.forward_decode(q, k, v, layer, fb).view(2, HQ, D)
    assert pool.writes == [1]  # the layer object reached the pool, as SGLang's pools expect
    for b in range(2):
        slots = req_to_token[rows[b], : int(lengths[b]) + 1].long()
        assert torch.equal(pool.get_key_buffer(1)[slots[-1]], k[b])
        ref = attention_ref(q.view(2, HQ, D)[b:b + 1], pool.get_key_buffer(1)[slots], pool.get_value_buffer(1)[slots],
                            layer.scaling)[0]
        assert rel_err(out[b], ref) < 3e-3


def test_a_pool_without_the_protocol_is_one_clear_error():
    class NoSetter:
        def get_key_buffer(self, layer_id): ...
        def get_value_buffer(self, layer_id): ...

    with pytest.raises(TypeError, match=r"token_to_kv_pool: expected a KV pool with get_key_buffer, get_value_buffer "
                                        r"and set_kv_buffer .*got NoSetter without set_kv_buffer"):
        TritonAttnBackend(num_q_heads=HQ, num_kv_heads=HKV, head_dim=D, max_bs=1, token_to_kv_pool=NoSetter(),
                          req_to_token=torch.zeros(1, 4, dtype=torch.int32, device=DEVICE))


def test_flag_is_false_for_both_backends():
    assert TritonAttnBackend.needs_cpu_seq_lens is False and TritonMultiStepDraftBackend.needs_cpu_seq_lens is False


def test_decode_with_the_new_token_saved_first():
    s = Setup([5, 40, 1])
    bs = 3
    loc = torch.stack([s.reqs.req_to_token[s.rows[b], s.lengths[b]] for b in range(bs)]).long()
    fb = s.batch(ForwardMode.DECODE, s.lengths + 1)
    fb.out_cache_loc = loc
    q = torch.randn(bs, HQ * D, dtype=DTYPE, device=DEVICE)
    k = torch.randn(bs, HKV, D, dtype=DTYPE, device=DEVICE)
    v = torch.randn(bs, HKV, D, dtype=DTYPE, device=DEVICE)
    s.backend.init_forward_metadata(fb)
    out = s.backend.forward_decode(q, k, v, s.layer, fb).view(bs, HQ, D)
    for b in range(bs):
        rows = s.kv_rows(b, int(s.lengths[b]) + 1)
        ref = attention_ref(q.view(bs, HQ, D)[b:b + 1], s.pool.k_buffer[0][rows], s.pool.v_buffer[0][rows],
                            s.layer.scaling)[0]
        assert rel_err(out[b], ref) < 3e-3


@pytest.mark.parametrize("mode", [ForwardMode.EXTEND, ForwardMode.TARGET_VERIFY, ForwardMode.DRAFT_EXTEND])
def test_extend_like_modes(mode):
    prefix = [7, 0, 19]
    new = [3, 3, 3] if mode is not ForwardMode.EXTEND else [4, 9, 1]
    s = Setup(prefix, num_draft_tokens=3)
    extend = torch.tensor(new, device=DEVICE)
    seq_lens = torch.tensor(prefix, device=DEVICE) + extend
    fb = s.batch(mode, seq_lens, extend)
    fb.out_cache_loc = torch.cat([s.kv_rows(b, prefix[b] + new[b])[prefix[b]:] for b in range(3)])
    n = sum(new)
    q = torch.randn(n, HQ * D, dtype=DTYPE, device=DEVICE)
    k = torch.randn(n, HKV * D, dtype=DTYPE, device=DEVICE)
    v = torch.randn(n, HKV * D, dtype=DTYPE, device=DEVICE)
    s.backend.init_forward_metadata(fb)
    out = s.backend.forward_extend(q, k.view(n, HKV, D), v.view(n, HKV, D), s.layer, fb).view(n, HQ, D)
    start = 0
    for b in range(3):
        rows = s.kv_rows(b, prefix[b] + new[b])
        ref = attention_ref(q.view(n, HQ, D)[start:start + new[b]], s.pool.k_buffer[0][rows],
                            s.pool.v_buffer[0][rows], s.layer.scaling, causal_offset=prefix[b])
        assert rel_err(out[start:start + new[b]], ref) < 3e-3
        start += new[b]


def test_extend_needs_device_extend_lengths():
    s = Setup([4])
    with pytest.raises(ValueError, match="extend_seq_lens: expected a device tensor"):
        s.backend.init_forward_metadata(s.batch(ForwardMode.EXTEND, s.lengths, None))


def test_batch_larger_than_max_bs_is_refused():
    s = Setup([4, 4], max_bs=1)
    with pytest.raises(ValueError, match=r"^forward_batch.batch_size: expected an int in \[0, 1\] \(the backend's "
                                         r"max_bs\), got 2$"):
        s.backend.init_forward_metadata(s.batch(ForwardMode.DECODE, s.lengths))


def test_multi_step_draft_step_i_sees_i_more_tokens():
    s = Setup([6, 13])
    draft = TritonMultiStepDraftBackend(speculative_num_steps=3, num_q_heads=HQ, num_kv_heads=HKV, head_dim=D,
                                        req_to_token=s.reqs.req_to_token, token_to_kv_pool=s.pool, max_bs=8)
    assert len({id(b.workspace) for b in draft.draft_backends}) == 1  # shared
    fb = s.batch(ForwardMode.DECODE, s.lengths)
    draft.init_forward_metadata(fb)
    q = torch.randn(2, HQ * D, dtype=DTYPE, device=DEVICE)
    for step in range(3):
        out = draft.forward_decode(q, None, None, s.layer, fb, save_kv_cache=False, step=step).view(2, HQ, D)
        for b in range(2):
            rows = s.kv_rows(b, int(s.lengths[b]) + step)
            ref = attention_ref(q.view(2, HQ, D)[b:b + 1], s.pool.k_buffer[0][rows], s.pool.v_buffer[0][rows],
                                s.layer.scaling)[0]
            assert rel_err(out[b], ref) < 3e-3


@pytest.mark.gpu
def test_gpu_cuda_graph_replay_with_changing_lengths_never_reads_the_mirror():
    s = Setup([30, 100, 7, 64], max_bs=8, context=512)
    backend = s.backend
    backend.init_cuda_graph_state(8, 8)
    bs = 4
    static_q = torch.randn(bs, HQ * D, dtype=DTYPE, device="cuda")
    static_rows = s.rows.clone()
    static_lens = s.lengths.clone()
    backend.init_forward_metadata_capture_cuda_graph(bs, bs, static_rows, static_lens, None, ForwardMode.DECODE, None)
    fb = s.batch(ForwardMode.DECODE, static_lens)
    for _ in range(2):  # warm up (compile) outside the graph
        backend.forward_decode(static_q, None, None, s.layer, fb, save_kv_cache=False)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = backend.forward_decode(static_q, None, None, s.layer, fb, save_kv_cache=False)
    for new_lens in ([31, 101, 8, 65], [200, 1, 300, 5], [1, 1, 1, 1]):
        static_lens.copy_(torch.tensor(new_lens, device="cuda"))
        static_q.copy_(torch.randn_like(static_q))
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            backend.init_forward_metadata_replay_cuda_graph(bs, static_rows, static_lens, None, None,
                                                            ForwardMode.DECODE, None, None)
            graph.replay()
        finally:
            torch.cuda.set_sync_debug_mode(0)
        out = static_out.view(bs, HQ, D)
        for b in range(bs):
            rows = s.kv_rows(b, new_lens[b])
            ref = attention_ref(static_q.view(bs, HQ, D)[b:b + 1], s.pool.k_buffer[0][rows],
                                s.pool.v_buffer[0][rows], s.layer.scaling)[0]
            assert rel_err(out[b], ref) < 3e-3


@pytest.mark.gpu
def test_gpu_full_decode_step_has_no_sync():
    s = Setup([300, 1, 77, 1024], context=2048)
    bs = 4
    fb = s.batch(ForwardMode.DECODE, s.lengths + 1)
    fb.out_cache_loc = torch.stack([s.reqs.req_to_token[s.rows[b], s.lengths[b]] for b in range(bs)]).long()
    q = torch.randn(bs, HQ * D, dtype=DTYPE, device="cuda")
    k = torch.randn(bs, HKV, D, dtype=DTYPE, device="cuda")
    v = torch.randn(bs, HKV, D, dtype=DTYPE, device="cuda")
    s.backend.init_forward_metadata(fb)
    s.backend.forward_decode(q, k, v, s.layer, fb)  # compile outside the check
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        s.backend.init_forward_metadata(fb)
        out = s.backend.forward_decode(q, k, v, s.layer, fb)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert out.shape == (bs, HQ * D)
