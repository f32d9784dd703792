"""Which (type, mirror attribute) pairs can hold None, inferred from every store in the
project, as NullAway infers field nullability from assignments.

A pair can be None where some store gives it a value that can be None (the literal,
an optional parameter, an unknown call's result, a class-level `= None` default), or
copies it from a pair that can (`ForwardBatch(seq_lens_cpu=batch.seq_lens_cpu)` with
`batch: ModelWorkerBatch`); a buffer only ever filled by `torch.full` cannot. A store
lands on its receiver's types, and a read sees the stores made on its type, on the
classes it derives from (their methods' `self`) and on those deriving from it (an
instance of a subclass is one of its). A store whose receiver's type cannot be told
counts for no class: the reads whose type cannot be told either stay reported anyway.

Each nullable pair keeps how it became so (the store that gave None, then each copy),
which the findings cite and `seqguard explain` prints.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from typing import TYPE_CHECKING, Optional

from seqguard.lint.analysis.values import MAYBE, NEVER, NONE
from seqguard.lint.contract.types import UNKNOWN, Types
from seqguard.lint.model import MirrorStore, StoreKind, ValueKind

if TYPE_CHECKING:
    from seqguard.lint.index import ProjectIndex


@dataclasses.dataclass(frozen=True)
class Source:
    """Why a pair can be None: the store, where it is, and the pair it copied (None for
    the store that gave None itself)."""
    relpath: str
    store: MirrorStore
    copied_from: Optional[tuple[str, str]] = None   # (type, attr)


class Nullability:
    def __init__(self, index: "ProjectIndex", types: Types, mirrors: tuple[str, ...]) -> None:
        self.index = index
        self.types = types
        self.mirrors = mirrors
        self._reason: dict[tuple[str, str], Source] = {}
        self._related: dict[str, frozenset[str]] = {}
        self._build()

    def _build(self) -> None:
        roots: list[tuple[int, str, MirrorStore, frozenset[str]]] = []
        copies: dict[tuple[str, str], list[tuple[str, MirrorStore, frozenset[str]]]] = {}
        for relpath, facts in self.index.parsed_files():
            for store in facts.stores:
                if store.values == (NEVER,):
                    continue  # gives a value, copies nothing: changes no verdict
                receivers = self._with_ancestors(self.types.resolve(relpath, store.receiver_types) - {UNKNOWN})
                if not receivers:
                    continue
                if NONE in store.values or MAYBE in store.values:
                    roots.append((_rank(store), relpath, store, receivers))
                for value in store.values:
                    if value.kind is ValueKind.COPY:
                        term = value.term
                        for source in self.types.resolve(relpath, (term,) if term else ()):
                            copies.setdefault((source, value.attr), []).append((relpath, store, receivers))
        # Breadth first from the stores that give None, the most telling first: every
        # pair keeps the shortest explanation.
        queue: deque[tuple[str, str]] = deque()
        for _, relpath, store, receivers in sorted(roots, key=lambda r: (r[0], r[1], r[2].line)):
            for receiver in receivers:
                for attr in self._attrs(store):
                    key = (receiver, attr)
                    if key not in self._reason:
                        self._reason[key] = Source(relpath, store)
                        queue.append(key)
        unknown_sources = [(UNKNOWN, attr) for (t, attr) in copies if t == UNKNOWN]
        for key in unknown_sources:
            # a copy of a mirror whose object cannot be typed may copy a None
            for relpath, store, receivers in copies.get(key, ()):
                for receiver in receivers:
                    target = (receiver, store.attr)
                    if target not in self._reason:
                        self._reason[target] = Source(relpath, store, key)
                        queue.append(target)
        while queue:
            key = queue.popleft()
            for related in self.related(key[0]):
                for relpath, store, receivers in copies.get((related, key[1]), ()):
                    for receiver in receivers:
                        target = (receiver, store.attr)
                        if target not in self._reason:
                            self._reason[target] = Source(relpath, store, key)
                            queue.append(target)

    def _with_ancestors(self, types: frozenset[str]) -> frozenset[str]:
        """`types` and every class each derives from: a store on an object lands on what
        a read typed as any of them sees, even where the byte scan did not tell a
        subclass from its base list (`related` looks down from the read's type)."""
        return frozenset(types).union(*(self.index.ancestor_ids(t) for t in types))

    def _attrs(self, store: MirrorStore) -> tuple[str, ...]:
        return self.mirrors if store.attr == "*" else (store.attr,)

    def related(self, type_id: str) -> frozenset[str]:
        """The classes whose stores can land on an object read as `type_id`: the object
        is of the class or one deriving from it, and a store lands on that class and on
        everything it derives from (a mixin's sibling base included)."""
        if type_id not in self._related:
            cls = self.index.class_of(type_id)
            if cls is None:
                self._related[type_id] = frozenset({type_id})
            else:
                ids = set()
                for concrete in (cls, *self.index.descendants(cls)):
                    ids.add(concrete.id)
                    ids.update(a.id for a in self.index.ancestors(concrete))
                self._related[type_id] = frozenset(ids)
        return self._related[type_id]

    def dynamic(self, type_id: str) -> bool:
        """Whether objects of the type may answer attributes no store gives them
        (`__getattr__` on the class or a base): nothing can be told of them."""
        cls = self.index.class_of(type_id)
        if cls is None:
            return False
        for related in self.related(type_id):
            owner = self.index.classes.get(related)
            if owner is not None and any(q in (f"{owner.facts.qualname}.__getattr__",
                                               f"{owner.facts.qualname}.__getattribute__")
                                         for q, _, _ in self.index.function_spans(owner.relpath)):
                return True
        return False

    def why_none(self, type_id: str, attr: str) -> Optional[Source]:
        """How (type, attr) can be None, or None when no store can make it so."""
        for related in sorted(self.related(type_id), key=lambda t: t != type_id):
            reason = self._reason.get((related, attr))
            if reason is not None:
                return reason
        return None

    def chain(self, type_id: str, attr: str) -> list[Source]:
        """The stores from the one that gave None to the one on `type_id`, in order."""
        out: list[Source] = []
        seen = set()
        reason = self.why_none(type_id, attr)
        while reason is not None and id(reason) not in seen:
            seen.add(id(reason))
            out.append(reason)
            reason = self.why_none(*reason.copied_from) if reason.copied_from else None
        return list(reversed(out))


def _rank(store: MirrorStore) -> int:
    """Which None-giving store explains best: an assignment of None first (the engine's
    own skip), then a constructor keyword, an unknown value, a class default."""
    literal = NONE in store.values
    order = {StoreKind.ATTRIBUTE: 0, StoreKind.SETATTR: 1, StoreKind.KEYWORD: 2, StoreKind.CLASS: 3}
    return order[store.kind] + (0 if literal else 4)
