"""Conditions of the engine model, and what path facts imply about them.

A path fact (`model.PathFact`) is a test, as source text, and whether it held or
failed on every path to a point; it is parsed once (`parse_fact`) and normalised, a
`not` pushed into the polarity (`+` held, `-` failed). A condition is a test pattern in which
`*` stands for any receiver (`*.spec_algorithm.is_none()`). `implies` says whether a
fact guarantees a condition: `not b.spec_algorithm.is_none()` failing does, `x or
b.spec_algorithm.is_none()` holding does not, `a.is_none() or b.is_none()` holding
when both sides do.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from typing import Iterable, Iterator, Optional

from seqguard.config import WILDCARD, Condition, parse_condition
from seqguard.lint.analysis.names import getattr_target
from seqguard.lint.model import PathFact

HELD, FAILED = "+", "-"
_IGNORED_FIELDS = frozenset({"ctx", "lineno", "col_offset", "end_lineno", "end_col_offset", "type_comment", "kind"})


@dataclasses.dataclass(frozen=True)
class Pattern:
    """A condition ready to match: its expression and the polarity a fact must have."""
    node: ast.expr
    polarity: str
    condition: Condition

    @classmethod
    def of(cls, condition: Condition) -> "Pattern":
        node, polarity = _normalise(parse_condition(condition.test), HELD)
        return cls(node, polarity, condition)


@functools.lru_cache(maxsize=8192)
def parse_fact(fact: PathFact) -> Optional[tuple[ast.expr, str]]:
    """`b.forward_mode.is_extend()` held -> (expression, `+`), normalised; None when the
    text does not parse (it always should: the walk wrote it with `ast.unparse`)."""
    try:
        node = ast.parse(fact.test, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return _normalise(node, HELD if fact.held else FAILED)


def parsed_facts(facts: Iterable[PathFact]) -> Iterator[tuple[PathFact, ast.expr, str]]:
    """(fact, expression, polarity) for each fact that parses, normalised."""
    for fact in facts:
        parsed = parse_fact(fact)
        if parsed is not None:
            yield fact, parsed[0], parsed[1]


def _flip(polarity: str) -> str:
    return FAILED if polarity == HELD else HELD


class _Getattr(ast.NodeTransformer):
    """`getattr(x, "a")` and `getattr(x, "a", None)` as `x.a`: the same value where the
    attribute exists, None (or a raise) where it does not."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        target = getattr_target(node)
        if target is None:
            return node
        return ast.copy_location(ast.Attribute(target[0], target[1], ast.Load()), node)


def _normalise(node: ast.expr, polarity: str) -> tuple[ast.expr, str]:
    """Push `not` into the polarity, write every None test as `x is not None`, and every
    `getattr(x, "a", None)` as `x.a`."""
    if any(isinstance(n, ast.Call) and getattr_target(n) is not None for n in ast.walk(node)):
        node = _Getattr().visit(node)
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        node, polarity = node.operand, _flip(polarity)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and _is_none(node.comparators[0]):
        if isinstance(node.ops[0], (ast.Is, ast.Eq)):
            return ast.Compare(node.left, [ast.IsNot()], [node.comparators[0]]), _flip(polarity)
        if isinstance(node.ops[0], ast.NotEq):
            return ast.Compare(node.left, [ast.IsNot()], [node.comparators[0]]), polarity
    return node, polarity


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def matches(pattern: ast.AST, node: ast.AST) -> bool:
    """Structural equality, the wildcard name matching any expression."""
    if isinstance(pattern, ast.Name) and pattern.id == WILDCARD:
        return True
    if type(pattern) is not type(node):
        return False
    for field in pattern._fields:
        if field in _IGNORED_FIELDS:
            continue
        a, b = getattr(pattern, field, None), getattr(node, field, None)
        if isinstance(a, list):
            if not isinstance(b, list) or len(a) != len(b) or not all(_same(x, y) for x, y in zip(a, b)):
                return False
        elif not _same(a, b):
            return False
    return True


def _same(a, b) -> bool:
    if isinstance(a, ast.AST):
        return isinstance(b, ast.AST) and matches(a, b)
    return a == b


def implies(node: ast.expr, polarity: str, pattern: Pattern, depth: int = 0) -> bool:
    """Whether `node` having held (`+`) or failed (`-`) guarantees `pattern`."""
    node, polarity = _normalise(node, polarity)
    if polarity == pattern.polarity and matches(pattern.node, node):
        return True
    if depth > 8 or not isinstance(node, ast.BoolOp):
        return False
    conjunctive = isinstance(node.op, ast.And) == (polarity == HELD)
    parts = (implies(v, polarity, pattern, depth + 1) for v in node.values)
    # `a and b` held: each part held; `a or b` failed: each part failed
    return any(parts) if conjunctive else all(parts)


def first_implied(facts: Iterable[PathFact], patterns: Iterable[Pattern]) -> Optional[tuple[PathFact, Pattern]]:
    """The first (fact, pattern) such that the fact guarantees the pattern."""
    patterns = list(patterns)
    if not patterns:
        return None
    for fact, node, polarity in parsed_facts(facts):
        for pattern in patterns:
            if implies(node, polarity, pattern):
                return fact, pattern
    return None


def generalised(test: ast.expr) -> Optional[ast.expr]:
    """An aggregator's condition as a pattern code elsewhere can match: the attribute or
    method it ends in, on any receiver (`get_exec().overlap.enable_two_batch_overlap`
    -> `*.enable_two_batch_overlap`, `algo.is_ngram()` -> `*.is_ngram()`); a plain call
    or name as it is."""
    if isinstance(test, ast.Attribute):
        return ast.Attribute(ast.Name(WILDCARD, ast.Load()), test.attr, ast.Load())
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute):
        return ast.Call(ast.Attribute(ast.Name(WILDCARD, ast.Load()), test.func.attr, ast.Load()),
                        test.args, test.keywords)
    if isinstance(test, (ast.Call, ast.Name)):
        return test
    return None


def forcing_conditions(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[ast.expr, int]]:
    """The tests under which the aggregator returns True before looking at any backend:
    `if <test>: ... return True` among its top-level statements (a local bound to a test
    is followed: `algo = ...; if algo.is_ngram(): return True`). (test, line) pairs."""
    found: list[tuple[ast.expr, int]] = []
    for statement in function.body:
        if not isinstance(statement, ast.If) or not statement.body:
            continue
        last = statement.body[-1]
        if isinstance(last, ast.Return) and isinstance(last.value, ast.Constant) and last.value.value is True:
            test = statement.test
            if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
                found.extend((part, statement.lineno) for part in test.values)
            else:
                found.append((test, statement.lineno))
    return found
