"""Which attention backends a speculative worker uses; the scheduler hands this
list to `decide_needs_cpu_seq_lens`."""

from __future__ import annotations

import dataclasses
from typing import Any, List, Optional


@dataclasses.dataclass
class SpecWorkerBackends:
    target: Any
    draft: Optional[Any] = None
    draft_extend: Optional[Any] = None

    @property
    def attn_backends(self) -> List[Optional[Any]]:
        """Every slot, unset ones included (the aggregator skips `None`)."""
        return [self.target, self.draft, self.draft_extend]
