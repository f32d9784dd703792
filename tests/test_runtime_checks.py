"""The runtime refuses what would corrupt memory (issue 37, item 5): every public entry
point names the argument it rejects; value checks read host tensors always and device
tensors only when switched on (a read there is a sync); unchecked, the kernels read and
write nothing outside their tables; a flag that is not True or False is a TypeError.

Without a GPU these run in Triton's interpreter: tiny tables, one or two heads. The
`meta` device stands in for a GPU where a test must show that no value is read: any
read of a meta tensor raises."""

import math
import subprocess
import sys
import types

import numpy
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from seqguard.runtime import (  # noqa: E402
    AttentionBackend, AttentionLayer, FutureMap, ForwardMode, TritonAttnBackend, TritonMultiStepDraftBackend,
    decide_needs_cpu_seq_lens, decode_total_seq_lens, draft_seq_lens_sum, explain_needs_cpu_seq_lens,
)
from seqguard.runtime import checks  # noqa: E402
from seqguard.runtime.ops import build_kv_indices, decode_attention_fwd, extend_attention_fwd  # noqa: E402
from seqguard.runtime.ops import decode_attention as decode_module  # noqa: E402
from seqguard.runtime.ops import extend_attention as extend_module  # noqa: E402
from seqguard.runtime.ops import kv_indices as kv_indices_module  # noqa: E402
from seqguard.bench.batch import ServerArgs, SpecInfo  # noqa: E402

from conftest import REPO  # noqa: E402
from test_ops import attention_ref, rel_err  # noqa: E402

HQ, HKV, D = 2, 1, 16
ROWS, WIDTH = 4, 16
LAYER = AttentionLayer(0, 1 / math.sqrt(D))


@pytest.fixture
def value_checks():
    """value_checks("off") for one test; the mode is restored after it."""
    before = checks.value_checks()

    def switch(mode):
        checks.set_value_checks(mode)

    yield switch
    checks.set_value_checks(before)


class Pool:
    """An engine's KV pool: slot s of layer 0 holds random keys and values."""

    def __init__(self, slots=ROWS * WIDTH, device="cpu"):
        self.k = torch.randn(slots, HKV, D, device=device)
        self.v = torch.randn(slots, HKV, D, device=device)

    def get_key_buffer(self, layer_id):
        return self.k

    def get_value_buffer(self, layer_id):
        return self.v

    def set_kv_buffer(self, layer, loc, cache_k, cache_v):
        self.k[loc], self.v[loc] = cache_k, cache_v


def table(device="cpu"):
    """Row r holds slots r*WIDTH ... r*WIDTH + WIDTH - 1."""
    return torch.arange(ROWS * WIDTH, dtype=torch.int32, device=device).view(ROWS, WIDTH)


def backend(max_bs=3, device="cpu", **kwargs):
    return TritonAttnBackend(num_q_heads=HQ, num_kv_heads=HKV, head_dim=D, req_to_token=table(device),
                             token_to_kv_pool=Pool(device=device), max_bs=max_bs, **kwargs)


def batch(rows, lens, mode=ForwardMode.DECODE, extend=None, extend_cpu=None, bs=None):
    tensor = lambda x: x if isinstance(x, torch.Tensor) else torch.tensor(x)  # noqa: E731
    return types.SimpleNamespace(batch_size=len(rows) if bs is None else bs, req_pool_indices=tensor(rows),
                                 seq_lens=tensor(lens), forward_mode=mode, seq_lens_cpu=None, seq_lens_sum=None,
                                 extend_seq_lens=None if extend is None else tensor(extend),
                                 extend_seq_lens_cpu=extend_cpu)


# ---- the switch ------------------------------------------------------------------------

@pytest.mark.parametrize("setting, mode", [(None, "auto"), ("", "auto"), ("auto", "auto"), ("1", "on"),
                                           (" ON ", "on"), ("0", "off"), ("off", "off")])
def test_the_switch_reads_its_spellings(setting, mode):
    assert checks.value_checks_mode(setting) == mode


def test_an_unknown_switch_value_is_one_error_naming_the_variable():
    with pytest.raises(ValueError, match=r"^SEQGUARD_RUNTIME_CHECKS: expected 1, 0 or auto, got 'yes'; unset it"):
        checks.value_checks_mode("yes")
    with pytest.raises(ValueError, match=r"^mode: expected one of auto, on, off, got 'debug'$"):
        checks.set_value_checks("debug")


def test_the_environment_is_read_once_at_import(monkeypatch, value_checks):
    code = "from seqguard.runtime.checks import value_checks; print(value_checks())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin",
                               "SEQGUARD_RUNTIME_CHECKS": "1"})
    assert (done.returncode, done.stdout) == (0, "on\n"), done.stderr
    value_checks("auto")
    monkeypatch.setenv("SEQGUARD_RUNTIME_CHECKS", "1")
    assert checks.value_checks() == "auto"  # not read again on the hot path
    assert checks.set_value_checks("off") == "auto" and checks.value_checks() == "off"


def test_by_default_host_tensors_are_checked_and_device_tensors_are_not(value_checks):
    host, device = torch.zeros(2, dtype=torch.int64), torch.zeros(2, dtype=torch.int64, device="meta")
    assert [checks.checks_values(t) for t in (host, device)] == [True, False]
    value_checks("on")
    assert [checks.checks_values(t) for t in (host, device)] == [True, True]
    value_checks("off")
    assert [checks.checks_values(t) for t in (host, device)] == [False, False]


def test_range_error_never_compares_against_a_bound_the_dtype_cannot_hold():
    # torch wraps a Python int outside int32: 5 > 2**40 would read True
    small = torch.tensor([5, 7], dtype=torch.int32)
    assert checks.range_error("x", small, 0, 2 ** 40, "", "") is None
    assert checks.range_error("x", small, -(2 ** 40), 6, "", "fix").args == (
        "x: expected values in [-1099511627776, 6], got 7 at index 1; fix",)


# ---- the backend's public entry points: one error naming the argument ------------------

def test_the_issues_reproductions_are_one_value_error_each():
    b = backend(max_bs=2)
    rows = torch.tensor([0, 1])
    with pytest.raises(ValueError) as negative:
        b.init_decode_metadata(2, rows, torch.tensor([3, -3]))
    assert str(negative.value) == ("seq_lens: expected values in [0, 16] (the width of req_to_token), got -3 at "
                                   "index 1; pass each request's token count (cached and new)")
    with pytest.raises(ValueError, match=r"^seq_lens: expected values in \[0, 16\] .* got 4000 at index 1;"):
        b.init_decode_metadata(2, rows, torch.tensor([3, 4000]))
    with pytest.raises(ValueError) as row:
        b.init_decode_metadata(2, torch.tensor([0, 100000]), torch.tensor([3, 4]))
    assert str(row.value) == ("req_pool_indices: expected values in [0, 3] (the rows of req_to_token), got 100000 "
                              "at index 1; pass each request's row of req_to_token")
    # int64 past int32 is refused, not wrapped into int32 kv_indptr
    with pytest.raises(ValueError, match=r"^seq_lens: .* got 4294967299 at index 0;"):
        b.init_decode_metadata(2, rows, torch.tensor([2 ** 32 + 3, 4]))
    with pytest.raises(TypeError, match=r"^seq_lens: expected dtype torch.int32 or torch.int64, got torch.float32"):
        b.init_decode_metadata(2, rows, torch.tensor([3.7, 4.2]))


CALLS = {
    "init_decode_metadata": lambda b, bs, rows, lens: b.init_decode_metadata(bs, rows, lens),
    "init_forward_metadata": lambda b, bs, rows, lens: b.init_forward_metadata(types.SimpleNamespace(
        batch_size=bs, req_pool_indices=rows, seq_lens=lens, forward_mode=ForwardMode.DECODE)),
    "capture": lambda b, bs, rows, lens: b.init_forward_metadata_capture_cuda_graph(
        bs, bs, rows, lens, None, ForwardMode.DECODE, None),
    "replay": lambda b, bs, rows, lens: b.init_forward_metadata_replay_cuda_graph(
        bs, rows, lens, None, None, ForwardMode.DECODE, None, None),
}
PREFIX = {"init_forward_metadata": "forward_batch."}
BS_NAME = {"init_forward_metadata": "forward_batch.batch_size"}
ROWS_T, LENS_T = torch.tensor([0, 2]), torch.tensor([5, 9])


@pytest.mark.parametrize("entry", sorted(CALLS))
@pytest.mark.parametrize("bs, rows, lens, error, name, got", [
    (2, ROWS_T, torch.tensor([5, -1]), ValueError, "seq_lens", "expected values in [0, 16] (the width of "
     "req_to_token), got -1 at index 1"),
    (2, ROWS_T, torch.tensor([17, 1]), ValueError, "seq_lens", "expected values in [0, 16] (the width of "
     "req_to_token), got 17 at index 0"),
    (2, torch.tensor([-1, 0]), LENS_T, ValueError, "req_pool_indices", "expected values in [0, 3] (the rows of "
     "req_to_token), got -1 at index 0"),
    (2, torch.tensor([0, 4]), LENS_T, ValueError, "req_pool_indices", "expected values in [0, 3] (the rows of "
     "req_to_token), got 4 at index 1"),
    (2, ROWS_T, torch.tensor([5.0, 9.0]), TypeError, "seq_lens", "expected dtype torch.int32 or torch.int64, "
     "got torch.float32"),
    (2, ROWS_T.float(), LENS_T, TypeError, "req_pool_indices", "expected dtype torch.int32 or torch.int64"),
    (2, ROWS_T, [5, 9], TypeError, "seq_lens", "expected a torch.Tensor, got list"),
    (2, ROWS_T, LENS_T[:1], ValueError, "seq_lens", "expected at least 2 elements (one per request), got shape (1,)"),
    (2, ROWS_T, LENS_T.to("meta"), ValueError, "seq_lens", "expected a tensor on cpu, got meta"),
    (2, ROWS_T[None], LENS_T, ValueError, "req_pool_indices", "expected 1 dimensions, got shape (1, 2)"),
    (4, torch.arange(4), torch.ones(4, dtype=torch.int64), ValueError, "bs", "expected an int in [0, 3]"),
    (-1, ROWS_T, LENS_T, ValueError, "bs", "expected an int in [0, 3]"),
    (2.0, ROWS_T, LENS_T, TypeError, "bs", "expected an int, got float 2.0"),
    (True, ROWS_T, LENS_T, TypeError, "bs", "expected an int, got bool True"),
    (torch.tensor(2), ROWS_T, LENS_T, TypeError, "bs", "expected an int, got a tensor of shape ()"),
])
def test_every_metadata_entry_point_names_what_it_rejects(entry, bs, rows, lens, error, name, got):
    b = backend()
    b.init_cuda_graph_state(3, 3)
    prefix = PREFIX.get(entry, "")
    name = BS_NAME.get(entry, name) if name == "bs" else prefix + name
    with pytest.raises(error) as raised:
        CALLS[entry](b, bs, rows, lens)
    message = str(raised.value)
    assert message.startswith(f"{name}: {got}") and "\n" not in message


@pytest.mark.parametrize("entry", sorted(CALLS))
def test_the_bounds_themselves_are_accepted(entry):
    """A length of 0 and one of the full width, in the first and last rows, give the
    right attention (a zero-length request attends to nothing: zeros)."""
    b = backend()
    b.init_cuda_graph_state(3, 3)
    rows, lens = torch.tensor([3, 0]), torch.tensor([WIDTH, 0])
    CALLS[entry](b, 2, rows, lens)
    q = torch.randn(2, HQ * D)
    out = b.forward_decode(q, None, None, LAYER, None, save_kv_cache=False).view(2, HQ, D)
    slots = table()[3].long()
    ref = attention_ref(q.view(2, HQ, D)[:1], b.pool.k[slots], b.pool.v[slots], LAYER.scaling)[0]
    assert rel_err(out[0], ref) < 1e-4 and torch.equal(out[1], torch.zeros(HQ, D))


@pytest.mark.parametrize("mode, extend, extend_cpu, lens, needle", [
    (ForwardMode.EXTEND, [2, -1], None, [5, 9], r"^forward_batch.extend_seq_lens: expected values in \[0, 16\] \(the "
     r"width of req_to_token\), got -1 at index 1;"),
    (ForwardMode.EXTEND, [2, 10], None, [5, 9], r"^forward_batch.extend_seq_lens: expected at most "
     r"forward_batch.seq_lens at each index \(the new tokens are part of the length\), got 10 > 9 at index 1; "
     r"pass seq_lens as cached \+ new tokens$"),
    (ForwardMode.EXTEND, [2, 4], [2, 3], [5, 9], r"^forward_batch.extend_seq_lens: expected values in \[0, 3\] "
     r"\(the longest of forward_batch.extend_seq_lens_cpu\), got 4 at index 1;"),
    (ForwardMode.EXTEND, [2, 3], [2, 3.0], [5, 9], r"^forward_batch.extend_seq_lens_cpu\[1\]: expected an int, "
     r"got float 3.0$"),
    (ForwardMode.EXTEND, [2, 3], [2], [5, 9], r"^forward_batch.extend_seq_lens_cpu: expected at least 2 entries"),
    # the grid is sized from the host's longest: bounded by the table, never wrapped at 2**31
    (ForwardMode.EXTEND, [2, 2], [100000, 2], [5, 5], r"^forward_batch.extend_seq_lens_cpu\[0\]: expected an int in "
     r"\[0, 16\] \(the width of req_to_token\), got 100000$"),
    (ForwardMode.EXTEND, [2, 2], [2, 2**31 + 5], [5, 5], r"^forward_batch.extend_seq_lens_cpu\[1\]: expected an int "
     r"in \[0, 16\] \(the width of req_to_token\), got 2147483653$"),
    (ForwardMode.EXTEND, [2.0, 3.0], None, [5, 9], r"^forward_batch.extend_seq_lens: expected dtype torch.int32 or "
     r"torch.int64, got torch.float32"),
    (ForwardMode.EXTEND, [2, 3], None, [5, 17], r"^forward_batch.seq_lens: expected values in \[0, 16\]"),
    (ForwardMode.DRAFT_EXTEND, [2, 3], None, [5, 9], r"^forward_batch.extend_seq_lens: expected values in \[0, 2\] "
     r"\(the num_draft_tokens a draft-extend adds\), got 3 at index 1;"),
    (ForwardMode.TARGET_VERIFY, None, None, [5, 1], r"^forward_batch.seq_lens: expected values in \[2, 16\] \(at "
     r"least the 2 draft tokens verified, at most the width of req_to_token\), got 1 at index 1;"),
    ("extend", [2, 3], None, [5, 9], r"^forward_batch.forward_mode: expected a seqguard.runtime.ForwardMode, got "
     r"str 'extend'$"),
])
def test_extend_like_modes_name_what_they_reject(mode, extend, extend_cpu, lens, needle):
    b = backend(num_draft_tokens=2)
    with pytest.raises((ValueError, TypeError), match=needle):
        b.init_forward_metadata(batch([0, 1], lens, mode, extend, extend_cpu))


def test_a_capacity_below_the_worst_case_is_checked_against_the_total():
    b = backend(max_bs=2, kv_indices_capacity=20)
    b.init_decode_metadata(2, torch.tensor([0, 1]), torch.tensor([4, 16]))
    with pytest.raises(ValueError, match=r"^seq_lens: expected at most 20 in all \(kv_indices_capacity\), got 21; "
                                         r"raise kv_indices_capacity$"):
        b.init_decode_metadata(2, torch.tensor([0, 1]), torch.tensor([5, 16]))


@pytest.mark.parametrize("kwargs, error, needle", [
    (dict(num_kv_heads=0), ValueError, r"^num_kv_heads: expected an int of at least 1, got 0$"),
    (dict(head_dim=16.0), TypeError, r"^head_dim: expected an int, got float 16.0$"),
    (dict(max_bs=0), ValueError, r"^max_bs: expected an int of at least 1, got 0$"),
    (dict(num_draft_tokens="2"), TypeError, r"^num_draft_tokens: expected an int, got str '2'$"),
    (dict(req_to_token=torch.zeros(4, 16)), TypeError, r"^req_to_token: expected dtype torch.int32 or torch.int64"),
    (dict(req_to_token=torch.zeros(1, 2 ** 20, dtype=torch.int32), max_bs=4096), ValueError,
     r"^max_bs \* req_to_token.shape\[1\]: expected at most 2147483647 slots \(kv_indptr is int32\), got 4294967296;"),
])
def test_construction_names_what_it_rejects(kwargs, error, needle):
    args = dict(num_q_heads=HQ, num_kv_heads=HKV, head_dim=D, req_to_token=table(), token_to_kv_pool=Pool(),
                max_bs=2)
    with pytest.raises(error, match=needle):
        TritonAttnBackend(**{**args, **kwargs})


def test_forward_needs_its_metadata_and_a_query_of_its_batch():
    b = backend()
    q = torch.randn(2, HQ * D)
    with pytest.raises(RuntimeError, match=r"^TritonAttnBackend.forward_decode: expected decode metadata from "
                                           r"init_forward_metadata\(\) first, got none$"):
        b.forward_decode(q, None, None, LAYER, None, save_kv_cache=False)
    b.init_decode_metadata(2, torch.tensor([0, 1]), torch.tensor([3, 4]))
    with pytest.raises(ValueError, match=r"^q: expected 2 rows \(the batch of the last init_forward_metadata\), got "
                                         r"shape \(3, 32\)$"):
        b.forward_decode(torch.randn(3, HQ * D), None, None, LAYER, None, save_kv_cache=False)
    with pytest.raises(RuntimeError, match=r"forward_extend: expected extend metadata .* got decode metadata$"):
        b.forward_extend(q, q, q, LAYER, None, save_kv_cache=False)


def test_cuda_graph_hooks_need_their_state_and_stay_within_it():
    b = backend()
    with pytest.raises(RuntimeError, match=r"^TritonAttnBackend.init_forward_metadata_replay_cuda_graph: expected "
                                           r"init_cuda_graph_state\(\) first, got none$"):
        CALLS["replay"](b, 1, ROWS_T, LENS_T)
    with pytest.raises(ValueError, match=r"^max_bs: expected an int in \[1, 3\] \(the backend's max_bs\), got 4$"):
        b.init_cuda_graph_state(4, 4)
    b.init_cuda_graph_state(1, 1)
    with pytest.raises(ValueError, match=r"^bs: expected an int in \[0, 1\] \(the max_bs given to "
                                         r"init_cuda_graph_state\), got 2$"):
        CALLS["capture"](b, 2, ROWS_T, LENS_T)


def test_the_draft_backend_names_the_lengths_its_caller_passed():
    draft = TritonMultiStepDraftBackend(speculative_num_steps=3, num_q_heads=HQ, num_kv_heads=HKV, head_dim=D,
                                        req_to_token=table(), token_to_kv_pool=Pool(), max_bs=2)
    # step 2 attends to seq_lens + 2 tokens: 15 would be 17 there
    with pytest.raises(ValueError) as raised:
        draft.init_forward_metadata(batch([0, 1], [14, 15]))
    assert str(raised.value) == ("forward_batch.seq_lens: expected values in [0, 14] (the width of req_to_token, "
                                 "less the 2 tokens the last draft step adds), got 15 at index 1; pass each "
                                 "request's token count (cached and new)")
    draft.init_forward_metadata(batch([0, 1], [14, 3]))
    q = torch.randn(2, HQ * D)
    with pytest.raises(ValueError, match=r"^step: expected an int in \[0, 2\] \(one of speculative_num_steps\), "
                                         r"got -1$"):
        draft.forward_decode(q, None, None, LAYER, None, save_kv_cache=False, step=-1)
    with pytest.raises(TypeError, match=r"^step: expected an int, got bool True$"):
        draft.forward_decode(q, None, None, LAYER, None, save_kv_cache=False, step=True)
    with pytest.raises(ValueError, match=r"^speculative_num_steps: expected an int of at least 1, got 0$"):
        TritonMultiStepDraftBackend(speculative_num_steps=0, num_q_heads=HQ, num_kv_heads=HKV, head_dim=D,
                                    req_to_token=table(), token_to_kv_pool=Pool(), max_bs=2)


# ---- the ops' public entry points ------------------------------------------------------

def test_build_kv_indices_names_what_it_rejects():
    out = torch.zeros(32, dtype=torch.int32)
    indptr = torch.tensor([0, 3, 7], dtype=torch.int32)
    cases = [
        (dict(req_pool_indices=torch.tensor([0, 4])), r"^req_pool_indices: expected values in \[0, 3\]"),
        (dict(lengths=torch.tensor([3, 17])), r"^lengths: expected values in \[0, 16\] .* got 17 at index 1"),
        (dict(start=torch.tensor([0, 14])), r"^lengths: expected start \+ lengths at most 16 \(the width of "
                                            r"req_to_token\), got 18 > 16 at index 1; pass spans that end inside"),
        (dict(kv_indptr=torch.tensor([0, 30, 34])), r"^kv_indices: expected room for kv_indptr \+ lengths in its 32 "
                                                    r"entries, got 34 > 32 at index 1;"),
        (dict(kv_indptr=torch.tensor([-2, 3, 7])), r"^kv_indptr: expected values in \[0, 32\] \(the length of "
                                                   r"kv_indices\), got -2 at index 0;"),
    ]
    for change, needle in cases:
        args = dict(req_to_token=table(), req_pool_indices=torch.tensor([0, 1]), lengths=torch.tensor([3, 4]),
                    kv_indptr=indptr, kv_indices=out)
        args.update(change)
        with pytest.raises(ValueError, match=needle):
            build_kv_indices(**args)


def paged(lengths, slots=40):
    k, v = torch.randn(slots, HKV, D), torch.randn(slots, HKV, D)
    indices = torch.randperm(slots)[:sum(lengths)].to(torch.int32)
    indptr = torch.tensor([0] + [sum(lengths[:i + 1]) for i in range(len(lengths))], dtype=torch.int32)
    return k, v, indptr, indices


def test_decode_attention_names_what_it_rejects():
    k, v, indptr, indices = paged([3, 5])
    q, out = torch.randn(2, HQ, D), torch.empty(2, HQ, D)
    bad_slot = indices.clone()
    bad_slot[4] = 40
    for kv_indptr, kv_indices, needle in [
        (torch.tensor([0, 5, 3], dtype=torch.int32), indices, r"^kv_indptr: expected non-decreasing offsets, got 3 "
                                                              r"after 5 at index 2; build it as a cumsum"),
        (torch.tensor([0, 3, 9], dtype=torch.int32), indices, r"^kv_indptr: expected values in \[0, 8\] \(the length "
                                                              r"of kv_indices\), got 9 at index 2;"),
        (indptr, bad_slot, r"^kv_indices: expected values in \[0, 39\] \(the slots of the KV cache\), got 40 at "
                           r"index 4; fill req_to_token with slots of the pool$"),
    ]:
        with pytest.raises(ValueError, match=needle):
            decode_attention_fwd(q, k, v, out, kv_indptr, kv_indices, sm_scale=0.25)


def test_extend_attention_names_what_it_rejects():
    k, v, indptr, indices = paged([3, 5])
    q, k_new, v_new, out = (torch.randn(4, h, D) for h in (HQ, HKV, HKV, HQ))
    qo = torch.tensor([0, 1, 4])
    with pytest.raises(ValueError, match=r"^qo_indptr: expected values in \[0, 4\] \(the rows of q\), got 5 at "
                                         r"index 2;"):
        extend_attention_fwd(q, k_new, v_new, out, k, v, torch.tensor([0, 1, 5]), indptr, indices, sm_scale=0.25)
    with pytest.raises(ValueError, match=r"^qo_indptr: expected at most max_extend_len=2 new tokens per request, got "
                                         r"3 > 2 at index 1; raise max_extend_len or leave it None$"):
        extend_attention_fwd(q, k_new, v_new, out, k, v, qo, indptr, indices, sm_scale=0.25, max_extend_len=2)
    with pytest.raises(TypeError, match=r"^max_extend_len: expected an int, got float 3.0$"):
        extend_attention_fwd(q, k_new, v_new, out, k, v, qo, indptr, indices, sm_scale=0.25, max_extend_len=3.0)


# ---- unchecked: the kernels stay inside their tables -----------------------------------

def test_unchecked_build_writes_nothing_outside_kv_indices_and_reads_no_row_past_the_table(value_checks):
    value_checks("off")
    memory = torch.full((ROWS + 1, WIDTH), 999, dtype=torch.int32)
    memory[:ROWS] = table()
    req_to_token = memory[:ROWS]  # the row past the table holds 999: read, it would show up
    buffer = torch.full((40,), -7, dtype=torch.int32)
    kv_indices = buffer[:32]
    rows = torch.tensor([ROWS, 1, 2, -1])
    lengths = torch.tensor([4, 2 ** 40, 3, -5])
    indptr = torch.tensor([0, 4, 30, 33, 33], dtype=torch.int32)
    build_kv_indices(req_to_token, rows, lengths, indptr, kv_indices)
    assert (buffer[32:] == -7).all()  # request 2's third slot would land past kv_indices
    assert kv_indices[30:].tolist() == table()[2, :2].tolist()
    assert not (kv_indices == 999).any()  # nothing read from past the table
    assert kv_indices[4:20].tolist() == table()[1].tolist()  # a length past the width is cut to it
    assert (kv_indices[:4] == -7).all() and (kv_indices[20:30] == -7).all()  # bad rows and lengths give nothing


def test_unchecked_decode_reads_no_offset_past_kv_indices(value_checks):
    # Slots are trusted unchecked (masking them cost 12-17% on the H200); offsets are not:
    # what lies past kv_indices names slots 40-47, NaN memory inside the allocation, so
    # an offset read past kv_indices would show up in the output as NaN.
    value_checks("off")
    k, v, indptr, indices = paged([3, 5])
    k_memory, v_memory = torch.full((48, HKV, D), float("nan")), torch.full((48, HKV, D), float("nan"))
    k_memory[:40], v_memory[:40] = k, v
    index_memory = torch.arange(40, 48, dtype=torch.int32).repeat(3)
    index_memory[:8] = indices
    q = torch.randn(3, HQ, D)
    out = torch.full((3, HQ, D), float("nan"))
    kv_indptr = torch.tensor([0, 3, 8, 2 ** 30], dtype=torch.int32)  # request 2 ends far past kv_indices
    decode_attention_fwd(q, k_memory[:40], v_memory[:40], out, kv_indptr, index_memory[:8], sm_scale=0.25)
    assert torch.isfinite(out).all()  # no slot named past kv_indices was read
    first = attention_ref(q[:1], k[indices[:3].long()], v[indices[:3].long()], 0.25)[0]
    second = attention_ref(q[1:2], k[indices[3:8].long()], v[indices[3:8].long()], 0.25)[0]
    assert rel_err(out[0], first) < 1e-4 and rel_err(out[1], second) < 1e-4
    assert (out[2] == 0).all()  # its span, clamped to kv_indices, is empty


def test_unchecked_extend_writes_no_row_past_out(value_checks):
    value_checks("off")
    k, v, indptr, indices = paged([3, 5])
    q, k_new, v_new = (torch.randn(4, h, D) for h in (HQ, HKV, HKV))
    memory = torch.full((8, HQ, D), 5.0)
    out = memory[:4]
    extend_attention_fwd(q, k_new, v_new, out, k, v, torch.tensor([0, 1, 9]), indptr, indices, sm_scale=0.25)
    assert (memory[4:] == 5.0).all()


def test_unchecked_backend_survives_every_reproduction_and_keeps_the_good_requests_right(value_checks):
    value_checks("off")
    b = backend()
    q = torch.randn(3, HQ * D)
    # A negative length makes the next request's span start inside the first one's: the
    # answers are wrong there, yet nothing is read or written outside the tables.
    for rows, lens, first_right in [([0, 1, 2], [3, -3, 5], False), ([0, 1, 2], [3, 4000, 5], True),
                                    ([0, 100000, -5], [3, 4, 5], True), ([0, 1, 2], [3, 2 ** 32 + 3, 2 ** 40], True)]:
        b.init_forward_metadata(batch(rows, lens))
        out = b.forward_decode(q, None, None, LAYER, None, save_kv_cache=False).view(3, HQ, D)
        assert torch.isfinite(out).all()
        if not first_right:
            continue
        slots = table()[0, :3].long()
        ref = attention_ref(q.view(3, HQ, D)[:1], b.pool.k[slots], b.pool.v[slots], LAYER.scaling)[0]
        assert rel_err(out[0], ref) < 1e-4


# ---- the default path reads no device value --------------------------------------------

class _Recorder:
    def __init__(self):
        self.launches = 0

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.launches += 1
        return launch


@pytest.fixture
def meta_backend(monkeypatch):
    """A backend whose tables live on `meta`, a device whose values cannot be read
    (each read raises), with the kernels' launches recorded instead of run."""
    recorders = {}
    for module, name in ((kv_indices_module, "_BUILD_KV_INDICES"), (decode_module, "_DECODE"),
                         (decode_module, "_MERGE"), (extend_module, "_EXTEND")):
        recorders[name] = _Recorder()
        monkeypatch.setattr(module, name, recorders[name])
    b = TritonAttnBackend(num_q_heads=HQ, num_kv_heads=HKV, head_dim=D, max_bs=2,
                          req_to_token=torch.zeros(ROWS, WIDTH, dtype=torch.int32, device="meta"),
                          token_to_kv_pool=Pool(device="meta"), num_draft_tokens=2)
    return b, recorders


def _meta_steps(b):
    rows, lens = torch.zeros(2, dtype=torch.int64, device="meta"), torch.zeros(2, dtype=torch.int64, device="meta")
    q = torch.zeros(2, HQ * D, device="meta")
    b.init_decode_metadata(2, rows, lens)
    b.forward_decode(q, None, None, LAYER, None, save_kv_cache=False)
    fb = batch(rows, lens, ForwardMode.EXTEND, extend=lens, extend_cpu=[1, 1])
    b.init_forward_metadata(fb)
    b.forward_extend(q, q.view(2, HQ, D)[:, :HKV], q.view(2, HQ, D)[:, :HKV], LAYER, fb, save_kv_cache=False)
    b.init_forward_metadata(batch(rows, lens, ForwardMode.TARGET_VERIFY))
    b.init_cuda_graph_state(2, 2)
    b.init_forward_metadata_replay_cuda_graph(2, rows, lens, None, None, ForwardMode.DECODE, None, None)


def test_by_default_no_device_value_is_read_on_any_entry_point(meta_backend, value_checks):
    value_checks("auto")
    b, recorders = meta_backend
    _meta_steps(b)  # a read of any meta value would raise
    assert [recorders[n].launches for n in ("_BUILD_KV_INDICES", "_DECODE", "_EXTEND")] == [4, 1, 1]


def test_switched_on_the_checks_read_device_values(meta_backend, value_checks):
    value_checks("on")
    b, _ = meta_backend
    with pytest.raises(NotImplementedError, match="nonzero"):
        _meta_steps(b)


# ---- flags: True or False --------------------------------------------------------------

@pytest.mark.parametrize("value, got", [("False", "str 'False'"), (0, "int 0"), (None, "NoneType None"),
                                        (torch.tensor(False), "a Tensor of shape ()")])
def test_a_backend_flag_that_is_not_a_bool_is_refused_at_class_creation(value, got):
    with pytest.raises(TypeError) as raised:
        type("Sloppy", (AttentionBackend,), {"needs_cpu_seq_lens": value})
    assert str(raised.value) == (f"{__name__}.Sloppy.needs_cpu_seq_lens: expected True or False, got {got}; "
                                 f"declare `needs_cpu_seq_lens = True` if the backend reads seq_lens_cpu/"
                                 f"seq_lens_sum, else `needs_cpu_seq_lens = False`")


class _FromElsewhere:
    """A backend that is no AttentionBackend (SGLang's own): only the aggregator sees it."""

    def __init__(self, flag):
        self.needs_cpu_seq_lens = flag


@pytest.mark.parametrize("flag", ["False", "True", 1, torch.tensor(False), numpy.int64(0)])
def test_the_aggregator_refuses_a_flag_that_is_not_a_bool_naming_the_class(flag):
    with pytest.raises(TypeError, match=r"^_FromElsewhere.needs_cpu_seq_lens: expected True or False, got "):
        decide_needs_cpu_seq_lens(ServerArgs(), [_FromElsewhere(flag)])


def test_numpy_bools_are_bools_and_a_property_is_read_when_deciding():
    assert decide_needs_cpu_seq_lens(ServerArgs(), [_FromElsewhere(numpy.bool_(False))]) is False
    assert decide_needs_cpu_seq_lens(ServerArgs(), [_FromElsewhere(numpy.bool_(True))]) is True

    class Computed(AttentionBackend):
        @property
        def needs_cpu_seq_lens(self):
            return self.answer

    backend_ = Computed()
    backend_.answer = "no"
    with pytest.raises(TypeError, match=r"^Computed.needs_cpu_seq_lens: expected True or False, got str 'no'"):
        decide_needs_cpu_seq_lens(ServerArgs(), [backend_])
    backend_.answer = False
    assert decide_needs_cpu_seq_lens(ServerArgs(), [backend_]) is False


def test_future_map_takes_a_bool_or_a_decision_for_its_flag():
    with pytest.raises(TypeError, match=r"^FutureMap: needs_cpu_seq_lens: expected True or False \(or the Decision of "
                                        r"explain_needs_cpu_seq_lens\), got str 'False'; pass decide_needs"):
        FutureMap("cpu", 4, needs_cpu_seq_lens="False")
    with pytest.raises(TypeError, match=r"^FutureMap: needs_cpu_seq_lens: .* got int 0;"):
        FutureMap("cpu", 4, needs_cpu_seq_lens=0)
    with pytest.raises(TypeError, match=r"^FutureMap: debug: expected True, False or None, got str '0'$"):
        FutureMap("cpu", 4, debug="0")
    with pytest.raises(TypeError, match=r"^req_pool_size: expected an int, got float 4.0$"):
        FutureMap("cpu", 4.0)
    off = explain_needs_cpu_seq_lens(ServerArgs(), [_FromElsewhere(False)])
    assert FutureMap("cpu", 4, needs_cpu_seq_lens=off).needs_cpu_seq_lens is False
    assert FutureMap("cpu", 4, needs_cpu_seq_lens=numpy.bool_(True)).needs_cpu_seq_lens is True


# ---- FutureMap: lengths are ints that fit, rows are its own ----------------------------

def _batch_of(rows):
    rows = torch.tensor(rows)
    return types.SimpleNamespace(spec_info=SpecInfo(future_indices=rows), req_pool_indices=rows.clone())


@pytest.mark.parametrize("dtype, rows, lens, error, needle", [
    (torch.int64, [0, 1], torch.tensor([3.7, 2.0]), TypeError, r"^new_seq_lens: expected dtype torch.int32 or "
     r"torch.int64, got torch.float32"),
    (torch.int32, [0, 1], torch.tensor([3, 2 ** 33]), ValueError, r"^new_seq_lens: expected values in \[0, "
     r"2147483647\] \(a length the torch.int32 buffer holds\), got 8589934592 at index 1;"),
    (torch.int64, [0, 1], torch.tensor([3, -1]), ValueError, r"^new_seq_lens: expected values in \[0, "),
    (torch.int64, [0, 4], torch.tensor([3, 1]), ValueError, r"^future_indices: expected values in \[0, 3\] \(the "
     r"FutureMap's req_pool_size rows\), got 4 at index 1; pass each request's FutureMap row$"),
])
def test_future_map_publish_refuses_what_it_would_wrap_truncate_or_write_past(dtype, rows, lens, error, needle):
    fm = FutureMap("cpu", 4, needs_cpu_seq_lens=False, dtype=dtype)
    with pytest.raises(error, match=needle):
        fm.publish(torch.tensor(rows), lens)
    assert fm.seq_lens_buf.tolist() == [0, 0, 0, 0]  # nothing written


def test_future_map_resolve_refuses_a_row_past_its_buffer():
    fm = FutureMap("cpu", 4, needs_cpu_seq_lens=False)
    fm.publish(torch.tensor([0]), torch.tensor([3]))
    with pytest.raises(ValueError, match=r"^batch.spec_info.future_indices: expected values in \[0, 3\] .* got -1 "
                                         r"at index 1;"):
        fm.resolve_seq_lens_cpu(_batch_of([0, -1]))


# ---- totals: host counts, never truncated -----------------------------------------------

@pytest.mark.parametrize("call, error, needle", [
    (lambda: decode_total_seq_lens(types.SimpleNamespace(seq_lens_sum=27.9)), TypeError,
     r"^batch.seq_lens_sum: expected an int, got float 27.9$"),
    (lambda: decode_total_seq_lens(types.SimpleNamespace(seq_lens_sum=torch.tensor(27))), TypeError,
     r"^batch.seq_lens_sum: expected an int, got a Tensor$"),
    (lambda: decode_total_seq_lens(types.SimpleNamespace(seq_lens_sum=-1)), ValueError,
     r"^batch.seq_lens_sum: expected a count of at least 0, got -1$"),
    (lambda: draft_seq_lens_sum(types.SimpleNamespace(seq_lens_sum=None, reqs=[1]), 4096.5, False), TypeError,
     r"^max_context_len: expected an int, got float 4096.5$"),
    (lambda: draft_seq_lens_sum(types.SimpleNamespace(seq_lens_sum=None, reqs=[1]), 4096, "False"), TypeError,
     r"^tree_mask_preallocated: expected True or False, got str 'False'$"),
])
def test_totals_take_host_counts_only(call, error, needle):
    with pytest.raises(error, match=needle):
        call()


def test_totals_still_take_numpy_counts():
    assert decode_total_seq_lens(types.SimpleNamespace(seq_lens_sum=numpy.int64(27))) == 27
    assert draft_seq_lens_sum(types.SimpleNamespace(seq_lens_sum=None, reqs=[1, 2]), numpy.int32(8), False) == 16


# ---- on a GPU ------------------------------------------------------------------------

def _cuda_backend():
    b = backend(device="cuda")
    q = torch.randn(2, HQ * D, device="cuda")
    return b, q


@pytest.mark.gpu
def test_gpu_default_checks_never_sync_and_switched_on_they_do(value_checks):
    b, q = _cuda_backend()
    rows, lens = torch.tensor([0, 1], device="cuda"), torch.tensor([3, 4], device="cuda")
    b.init_decode_metadata(2, rows, lens)
    b.forward_decode(q, None, None, LAYER, None, save_kv_cache=False)  # compile outside the check
    torch.cuda.synchronize()
    for mode, syncs in (("auto", False), ("on", True)):
        value_checks(mode)
        torch.cuda.set_sync_debug_mode("error")
        try:
            b.init_decode_metadata(2, rows, lens)
            b.forward_decode(q, None, None, LAYER, None, save_kv_cache=False)
            synced = False
        except RuntimeError as error:
            assert "synchroniz" in str(error).lower(), error
            synced = True
        finally:
            torch.cuda.set_sync_debug_mode(0)
        assert synced is syncs, mode


@pytest.mark.gpu
def test_gpu_switched_on_bad_device_values_are_one_value_error(value_checks):
    value_checks("on")
    b, _ = _cuda_backend()
    with pytest.raises(ValueError, match=r"^seq_lens: expected values in \[0, 16\] .* got -3 at index 1;"):
        b.init_decode_metadata(2, torch.tensor([0, 1], device="cuda"), torch.tensor([3, -3], device="cuda"))
    with pytest.raises(ValueError, match=r"^req_pool_indices: expected values in \[0, 3\] .* got 100000 at index 1;"):
        b.init_decode_metadata(2, torch.tensor([0, 100000], device="cuda"), torch.tensor([3, 4], device="cuda"))


@pytest.mark.gpu
def test_gpu_unchecked_bad_values_never_fault_the_device(value_checks):
    """The reproductions run on the GPU with the default switch: no illegal memory
    access (a fault would surface at the synchronize), finite outputs, the good
    request right."""
    value_checks("auto")
    b, q = _cuda_backend()
    for rows, lens in [([0, 1], [3, -3]), ([0, 1], [3, 4000]), ([0, 100000], [3, 4]), ([0, 1], [3, 2 ** 40])]:
        b.init_decode_metadata(2, torch.tensor(rows, device="cuda"), torch.tensor(lens, device="cuda"))
        out = b.forward_decode(q, None, None, LAYER, None, save_kv_cache=False).view(2, HQ, D)
        torch.cuda.synchronize()
        assert torch.isfinite(out).all()
        slots = table("cuda")[0, :3].long()
        ref = attention_ref(q.view(2, HQ, D)[:1], b.pool.k[slots], b.pool.v[slots], LAYER.scaling)[0]
        assert rel_err(out[0], ref) < 3e-3


@pytest.mark.gpu
def test_gpu_switched_on_checks_stand_aside_inside_a_graph_capture(value_checks):
    value_checks("on")
    b, q = _cuda_backend()
    b.init_cuda_graph_state(2, 2)
    rows, lens = torch.tensor([0, 1], device="cuda"), torch.tensor([3, 4], device="cuda")
    b.init_forward_metadata_capture_cuda_graph(2, 2, rows, lens, None, ForwardMode.DECODE, None)
    b.forward_decode(q, None, None, LAYER, None, save_kv_cache=False)  # compile outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        b.init_forward_metadata_capture_cuda_graph(2, 2, rows, lens, None, ForwardMode.DECODE, None)
        out = b.forward_decode(q, None, None, LAYER, None, save_kv_cache=False)
    lens.copy_(torch.tensor([5, 1], device="cuda"))
    b.init_forward_metadata_replay_cuda_graph(2, rows, lens, None, None, ForwardMode.DECODE, None, None)  # checked
    graph.replay()
    torch.cuda.synchronize()
    slots = table("cuda")[0, :5].long()
    ref = attention_ref(q.view(2, HQ, D)[:1], b.pool.k[slots], b.pool.v[slots], LAYER.scaling)[0]
    assert rel_err(out.view(2, HQ, D)[0], ref) < 3e-3
