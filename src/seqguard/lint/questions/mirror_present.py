"""Is the mirror present here? Can this unguarded read see a None mirror at run time
(SG002, SG003, SG009)?

It asks, in order, and the first answer that clears the read wins:
1. the object: is it of a type whose attribute no store ever makes None (a CUDA-graph
   runner's `torch.full` buffer)?
2. the path: does a test on the way rule the skip out (a stated present-condition, a
   feature the aggregator forces the mirror for, a forward mode the skip never runs in,
   the device lengths being None)?
3. the code around it: is it inside a backend whose own flag is True; was its object
   built by a copy of one whose mirror was just tested?
4. the callers: is every call of the function that holds it made where 1-3 hold
   (`MirrorAtCalls`, asked of the fixpoint)? Or is its class only created where the
   mirror is kept?
A read none of these clears is a finding, and the verdict says why: the store that
makes the attribute None and the copies that carry it to this object."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Optional

from seqguard.lint.contract.fixpoint import Fixpoint, Question, site_of
from seqguard.lint.contract.nullability import Source
from seqguard.lint.contract.reasons import Kind, Reason, Step, leaf
from seqguard.lint.contract.sites import CallSite, depth_above
from seqguard.lint.contract.types import UNKNOWN
from seqguard.lint.model import MirrorAccess

if TYPE_CHECKING:
    from seqguard.lint.contract.model import Contract


@dataclasses.dataclass(frozen=True)
class Verdict:
    may_be_none: bool
    reason: str = ""               # a finding's one clause: why it can be None here
    steps: tuple[Step, ...] = ()   # the store that gives None, each copy, then the read
    cleared: Optional[Reason] = None   # what clears it (the tree), when it cannot be None
    callers: Optional[Reason] = None   # a finding's callers, asked and left open: the first open call up


@dataclasses.dataclass(frozen=True)
class MirrorAtCalls(Question):
    """Is a call made where the read of `<parameter>.<attr>` (with `parameter` None, a
    read of some other object) in the function it calls cannot see None, the batch in
    one of `modes` (None: no mode model)?"""
    ASKS = "the mirror is present"
    parameter: Optional[str]
    attr: str
    modes: Optional[frozenset[str]]

    def at(self, site: CallSite, fixpoint: Fixpoint, depth: int) -> Reason:
        point, sites = fixpoint.point, fixpoint.sites
        record = site.record
        if record.deferred is not None:
            return self._deferred(site, fixpoint)
        implied_known, path = sites.path_at(site)
        why = point.by_path(path, site.relpath, record.class_qualname, scope=record.scope)
        if why is not None:
            return leaf(Kind.PATH, why)
        narrowed = sites.narrowed(site, path, self.modes)
        # (no mode at all clears nothing: the model lost track of a mode a call set)
        if narrowed and point.modes is not None and not narrowed & point.skip_modes:
            return leaf(Kind.MODES, f"the batch can only be in {', '.join(sorted(narrowed))} there")
        backend = point.backend_keeping_mirror(site.relpath, record.class_qualname)
        if backend is not None:
            return leaf(Kind.BACKEND, f"inside `{backend.name}`, whose {point.flag} is True")
        if point.is_capture_function(record.scope):
            return leaf(Kind.CAPTURE, f"`{record.scope}` is CUDA-graph capture code")
        if site.argument is not None:
            read = f"{site.argument}.{self.attr}"
            if read in record.known:
                return leaf(Kind.TESTED, f"`{read}` is tested not to be None there")
            if read in implied_known:
                return leaf(Kind.IMPLIED, f"{implied_known[read]}, which it does only where it is not None")
            copied = point.copy_guard(site.relpath, record.line, record.class_qualname, site.argument, self.attr,
                                      record.known)
            if copied is not None:
                return leaf(Kind.COPY, copied)
            typed = self._typed(site, fixpoint)
            if typed is not None:
                return leaf(Kind.TYPED, typed)
        left = tuple(sorted((narrowed or frozenset()) & point.skip_modes))
        opened = Reason(Kind.CALL, False, site=site_of(site), modes=left)
        caller = sites.function_of(site)
        if caller is None:
            return self._closure(site, fixpoint, narrowed, depth, opened)
        deeper = fixpoint.why_safe(caller, MirrorAtCalls(sites.caller_parameter(site, caller), self.attr, narrowed),
                                   depth_above(depth, site, caller))
        if deeper.holds:
            return Reason(Kind.CALLER, True, function=caller.name, rests_on=(deeper,), assumed=deeper.assumed)
        return dataclasses.replace(opened, rests_on=(deeper,))

    def _closure(self, site: CallSite, fixpoint: Fixpoint, modes: Optional[frozenset[str]], depth: int,
                 opened: Reason) -> Reason:
        """A call made in a nested function (`def forward_fn(): self.run(buffers=buffers)`)
        that passes a parameter of the function around it: the object is the one that
        function was called with, so that function's callers decide. Only when nothing
        rebinds the name, there or in what it nests (a closure reads the current cell)."""
        enclosing = fixpoint.sites.closed_over(site)
        if enclosing is None:
            return dataclasses.replace(opened, rests_on=(Reason(Kind.MODULE_LEVEL, False),))
        deeper = fixpoint.why_safe(enclosing, MirrorAtCalls(site.argument, self.attr, modes), depth - 1)
        if deeper.holds:
            return Reason(Kind.CLOSURE, True, function=enclosing.name, argument=site.argument or "",
                          site=site_of(site), rests_on=(deeper,), assumed=deeper.assumed)
        return dataclasses.replace(opened, function=enclosing.name, argument=site.argument or "", rests_on=(deeper,))

    def _typed(self, site: CallSite, fixpoint: Fixpoint) -> Optional[str]:
        """Why the object the call passes has the attribute present by its type alone."""
        point = fixpoint.point
        types = fixpoint.sites.argument_types(site)
        if types and UNKNOWN not in types and all(point.nullability.why_none(t, self.attr) is None for t in types):
            return f"`{site.argument}` is a {', '.join(point.type_name(t) for t in sorted(types))} there"
        return None

    def _deferred(self, site: CallSite, fixpoint: Fixpoint) -> Reason:
        """`functools.partial(f, a)`: f runs later, wherever the partial is called, so
        neither the path nor the guards where it is made hold then; only an object it
        binds whose type never has the attribute None does."""
        typed = None
        if site.argument is not None and fixpoint.sites.defers_by_functools(site):
            typed = self._typed(site, fixpoint)
        if typed is None:
            return Reason(Kind.CALL, False, site=site_of(site),
                          rests_on=(Reason(Kind.DEFERRED, False, fact=site.record.deferred or ""),))
        return leaf(Kind.TYPED, f"{typed}, bound by `{site.record.deferred}`")


class MirrorPresent:
    """The verdict on an unguarded mirror read (SG002, SG003, SG009)."""

    def __init__(self, contract: "Contract") -> None:
        self.contract = contract
        self.point = contract.point
        self.whole_project = contract.whole_project
        self._class_memo: dict[str, Optional[Reason]] = {}

    def judge(self, relpath: str, access: MirrorAccess) -> Verdict:
        cleared, callers = self._clearance(relpath, access)
        if cleared is not None:
            return Verdict(False, cleared=cleared)
        return dataclasses.replace(self._finding(relpath, access), callers=callers)

    def _clearance(self, relpath: str, access: MirrorAccess) -> tuple[Optional[Reason], Optional[Reason]]:
        """(what clears the read, None) or (None, the callers' open tree when asked)."""
        point = self.point
        why = self._by_type(relpath, access) if self.whole_project else None
        if why is not None:
            return leaf(Kind.TYPE, why), None
        known, access = self._with_implied(relpath, access)
        if access.mirror_key in known:
            return leaf(Kind.IMPLIED, f"{known[access.mirror_key]}, which it does only where `{access.mirror_key}` "
                                      f"is not None"), None
        why = point.by_path(access.path, relpath, access.class_qualname, scope=access.scope)
        if why is not None:
            return leaf(Kind.PATH, why), None
        fact = point.present_fact(relpath, access.scope, access.attr)
        if fact is not None:
            return leaf(Kind.MODEL, f"`{access.attr}` is never None in `{fact.fact.about}`: {fact.fact.why} "
                                    f"(models)"), None
        if point.is_capture_function(access.scope):
            return leaf(Kind.CAPTURE, f"`{access.scope}` is CUDA-graph capture code (capture-functions): its "
                                      f"batches are the runner's own, built from its buffers, never skipped"), None
        backend = point.backend_keeping_mirror(relpath, access.class_qualname)
        if backend is not None:
            return leaf(Kind.BACKEND, f"it runs inside `{backend.name}`, whose {point.flag} is True "
                                      f"({backend.flag_source}): its own flag keeps the mirror"), None
        why = point.copy_guard(relpath, access.line, access.class_qualname, access.receiver, access.attr,
                               access.known)
        if why is not None:
            return leaf(Kind.COPY, why), None
        if not self.whole_project:
            return None, None
        callers = None
        function, parameter = self.contract.sites.holder(relpath, access.scope, access.receiver)
        if function is not None:
            modes = point.possible_modes(access.path, relpath, access.class_qualname, access.scope)
            callers = self.contract.fixpoint.why_safe(function, MirrorAtCalls(parameter, access.attr, modes))
            if callers.holds:
                return callers, None
        index = self.contract.index
        owner = index.classes_in(relpath).get(access.class_qualname) if access.class_qualname else None
        if owner is not None and "." not in owner.facts.qualname:
            created = self._class_created(owner)
            if created is not None:
                return created, None
        return None, callers

    def _with_implied(self, relpath: str, access: MirrorAccess) -> tuple[dict, MirrorAccess]:
        """(what the read's path facts imply is not None, the read with the facts they
        imply on its path)."""
        known, implied = self.point.expand(access.path, relpath, access.class_qualname)
        if implied:
            access = dataclasses.replace(access, path=tuple(sorted({*access.path, *implied})),
                                         known=tuple(sorted({*access.known, *known})))
        return known, access

    def _by_type(self, relpath: str, access: MirrorAccess) -> Optional[str]:
        point = self.point
        types = point.receiver_types(relpath, access)
        if UNKNOWN in types or not types:
            return None
        if any(point.nullability.why_none(t, access.attr) is not None or point.nullability.dynamic(t)
               for t in types):
            return None
        names = ", ".join(f"`{point.type_name(t)}`" for t in sorted(types))
        return (f"`{access.receiver}` is {names}, whose `{access.attr}` no store ever sets to None "
                f"(a persistent buffer, not the batch's mirror)")

    def _class_created(self, cls) -> Optional[Reason]:
        """Why a class's methods only ever run where the mirror is kept: every place
        the project creates or hands out it (or a subclass) is under a feature that
        forces the mirror on (`if self.is_ngram(): return NGRAMWorker`). None when one
        is not, or none is seen."""
        if cls.id not in self._class_memo:
            self._class_memo[cls.id] = None
            records = self.contract.sites.creations(cls)
            first = None
            for relpath, record in records or ():
                why = self.point.by_path(record.path, relpath, record.class_qualname, modes=False)
                if why is None:
                    first = None
                    break
                first = first or leaf(Kind.CLASS, f"`{cls.name}` is only created where the mirror is kept "
                                                  f"({relpath}:{record.line}: {why})")
            self._class_memo[cls.id] = first
        return self._class_memo[cls.id]

    # ---- the explanation of a finding -------------------------------------------------
    def _finding(self, relpath: str, access: MirrorAccess) -> Verdict:
        point = self.point
        types = point.receiver_types(relpath, access)
        read = Step(relpath, access.line, access.col, f"`{access.subject}` is read here without a None guard")
        chain: list[Source] = []
        for t in sorted(types - {UNKNOWN}):
            chain = point.nullability.chain(t, access.attr)
            if chain:
                break
        if chain:
            root = chain[0]
            steps = [Step(root.relpath, root.store.line, root.store.col,
                          f"`{_written(root.store)}` can give `{root.store.attr}` None here")]
            for source in chain[1:]:
                steps.append(Step(source.relpath, source.store.line, source.store.col,
                                  f"`{_written(source.store)}` copies it here"))
            reason = f"set to None at {root.relpath}:{root.store.line}"
            if len(chain) > 1:
                last = chain[-1]
                reason += f", carried to it at {last.relpath}:{last.store.line}"
            return Verdict(True, reason + self._path_note(relpath, access), (*steps, read))
        if UNKNOWN in types:
            reason = "its object's type cannot be told, so any batch's mirror may be read here"
        else:
            reason = "no store could be traced"
        return Verdict(True, reason + self._path_note(relpath, access), (read,))

    def _path_note(self, relpath: str, access: MirrorAccess) -> str:
        point = self.point
        if point.modes is None:
            return ""
        possible, _ = point.modes.possible(access.path)
        fact = point.fact_at(relpath, access.scope)
        if fact is not None:
            possible = possible & fact.modes
        skipped = sorted(possible & point.skip_modes)
        return f"; the batch can be in {', '.join(skipped)} here" if skipped else ""


def _written(store) -> str:
    if store.kind.value == "keyword":
        return f"{store.receiver}({store.attr}=...)"
    if store.kind.value == "class":
        return f"{store.attr} = ... (class default)"
    receiver = store.receiver or "?"
    return f"{receiver}.{store.attr} = ..."
