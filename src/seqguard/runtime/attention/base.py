"""The attention-backend base: capabilities are class attributes with safe defaults.

`needs_cpu_seq_lens` defaults to True (the scheduler keeps producing the host mirror).
A backend opts out only when every metadata path, CUDA-graph replay included, reads
device tensors alone. Forgetting to say which is reported when the class is created.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Optional

FLAG = "needs_cpu_seq_lens"
STRICT_ENV = "SEQGUARD_STRICT"


class UndeclaredFlagWarning(UserWarning):
    """An attention backend inherits `needs_cpu_seq_lens` instead of declaring it."""


def _declares_flag(cls: type) -> bool:
    if FLAG in cls.__dict__ or FLAG in cls.__dict__.get("__annotations__", {}):
        return True
    init = cls.__dict__.get("__init__")
    code = getattr(init, "__code__", None)
    # `self.needs_cpu_seq_lens = ...` in __init__ puts the name in the code's attribute names.
    return code is not None and FLAG in code.co_names


def is_flag_value(value: Any) -> bool:
    """True or False: a Python bool, or numpy's bool scalar (a host value that converts
    exactly). Anything else is refused where a flag is read: "False" and 0 are
    truthy-or-not by accident, and a torch bool tensor's truth on a GPU is a sync."""
    kind = type(value)
    return kind is bool or (kind.__module__ == "numpy" and kind.__name__ in ("bool_", "bool"))


def flag_error(owner: str, value: Any) -> Optional[TypeError]:
    """The TypeError for a `needs_cpu_seq_lens` that is not True or False, naming its
    owner (a backend class); None when it is one."""
    if is_flag_value(value):
        return None
    shape = getattr(value, "shape", None)
    got = f"a {type(value).__name__} of shape {tuple(shape)}" if shape is not None else \
        f"{type(value).__name__} {repr(value)[:60]}"
    return TypeError(f"{owner}.{FLAG}: expected True or False, got {got}; declare `{FLAG} = True` if the backend "
                     f"reads seq_lens_cpu/seq_lens_sum, else `{FLAG} = False`")


def _inherited_from(cls: type) -> str:
    for base in cls.__mro__[1:]:
        if FLAG in base.__dict__:
            return base.__name__
    return "AttentionBackend"


class AttentionBackend:
    """Base class of attention backends.

    Subclasses declare `needs_cpu_seq_lens` in their class body (or set it in
    `__init__`): True if any method reads `seq_lens_cpu` / `seq_lens_sum`.
    """

    # Safe default: the mirror is produced; opting out is a per-backend promise.
    needs_cpu_seq_lens: bool = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = cls.__dict__.get(FLAG, True)
        # a property or other descriptor answers when read: the aggregator checks that answer
        if not hasattr(declared, "__get__"):
            error = flag_error(f"{cls.__module__}.{cls.__qualname__}", declared)
            if error is not None:
                raise error
        if _declares_flag(cls):
            return
        inherited = getattr(cls, FLAG, True)
        message = (
            f"{cls.__module__}.{cls.__qualname__}: expected an explicit `needs_cpu_seq_lens`, "
            f"got the value {inherited!r} inherited from {_inherited_from(cls)}; declare "
            f"`needs_cpu_seq_lens = True` in the class body if it reads seq_lens_cpu/seq_lens_sum, "
            f"else `needs_cpu_seq_lens = False` (`seqguard lint --fix` writes the inherited value)"
        )
        if os.environ.get(STRICT_ENV, "") not in ("", "0"):
            raise TypeError(message)
        warnings.warn(message, UndeclaredFlagWarning, stacklevel=2)

    # ---- metadata ----------------------------------------------------------------
    def init_forward_metadata(self, forward_batch: Any) -> None:
        """Build this step's attention metadata from `forward_batch`."""
        raise NotImplementedError

    # ---- CUDA graphs ---------------------------------------------------------------
    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int) -> None:
        """Preallocate every buffer that captured graphs read."""
        raise NotImplementedError

    def init_forward_metadata_capture_cuda_graph(self, bs: int, num_tokens: int, req_pool_indices: Any,
                                                 seq_lens: Any, encoder_lens: Optional[Any],
                                                 forward_mode: Any, spec_info: Optional[Any]) -> None:
        raise NotImplementedError

    def init_forward_metadata_replay_cuda_graph(self, bs: int, req_pool_indices: Any, seq_lens: Any,
                                                seq_lens_sum: Optional[int], encoder_lens: Optional[Any],
                                                forward_mode: Any, spec_info: Optional[Any],
                                                seq_lens_cpu: Optional[Any]) -> None:
        """Refresh captured metadata in place. `seq_lens_sum` and `seq_lens_cpu` are None
        whenever no active backend needs the host mirror."""
        raise NotImplementedError

    def get_cuda_graph_seq_len_fill_value(self) -> int:
        return 1

    # ---- compute -------------------------------------------------------------------
    def forward_decode(self, q: Any, k: Any, v: Any, layer: Any, forward_batch: Any, save_kv_cache: bool = True) -> Any:
        raise NotImplementedError

    def forward_extend(self, q: Any, k: Any, v: Any, layer: Any, forward_batch: Any, save_kv_cache: bool = True) -> Any:
        raise NotImplementedError
