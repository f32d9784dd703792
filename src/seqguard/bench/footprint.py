"""How much memory a bench workload needs, from its shapes, before anything is
allocated, and whether that fits where it will run.

What dominates is the KV cache: every pool row gets `max_context_len` token slots in
the target's and the draft's pools (K and V, every layer), so the gpu-bound preset asks
for about 57 GiB on one rank. The pools are filled with `randn(...) * 0.1`, which holds
one extra buffer of a layer's size while it is made. Weights are drawn in float32 on
the host one layer at a time, then cast. The largest activations are those of the
first prefill, which runs every prompt admitted at step 0 through the MLP at once.
The figure is a lower bound: allocator slack, Triton's interpreter and CUDA's own
context come on top.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Dict

import torch

from seqguard.bench.tp import TensorParallel

GIB = 1 << 30


@dataclasses.dataclass(frozen=True)
class Footprint:
    parts: Dict[str, int]          # bytes, per rank

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    def describe(self) -> str:
        return ", ".join(f"{name} {size / GIB:.1f}" for name, size in self.parts.items())


def estimate(workload, tp_size: int = 1) -> Footprint:
    """Bytes one rank allocates for `workload` (a serving.bench.Workload)."""
    from seqguard.bench.runner import pool_rows

    m = workload.model
    item = torch.empty((), dtype=m.dtype).element_size()
    h, d = m.hidden_size, m.head_dim
    kv_heads = TensorParallel(size=tp_size).local_kv_heads(m.num_kv_heads)  # replicated past one per rank
    q_out, kv_out = m.num_q_heads * d // tp_size, kv_heads * d
    inter = m.intermediate_size // tp_size
    rows = pool_rows(workload)
    slots = rows * m.max_context_len + 1
    kv_layer = slots * kv_out * item                     # one K or one V buffer of one layer
    per_layer = (q_out + 2 * kv_out) * h + h * q_out + 2 * inter * h
    full_layer = (m.num_q_heads * d + 2 * m.num_kv_heads * d) * h + h * m.num_q_heads * d + 2 * m.intermediate_size * h
    arrivals = workload.arrivals().get(0, [])[: workload.max_running]
    prefill_tokens = sum(len(r.origin_input_ids) for r in arrivals)
    return Footprint({
        "KV caches": 2 * (m.num_layers + workload.draft_layers) * kv_layer,
        "weights": (m.num_layers * per_layer + (m.vocab_size + m.max_context_len + 64) * h) * item,
        "request table": rows * m.max_context_len * 4,
        # hidden state, residual, norm, QKV, attention output, MLP up and its GELU
        "first prefill": prefill_tokens * (3 * h + q_out + 2 * kv_out + q_out + 2 * inter) * item,
        # one KV buffer being scaled by randn(...) * 0.1, one layer drawn in float32
        "while building": kv_layer + full_layer * 4,
    })


def available_bytes(device: torch.device) -> int:
    """Free memory where the workload runs: the GPU's free memory, or the host's
    MemAvailable (what the kernel can hand out without swapping or killing)."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


class WontFitError(ValueError):
    """The workload needs more memory than the device has free (a usage error)."""


def check_fits(workload, device: torch.device, tp_size: int = 1, ranks_sharing_device: int = 1) -> Footprint:
    """Raise WontFitError, with the estimate, instead of being killed halfway through.
    On the CPU every rank shares the host's memory (`ranks_sharing_device`)."""
    footprint = estimate(workload, tp_size)
    need = footprint.total * ranks_sharing_device
    have = available_bytes(device)
    if need > have:
        where = "the host (MemAvailable)" if device.type == "cpu" else f"{device} (free)"
        # the total, then what makes it: one rank's share times the ranks on this device
        ranks = (f" ({footprint.total / GIB:.1f} GiB x {ranks_sharing_device} ranks)"
                 if ranks_sharing_device > 1 else "")
        raise WontFitError(f"memory: expected the workload to fit in the {have / GIB:.1f} GiB free on {where}, got an "
                           f"estimate of at least {need / GIB:.1f} GiB{ranks} (GiB per rank: {footprint.describe()}); "
                           f"use a smaller preset, fewer --batch/--requests, or a device with more memory")
    return footprint
