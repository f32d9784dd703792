"""Which reads to guard, and where a host-sync fallback must not be written.

The sites are exactly lint's SG002/SG003 findings. A read inside a backend whose
effective `needs_cpu_seq_lens` is False or conditional runs in code that opted out of
the mirror to avoid a device-to-host sync: a fallback that pulls the lengths to the
host there would bring the sync back (lint's SG004), so such a site is marked
`no_sync` with the reason.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Optional

from seqguard.codemods.owners import Owners
from seqguard.config import Config
from seqguard.lint.analysis.source import is_suppressed
from seqguard.lint.index import ResolvedClass
from seqguard.lint.model import FlagState, MirrorAccess, flag_words
from seqguard.lint.rule import FileContext
from seqguard.lint.rules import OptOutReadsMirror, UnguardedMirrorRead

FIXED_CODES = (UnguardedMirrorRead.CODE, OptOutReadsMirror.CODE)


@dataclasses.dataclass(frozen=True)
class ReadToGuard:
    """A read lint reported that the codemod is to guard (its output is a
    `guard_mirror_reads.GuardedRead`), with what the project says about it."""
    access: MirrorAccess
    no_sync: Optional[str] = None   # why a host-sync fallback must not go here
    # why no fallback from the object's device attribute can go here (its class lacks it)
    no_device: Optional[str] = None
    # (name, mirror key) of the file's local aliases of mirrors (`buf = self.seq_lens_cpu`),
    # reported or not: writing into one fills existing storage
    aliases: tuple[tuple[str, str], ...] = ()



def project_sites(ctx: FileContext, positions: Iterable[tuple[int, int]],
                  owners: Optional[Owners] = None) -> list[ReadToGuard]:
    """Sites at `positions` (1-based line, 0-based byte column: lint's diagnostics),
    judged with the whole project's hierarchy. Pass one `Owners` for every file of a
    run: it keeps what it learned of the project's classes."""
    wanted = set(positions)
    sites = []
    owners = owners or Owners(ctx.index)
    aliases = tuple(sorted({(a.subject, a.alias_of) for a in ctx.facts.accesses if a.alias_of is not None}))
    for access in ctx.facts.accesses:
        if (access.line, access.col) not in wanted:
            continue
        backend = ctx.backend_of(access)
        reason = None
        if backend is not None and backend.flag is not True:
            reason = f"`{backend.name}` sets {ctx.flag} to {flag_words(backend.flag)}"
        sites.append(ReadToGuard(access, reason, owners.missing(ctx, access, ctx.device_attribute), aliases))
    return sites


def single_file_sites(source: str, config: Optional[Config] = None,
                      filename: str = "example.py") -> list[ReadToGuard]:
    """Sites of one file analysed alone (what `python -m libcst.tool codemod` gives).

    Without the project, a class whose base is defined in another file may be a
    backend that opted out; such a class gets no host-sync fallback either (the safe
    side: a clear error where the code would have crashed on None anyway)."""
    from seqguard.lint.runner import source_context

    ctx = source_context(source, config, filename, whole_project=False)
    suppressed = dict(ctx.facts.suppressions)
    positions = set()
    for rule in (UnguardedMirrorRead(), OptOutReadsMirror()):
        for finding in rule.check(ctx):
            if is_suppressed(suppressed, finding.line, rule.CODE):
                continue  # `# seqguard: ignore[...]`: the user took this one
            positions.add((finding.line, finding.col))
    sites = []
    for site in project_sites(ctx, positions):
        if site.no_sync is None:
            cls = ctx.class_of(site.access)
            if cls is not None:
                site = dataclasses.replace(site, no_sync=_unknown_flag(ctx, cls))
        sites.append(site)
    return sites


_HARMLESS_BASES = frozenset({"object", "Exception", "Enum", "IntEnum", "NamedTuple", "Protocol", "Generic",
                             "typing.NamedTuple", "typing.Protocol", "typing.Generic", "enum.Enum"})


def _unknown_flag(ctx: FileContext, cls: ResolvedClass) -> Optional[str]:
    """Why `cls`'s flag cannot be shown True in a single-file run, or None."""
    seen, stack = set(), [cls]
    while stack:
        current = stack.pop()
        if current.id in seen:
            continue
        seen.add(current.id)
        values = {d.value for d in current.facts.decls}
        if True in values and len(values) == 1:
            return None  # declares True itself: the mirror is kept for it
        if values and values != {FlagState.INHERIT}:
            value = False if False in values else FlagState.CONDITIONAL
            return f"`{current.name}` sets {ctx.flag} to {flag_words(value)}"
        for base in current.bases:
            parent = ctx.index.classes.get(base)
            if parent is not None:
                stack.append(parent)
            elif ctx.index.matches_configured_base(base):
                continue  # the configured base keeps the mirror unless told otherwise
            elif base.split("[", 1)[0] not in _HARMLESS_BASES:
                return (f"`{current.name}` derives from `{base}` (another file: a single-file run cannot "
                        f"tell whether it opted out of the mirror)")
    return None
