"""The forward modes a backend is asked to plan for (SGLang's `ForwardMode`, the ones
the Triton backends serve)."""

from __future__ import annotations

import enum


class ForwardMode(enum.Enum):
    DECODE = "decode"
    EXTEND = "extend"
    TARGET_VERIFY = "target_verify"
    DRAFT_EXTEND = "draft_extend"

    @property
    def is_decode(self) -> bool:
        return self is ForwardMode.DECODE
