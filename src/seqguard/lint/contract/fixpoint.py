"""Layer 3 of the contract: a function is safe when every call of it is, as NullAway's
`@RequiresNonNull` but inferred.

`Fixpoint.why_safe(function, question)` walks the calls of a function (`sites`) and asks
the question of each one; a question (`Question`) says what makes one call safe and how
its path narrows what is possible, and may ask the fixpoint about the function making
the call, up to `MAX_DEPTH` callers up. A call back into a question still being
answered is assumed safe, so a cycle is decided by the calls into it (a greatest
fixpoint). The answer is a reason tree (`reasons.Reason`): what cleared the function,
or the first call left open and what is open above it; `explain` renders that tree."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, ClassVar, Optional

from seqguard.lint.contract.reasons import Kind, Reason, Site
from seqguard.lint.contract.sites import CallSite, CallSites, Function

if TYPE_CHECKING:
    from seqguard.lint.contract.point import EngineAtPoint

# Callers followed up the chain (read in `f`, called by `g`, called by `h`).
MAX_DEPTH = 4
# Questions one read may ask of its callers before it is left reported: wrappers that
# delegate to each other through a base-typed object form cycles that can be entered
# in every order (on SGLang 0.5.23 the most any read asks is far below this).
MAX_STEPS = 2000


@dataclasses.dataclass(frozen=True)
class Question:
    """What the fixpoint asks of every call of a function. A subclass is a frozen
    dataclass (the fixpoint keys its answers by it) and says, for one call, why it is
    safe or what leaves it open (`at`), asking the fixpoint about the caller when the
    call alone does not say."""
    ASKS: ClassVar[str] = ""      # what every safe call is made where: "the mirror is present"
    # the parameter whose argument the question is about: a field, or None for a
    # question about no object (every subclass sets it)
    parameter: ClassVar[Optional[str]]

    def at(self, site: CallSite, fixpoint: "Fixpoint", depth: int) -> Reason:
        raise NotImplementedError


@dataclasses.dataclass
class _Memo:
    safe: Optional[Reason] = None
    safe_from: int = 0                # least depth the safe answer was found with
    unsafe: Optional[Reason] = None
    unsafe_to: Optional[int] = None   # most depth an unsafe answer was found with


class Fixpoint:
    """The answers of one run, kept across the questions asked (each a greatest fixpoint
    over the call graph, bounded in depth and in steps)."""

    def __init__(self, sites: CallSites) -> None:
        self.sites = sites
        self.point: "EngineAtPoint" = sites.point
        self._memo: dict[tuple[Function, Question], _Memo] = {}
        self._steps = MAX_STEPS      # questions left to the one being answered
        self._exhausted = False
        self._active: set[tuple[Function, Question]] = set()    # being answered
        self._assumed: set[tuple[Function, Question]] = set()   # ... of those, assumed by a call back

    def why_safe(self, function: Function, question: Question, depth: int = MAX_DEPTH) -> Reason:
        """Why every call of `function` answers `question` (a tree that holds), or the
        first call that does not and what is open above it (one that does not)."""
        # The depth bounds the work, and more of it can only prove more: a safe answer
        # found with some depth left stands wherever at least that much is left, an
        # unsafe one wherever at most that much is (so the order reads are judged in,
        # and which judge forks them, never changes an answer).
        key = (function, question)
        known = self._memo.get(key)
        if known is not None:
            if known.safe is not None and depth >= known.safe_from:
                return known.safe
            if known.unsafe is not None and depth <= known.unsafe_to:
                return known.unsafe
        # A call back into a function being judged, with the same question (a delegating
        # backend typed as the base, `backend.forward_extend(...)`), adds no way in: the
        # calls into the cycle decide. What is worked out while such an assumption is
        # open is not kept: it holds only if the assumption does. An answer resting on
        # nothing but such assumptions (a function called only from inside its own
        # cycle) is no answer: no call from outside shows the question answered.
        if key in self._active:
            self._assumed.add(key)
            return Reason(Kind.CYCLE, True, function=function.name, assumed=True)
        if depth <= 0:
            return Reason(Kind.DEPTH, False, function=function.name, limit=MAX_DEPTH)
        if self._steps <= 0:
            # out of budget (cycles of delegating wrappers can branch without end): not
            # known, so not safe; and no unsafe answer of this question is kept
            self._exhausted = True
            return Reason(Kind.BUDGET, False, function=function.name, limit=MAX_STEPS)
        self._steps -= 1
        outermost = not self._active
        self._active.add(key)
        try:
            result = self._all_calls(function, question, depth)
        finally:
            self._active.discard(key)
            exhausted = self._exhausted
            if outermost:  # the next question starts with the whole budget, even after an error
                self._steps, self._exhausted = MAX_STEPS, False
        self._assumed.discard(key)
        open_assumptions = bool(self._assumed & self._active)
        if result.holds and result.assumed and not open_assumptions:
            # the cycle is closed, and nothing from outside it came in
            result = Reason(Kind.CYCLE_ONLY, False, function=function.name, rests_on=(result,))
        memo = known if known is not None else _Memo()
        # an assumption can only make calls look safe: an unsafe answer stands whatever
        # it assumed, a safe one only once nothing it assumed is still open
        if not result.holds:
            if not exhausted:
                memo.unsafe, memo.unsafe_to = result, max(depth, memo.unsafe_to or 0)
                self._memo[key] = memo
        elif not open_assumptions:
            memo.safe_from = min(depth, memo.safe_from) if memo.safe is not None else depth
            memo.safe = result
            self._memo[key] = memo
        return result

    def _all_calls(self, function: Function, question: Question, depth: int) -> Reason:
        sites = self.sites.sites(function, question.parameter)
        if sites is None:
            return Reason(Kind.UNBOUNDED, False, fact=self.sites.unbounded(function), function=function.name)
        if not sites:
            return Reason(Kind.NO_CALLS, False, function=function.name)
        first: Optional[tuple[CallSite, Reason]] = None
        looping: Optional[Reason] = None
        for site in sites:
            why = question.at(site, self, depth)
            if not why.holds:
                # a call left open only by a cycle (its chain ends in a function reached
                # only from inside its own cycle of calls) says less than one open on its
                # own: the next open call, if there is one, is named
                if all(node.kind is not Kind.CYCLE_ONLY for node in why.chain()):
                    return why
                looping = looping or why
                continue
            if first is None or (first[1].assumed and not why.assumed):
                first = site, why
        if looping is not None:
            return looping
        assert first is not None
        site, why = first
        # the first call named is one that holds on its own, if any does; the answer is
        # assumed only when every call's is
        return Reason(Kind.CALLS, True, function=function.name, site=site_of(site), calls=len(sites),
                      question=question.ASKS, rests_on=(why,), assumed=why.assumed)


def site_of(site: CallSite) -> Site:
    return Site(site.relpath, site.record.line, site.record.scope)
