"""Tensor parallelism for the demo engine: which slice of the heads and of the MLP a
rank holds, the all-reduce that sums the ranks' partial outputs, and joining the
process group (torchrun's environment variables, which the `--tp` launcher sets too).

Megatron-style: the QKV and MLP-up projections are split by output rows (column
parallel), the attention-output and MLP-down projections by input columns (row
parallel), so each layer needs one all-reduce after attention and one after the MLP.
Embeddings and the LM head stay whole on every rank: every rank computes the full
logits from the same all-reduced hidden state and takes the same argmax, so sampling
needs no broadcast.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
from typing import Any, Optional

import torch

# torchrun's variables; the `--tp` launcher sets the same ones for the ranks it spawns.
ENV_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


class TensorParallelError(ValueError):
    """A model or a launch that tensor parallelism cannot serve (usage error)."""


@dataclasses.dataclass(frozen=True)
class TensorParallel:
    """This rank's place in the tensor-parallel group (size 1: no group, no collectives)."""

    rank: int = 0
    size: int = 1
    group: Any = None

    def shard(self, total: int) -> slice:
        """This rank's contiguous slice of `total` rows (heads, MLP columns)."""
        per = total // self.size
        return slice(self.rank * per, (self.rank + 1) * per)

    def kv_shard(self, total: int) -> slice:
        """This rank's KV heads. With more ranks than KV heads each rank keeps one head
        and the ranks that share it hold copies (SGLang's and vLLM's replication): the
        query heads a rank holds all read that one head, since `size` is a multiple of
        `total` and so each KV head's query group splits evenly across its replicas."""
        if self.size <= total:
            return self.shard(total)
        head = self.rank // (self.size // total)
        return slice(head, head + 1)

    def local_kv_heads(self, total: int) -> int:
        heads = self.kv_shard(total)
        return heads.stop - heads.start

    def all_reduce(self, partial: torch.Tensor) -> torch.Tensor:
        """Sum the ranks' partial outputs in place. On CUDA it is queued on the current
        stream's order (NCCL waits for it, and CUDA-graph capture records it); the host
        does not wait."""
        if self.size > 1:
            import torch.distributed as dist

            dist.all_reduce(partial, group=self.group)
        return partial


def check_divisible(size: int, num_q_heads: int, num_kv_heads: int, intermediate_size: int) -> None:
    """Every reason a model cannot be split `size` ways, at once."""
    if size == 1:
        return
    problems = [f"{name}: expected a multiple of --tp {size}, got {value}"
                for name, value in (("num_q_heads", num_q_heads), ("intermediate_size", intermediate_size))
                if value % size]
    if num_kv_heads % size and size % num_kv_heads:
        # fewer KV heads than ranks are replicated, when each is shared by equally many
        problems.insert(1, f"num_kv_heads: expected a multiple or a divisor of --tp {size}, got {num_kv_heads}")
    if problems:
        raise TensorParallelError("; ".join(problems) + "; choose a --tp that divides the heads (--heads, "
                                  "--kv-heads) and the MLP width")


def launched_by_torchrun() -> bool:
    """Whether this process is one rank of a launch (torchrun or the `--tp` launcher)."""
    return "WORLD_SIZE" in os.environ


def join_from_env(tp: int, device_type: str, timeout_s: float) -> tuple[TensorParallel, torch.device]:
    """Join the process group described by torchrun's variables: NCCL on CUDA (one GPU
    per LOCAL_RANK), gloo on the CPU. Every collective, the decision's OR-reduce
    included, fails after `timeout_s` instead of waiting forever for a rank."""
    import torch.distributed as dist

    missing = [name for name in ENV_VARS if name not in os.environ]
    if missing:
        raise TensorParallelError(f"tensor-parallel launch: expected torchrun's variables {', '.join(ENV_VARS)}, "
                                  f"got none for {', '.join(missing)}; launch with torchrun or let --tp spawn "
                                  f"the ranks (unset WORLD_SIZE)")
    world = int(os.environ["WORLD_SIZE"])
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    if world != tp:
        raise TensorParallelError(f"--tp: expected the launch's WORLD_SIZE ({world}), got {tp}; "
                                  f"pass --tp {world} or launch {tp} ranks")
    timeout = datetime.timedelta(seconds=timeout_s)
    if device_type == "cuda":
        # The device tool keeps NVLink multicast (NVLS) off; never turn it back on here.
        os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
        if local_rank >= torch.cuda.device_count():
            raise TensorParallelError(f"LOCAL_RANK: expected below the {torch.cuda.device_count()} visible GPUs, "
                                      f"got {local_rank}; launch at most one rank per GPU")
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        # device_id binds the communicator to this GPU at once (no guessing later).
        dist.init_process_group("nccl", init_method="env://", rank=rank, world_size=world, timeout=timeout,
                                device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world, timeout=timeout)
    return TensorParallel(rank=rank, size=world, group=None), device


def leave() -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def gather_objects(tp: TensorParallel, value: Any) -> list:
    """Every rank's `value`, in rank order (after the timed runs: it synchronises)."""
    if tp.size == 1:
        return [value]
    import torch.distributed as dist

    out: list[Optional[Any]] = [None] * tp.size
    dist.all_gather_object(out, value, group=tp.group)
    return out
