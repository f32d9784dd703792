"""Is this persistent buffer fresh (SG010)? A buffer its class hierarchy refills from
a mirror only under that mirror's None test holds last step's lengths when the mirror
was skipped; a read of it on the per-step path, where nothing says the mirror was
present, reads stale values."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from seqguard.lint.contract.types import UNKNOWN
from seqguard.lint.model import MirrorAccess
from seqguard.lint.questions.per_step_sync import OffStepAtCalls

if TYPE_CHECKING:
    from seqguard.lint.contract.model import Contract


class FreshBuffer:
    """The verdict on a read of a persistent buffer (SG010)."""

    def __init__(self, contract: "Contract") -> None:
        self.contract = contract
        self.point = contract.point
        self._fills_by_storage: Optional[dict[tuple[str, str], list[tuple[str, MirrorAccess]]]] = None
        self._tails: Optional[set[str]] = None

    def prepare(self) -> None:
        """The refills of the whole project, once, before forked judges share them."""
        if self.contract.whole_project:
            self._fills()
            self._fill_tails()

    def stale(self, relpath: str, access: MirrorAccess) -> Optional[tuple[str, str]]:
        """(source, where) when `access` reads a persistent buffer (a type no store makes
        None) that its class hierarchy refills from a mirror only under that mirror's
        None test, and nothing on the read's path says the mirror was present."""
        point = self.point
        if access.class_qualname is None or not self.contract.whole_project or access.guarded or access.known:
            return None
        if _tail(access.mirror_key) not in self._fill_tails():
            return None  # no refill of a buffer spelled like this anywhere: not worth typing
        types = point.receiver_types(relpath, access)
        if UNKNOWN in types or not types or any(point.nullability.why_none(t, access.attr) is not None
                                                for t in types):
            return None
        if point.is_capture_function(access.scope):
            return None  # capture: the buffer is being built, the skip does not run there
        # a buffer type every refill of which waits for the mirror (one refilled on some
        # path whatever the mirror is not this defect)
        fills = next((found for t in sorted(types) for found in [self._fills().get((t, access.attr), [])]
                      if found and all(fill.guarded for _, fill in found)), None)
        if not fills:
            return None
        if point.by_path(access.path, relpath, access.class_qualname, scope=access.scope) is not None \
                or point.sync_allowed_by_path(access.path, relpath, access.class_qualname, scope=access.scope) \
                is not None:
            return None  # read where a mirror was tested, or where the skip cannot be
        function, _ = self.contract.sites.holder(relpath, access.scope, "")
        if function is not None:
            modes = point.possible_modes(access.path, relpath, access.class_qualname, access.scope)
            if self.contract.fixpoint.why_safe(function, OffStepAtCalls(modes)).holds:
                return None  # only ever called at capture, or where the skip cannot be
        fill_relpath, fill = fills[0]
        return fill.mirror_key, f"{fill_relpath}:{fill.line}"

    def _fill_tails(self) -> set[str]:
        """`buffers.seq_lens_cpu` for every buffer some mirror read fills (the last two
        names of what it writes into)."""
        if self._tails is None:
            self._tails = {_tail(a.fills) for _, facts in self.contract.index.parsed_files() for a in facts.accesses
                           if a.fills is not None}
        return self._tails

    def _fills(self) -> dict[tuple[str, str], list[tuple[str, MirrorAccess]]]:
        """(buffer type, attribute) -> every mirror read that fills that buffer
        (`buffers.seq_lens_cpu[:n].copy_(fb.seq_lens_cpu)`), the buffer typed from the
        function it is written in."""
        if self._fills_by_storage is None:
            point = self.point
            self._fills_by_storage = {}
            for relpath, facts in self.contract.index.parsed_files():
                for a in facts.accesses:
                    if a.fills is None or "." not in a.fills or a.fills.rsplit(".", 1)[1] not in point.mirrors:
                        continue
                    holder, attr = a.fills.rsplit(".", 1)
                    for t in point.expression_types(relpath, a.line, a.class_qualname, holder) - {UNKNOWN}:
                        self._fills_by_storage.setdefault((t, attr), []).append((relpath, a))
        return self._fills_by_storage


def _tail(key: str) -> str:
    return ".".join(key.split(".")[-2:])
