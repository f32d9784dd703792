"""Every rule, in code order. A code is never reused once released."""

from seqguard.lint.rules.backend_without_flag import BackendWithoutFlag
from seqguard.lint.rules.unguarded_mirror_read import UnguardedMirrorRead
from seqguard.lint.rules.opt_out_reads_mirror import OptOutReadsMirror
from seqguard.lint.rules.opt_out_syncs_lengths import OptOutSyncsLengths
from seqguard.lint.rules.mirror_truthiness import MirrorTruthiness
from seqguard.lint.rules.backend_could_opt_out import BackendCouldOptOut
from seqguard.lint.rules.unused_suppression import UnusedSuppression
from seqguard.lint.rules.flag_is_a_method import FlagIsAMethod
from seqguard.lint.rules.assert_mirror_not_none import AssertMirrorNotNone
from seqguard.lint.rules.buffer_refilled_only_with_mirror import BufferRefilledOnlyWithMirror

RULES = (
    BackendWithoutFlag,
    UnguardedMirrorRead,
    OptOutReadsMirror,
    OptOutSyncsLengths,
    MirrorTruthiness,
    BackendCouldOptOut,
    UnusedSuppression,
    FlagIsAMethod,
    AssertMirrorNotNone,
    BufferRefilledOnlyWithMirror,
)
RULES_BY_CODE = {rule.CODE: rule for rule in RULES}

__all__ = ["RULES", "RULES_BY_CODE"]
