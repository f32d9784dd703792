"""LibCST codemods that apply a rule's fix in bulk. Each reports its result as a value
(changed / unchanged / skipped with a reason), never by crashing the run.

`GuardMirrorReads` is importable from here, and `python -m libcst.tool codemod
guard_mirror_reads.GuardMirrorReads PATH` finds it once `seqguard.codemods` is listed
under `modules` in `.libcst.codemod.yaml`."""

from seqguard.codemods.guard_mirror_reads import GuardMirrorReads

__all__ = ["GuardMirrorReads"]
