"""`analysis.facts.Facts` behaves as the plain set it replaced, in its small (one dict)
and large (trie) forms and across them: a seeded random sequence of adds, discards,
copies, joins and rebinds, checked against a set after every step."""

import random

import pytest

from seqguard.lint.analysis.facts import _SMALL, Facts

WATCHED = "seq_lens_cpu"


def _key(rng: random.Random, names: list[str]) -> str:
    root = rng.choice(names)
    return root if rng.random() < 0.4 else f"{root}.{rng.choice(['a', 'b', WATCHED])}"


@pytest.mark.parametrize("names", [_SMALL // 2, _SMALL + 1, 8 * _SMALL])   # small, at the switch, trie
@pytest.mark.parametrize("seed", range(20))
def test_facts_are_the_set_they_replace(names, seed):
    rng = random.Random(seed)
    roots = [f"n{i}" for i in range(names)]
    facts, expected, saved = Facts(watched=frozenset({WATCHED})), set(), []
    for _ in range(300):
        op = rng.random()
        if op < 0.5:
            key = _key(rng, roots)
            facts.add(key)
            expected.add(key)
        elif op < 0.6:
            key = _key(rng, roots)
            facts.discard(key)
            expected.discard(key)
        elif op < 0.7:
            saved.append((facts.copy(), set(expected)))
        elif op < 0.85 and saved:
            other, other_expected = rng.choice(saved)
            facts, expected = facts.intersection(other), expected & other_expected
        else:
            root = rng.choice(roots)
            facts.drop_under(root)
            expected = {k for k in expected if k != root and not k.startswith(root + ".")}
        assert set(facts) == expected and len(facts) == len(expected)
        assert set(facts.watched_keys()) == {k for k in expected if k.endswith("." + WATCHED)}
    for copy, at_copy in saved:  # a copy never sees what was done after it
        assert set(copy) == at_copy
