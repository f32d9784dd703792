"""The facts known at a point of a function (`guards`: expression keys known not to be
None, and path facts), as a set whose copies share their storage.

A long function binds thousands of names to values that cannot be None (`y = torch.zeros(n)`);
each is a key known until the name is rebound. Kept in a plain set, every later
assignment scanned all of them for keys under its target, and every `if` copied them
twice and intersected the copies: work quadratic in the function's length (a 3.8 MB
generated file never finished). Here the keys are indexed by the name they start with
(`key_root`), in a persistent hash trie: an assignment to `x` looks at the keys under
`x` only, a copy is O(1), an update copies one path of the trie, and the join of two
branches walks only the parts where they differ.

The few questions about all keys at once (is one bracketed, is one not a dotted name,
which are path facts, which end in a mirror's name) are answered from small side
collections kept alongside. The interface is a set's, for what the walk uses of one.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator

from seqguard.lint.analysis.names import indexes_with, is_under, key_root

_DOTTED_KEY = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")

# trie: _LEVELS levels of lists of _FAN slots, then a dict root -> frozenset of keys
_BITS = 4
_FAN = 1 << _BITS
_MASK = _FAN - 1
_LEVELS = 3
_EMPTY: frozenset = frozenset()


def _root_of(fact) -> str:
    """The name a fact is forgotten with: a key's first name, a path fact's (`Atom`)
    tested name."""
    return fact[2] if type(fact) is tuple else key_root(fact)


# Up to this many names, the facts are one plain dict (root -> keys) copied on write:
# most functions know a handful of names, and for them a dict's copy is cheaper than a
# trie's path; past it, the trie.
_SMALL = 16


def _lookup(trie, root: str) -> frozenset:
    if trie is None:
        return _EMPTY
    if type(trie) is dict:
        return trie.get(root, _EMPTY)
    h = hash(root)
    node = trie
    for level in range(_LEVELS):
        if node is None:
            return _EMPTY
        node = node[(h >> (level * _BITS)) & _MASK]
    return _EMPTY if node is None else node.get(root, _EMPTY)


def _put(trie, root: str, keys: frozenset):
    """`trie` with `root` holding `keys` (none: removed); `trie` itself is unchanged."""
    if trie is None or type(trie) is dict:
        small = dict(trie) if trie else {}
        if keys:
            small[root] = keys
        else:
            small.pop(root, None)
        if len(small) <= _SMALL:
            return small or None
        grown = None
        for name, held in small.items():
            grown = _trie_put(grown, name, held)
        return grown
    return _trie_put(trie, root, keys)


def _trie_put(trie, root: str, keys: frozenset):
    h = hash(root)
    path = []
    node = trie
    for level in range(_LEVELS):
        slots = list(node) if node is not None else [None] * _FAN
        path.append(slots)
        node = slots[(h >> (level * _BITS)) & _MASK]
    leaf = dict(node) if node is not None else {}
    if keys:
        leaf[root] = keys
    else:
        leaf.pop(root, None)
    child = leaf or None
    for level in range(_LEVELS - 1, -1, -1):
        slots = path[level]
        slots[(h >> (level * _BITS)) & _MASK] = child
        child = slots if slots.count(None) < _FAN else None
    return child


def _meet_leaves(a: dict, b, lost: list[int]) -> dict:
    """The roots of the dict `a` with the keys `b` (a dict or a trie) holds too."""
    leaf = {}
    for root, ka in a.items():
        kb = _lookup(b, root)
        both = ka if ka is kb else ka & kb
        lost[0] += len(ka) - len(both)
        if both:
            leaf[root] = both
    return leaf


def _intersect(a, b, lost: list[int], level: int = 0):
    """The trie of the keys both hold, sharing every part where they are the same;
    `lost[0]` counts those of `a` left out."""
    if a is b or a is None:
        return a
    if b is None:
        lost[0] += sum(len(keys) for leaf in _leaves(a, level) for keys in leaf.values())
        return None
    if level == _LEVELS or (level == 0 and type(a) is dict):
        return _meet_leaves(a, b, lost) or None
    if level == 0 and type(b) is dict:
        # `a` is a trie, `b` small: the result is within `b`'s few roots
        kept = {root: held for root, held in ((r, _lookup(a, r)) for r in b) if held}
        total = sum(len(keys) for leaf in _leaves(a) for keys in leaf.values())
        meet = _meet_leaves(kept, b, lost) if kept else {}
        lost[0] += total - sum(len(keys) for keys in kept.values())
        return meet or None
    # a slot the two share (most are None in both) is kept without a call
    slots = [x if x is y else _intersect(x, y, lost, level + 1) for x, y in zip(a, b)]
    return slots if slots.count(None) < _FAN else None


def _leaves(trie, level: int = 0) -> Iterator[dict]:
    if trie is None:
        return
    if level == _LEVELS or (level == 0 and type(trie) is dict):
        yield trie
        return
    for slot in trie:
        if slot is not None:
            yield from _leaves(slot, level + 1)


class Facts:
    """A set of facts (expression keys, path facts) with O(1) copies. `watched`: the
    last names (the mirrors) whose keys `watched_keys` gives without a scan."""

    __slots__ = ("_trie", "_size", "_strings", "_atoms", "_bracketed", "_undotted", "_watched_keys", "watched")

    def __init__(self, facts: Iterable = (), watched: frozenset = _EMPTY) -> None:
        self.watched = watched
        self._trie = None
        self._size = 0
        self._strings = 0
        self._atoms = _EMPTY
        self._bracketed = _EMPTY     # keys reached through an index (`bs[i].x`): `i` rebound drops them
        self._undotted = _EMPTY      # keys that are no dotted name (`f(x)`, `bs[0].x`)
        self._watched_keys = _EMPTY  # keys whose last name is watched
        for fact in facts:
            self.add(fact)

    # ---- a set's interface ---------------------------------------------------------
    def copy(self) -> "Facts":
        other = Facts.__new__(Facts)
        other.watched = self.watched
        other._trie, other._size, other._strings = self._trie, self._size, self._strings
        other._atoms, other._bracketed = self._atoms, self._bracketed
        other._undotted, other._watched_keys = self._undotted, self._watched_keys
        return other

    def __contains__(self, fact) -> bool:
        return fact in _lookup(self._trie, _root_of(fact))

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def __iter__(self) -> Iterator:
        for leaf in list(_leaves(self._trie)):
            for keys in list(leaf.values()):
                yield from keys

    def __repr__(self) -> str:
        return f"Facts({set(self)!r})"

    def add(self, fact) -> None:
        root = _root_of(fact)
        held = _lookup(self._trie, root)
        if fact in held:
            return
        self._trie = _put(self._trie, root, held | {fact})
        self._size += 1
        if type(fact) is tuple:
            self._atoms = self._atoms | {fact}
            return
        self._strings += 1
        self._side(fact, frozenset.union)

    def discard(self, fact) -> None:
        root = _root_of(fact)
        held = _lookup(self._trie, root)
        if fact not in held:
            return
        self._trie = _put(self._trie, root, held - {fact})
        self._forgotten(fact)

    def update(self, facts: Iterable) -> None:
        for fact in facts:
            self.add(fact)

    def __ior__(self, facts: Iterable) -> "Facts":
        self.update(facts)
        return self

    def __or__(self, facts: Iterable) -> "Facts":
        out = self.copy()
        out.update(facts)
        return out

    def __sub__(self, facts: Iterable) -> "Facts":
        out = self.copy()
        for fact in facts:
            out.discard(fact)
        return out

    def intersection(self, *others: "Facts") -> "Facts":
        out = self.copy()
        for other in others:
            if not isinstance(other, Facts):
                other = Facts(other, self.watched)
            out._meet(other)
        return out

    # ---- what the walk asks of all keys at once --------------------------------------
    def drop_under(self, rebound: str) -> None:
        """Forget every fact under `rebound` (`is_under`) and every key indexing with it."""
        root = key_root(rebound)
        held = _lookup(self._trie, root)
        gone = [f for f in held if is_under(f, rebound)]
        if gone:
            self._trie = _put(self._trie, root, held.difference(gone))
            for fact in gone:
                self._forgotten(fact)
        if self._bracketed:
            for key in [k for k in self._bracketed if indexes_with(k, rebound)]:
                self.discard(key)

    def any_under(self, rebound: str) -> bool:
        return any(is_under(f, rebound) for f in _lookup(self._trie, key_root(rebound)))

    @property
    def bracketed(self) -> frozenset:
        return self._bracketed

    def has_undotted(self) -> bool:
        """Whether some key is no dotted name (an expression's text: `f(x)`, `bs[0]`)."""
        return bool(self._undotted)

    def has_keys(self) -> bool:
        """Whether some fact is an expression key, not a path fact."""
        return self._strings > 0

    def atoms(self) -> frozenset:
        return self._atoms

    def watched_keys(self) -> frozenset:
        return self._watched_keys

    # ---- bookkeeping ---------------------------------------------------------------
    def _side(self, key: str, op) -> None:
        if "[" in key:
            self._bracketed = op(self._bracketed, {key})
        if not _DOTTED_KEY.fullmatch(key):
            self._undotted = op(self._undotted, {key})
        if key.rsplit(".", 1)[-1] in self.watched:
            self._watched_keys = op(self._watched_keys, {key})

    def _forgotten(self, fact) -> None:
        self._size -= 1
        if type(fact) is tuple:
            self._atoms = self._atoms - {fact}
            return
        self._strings -= 1
        self._side(fact, frozenset.difference)

    def _meet(self, other: "Facts") -> None:
        lost = [0]
        trie = _intersect(self._trie, other._trie, lost)
        if not lost[0]:
            return
        self._trie = trie
        self._atoms = self._atoms & other._atoms
        self._bracketed = self._bracketed & other._bracketed
        self._undotted = self._undotted & other._undotted
        self._watched_keys = self._watched_keys & other._watched_keys
        self._size -= lost[0]
        self._strings = self._size - len(self._atoms)
