"""The engine's forward-mode enum, read from its own code, as an abstract domain.

The members come from the class body (`EXTEND = auto()`), and each predicate method's
meaning from its `return` expression, interpreted per member:
`is_extend(self, include_draft_extend_v2=False)` returning `self == ForwardMode.EXTEND
or ... or (include_draft_extend_v2 and self == ForwardMode.DRAFT_EXTEND_V2) or self ==
ForwardMode.TARGET_VERIFY` holds for TARGET_VERIFY, and for DRAFT_EXTEND_V2 only when
the call passes `include_draft_extend_v2=True`. A path's facts narrow the set of modes
the batch can still be in; a mode test the interpreter cannot read narrows nothing.
"""

from __future__ import annotations

import ast
from typing import Callable, Iterable, Optional

from seqguard.lint.contract.conditions import HELD, parsed_facts
from seqguard.lint.model import PathFact

# Nested predicate calls followed (`is_extend_without_speculative` -> `is_extend`).
_MAX_DEPTH = 6
Truth = Optional[bool]   # True, False, or None: cannot tell
# what a parameter bound to the batch's mode holds in the interpreter's environment
_MODE = object()
# A call of a project function -> (its def, leading parameters the call leaves out).
Resolver = Callable[[ast.Call], Optional[tuple[ast.FunctionDef, int]]]


class ModeDomain:
    """Members and predicates of one enum class; `mode_attribute` names the attribute
    (or parameter) that holds a batch's mode (`forward_batch.forward_mode`, `forward_mode`)."""

    def __init__(self, enum: ast.ClassDef, mode_attribute: str) -> None:
        self.name = enum.name
        self.mode_attribute = mode_attribute
        self.members: tuple[str, ...] = tuple(
            t.id for s in enum.body if isinstance(s, (ast.Assign, ast.AnnAssign))
            for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
            if isinstance(t, ast.Name) and not t.id.startswith("_"))
        self.predicates: dict[str, ast.FunctionDef] = {}
        self._resolver: Optional[Resolver] = None
        for statement in enum.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.args.args:
                self.predicates[statement.name] = statement  # the last definition wins, as in Python

    # ---- narrowing by path facts ------------------------------------------------------
    def possible(self, facts: Iterable[PathFact], resolver: Optional[Resolver] = None
                 ) -> tuple[frozenset[str], list[PathFact]]:
        """The members still possible after `facts`, and the facts that narrowed them.
        `resolver` finds the project's own helpers a test calls with the mode
        (`self._is_speculative_paged_mode(fb.forward_mode)`): their bodies are read too."""
        modes = set(self.members)
        used = []
        for fact, node, polarity in parsed_facts(facts):
            if not self._mentions_mode(node):
                continue
            before = len(modes)
            wanted = polarity == HELD
            self._resolver = resolver
            try:
                modes = {m for m in modes if self.truth(node, m) in (None, wanted)}
            finally:
                self._resolver = None
            if len(modes) != before:
                used.append(fact)
        return frozenset(modes), used

    def _mentions_mode(self, node: ast.AST) -> bool:
        return any(self._is_mode(n) for n in ast.walk(node) if isinstance(n, (ast.Attribute, ast.Name)))

    def _is_mode(self, node: ast.AST) -> bool:
        """`x.forward_mode`, a name `forward_mode`, or one ending so (`logical_forward_mode`,
        `fb.actual_forward_mode`): the batch's mode, as engines name it."""
        if isinstance(node, ast.IfExp):  # `(fb.logical_forward_mode if linear else fb.forward_mode)`
            return self._is_mode(node.body) and self._is_mode(node.orelse)
        name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
        return name is not None and (name == self.mode_attribute or name.endswith("_" + self.mode_attribute))

    def _member(self, node: ast.AST) -> Optional[str]:
        """`ForwardMode.EXTEND` (or `fbi.ForwardMode.EXTEND`) -> "EXTEND"."""
        if isinstance(node, ast.Attribute) and node.attr in self.members:
            base = node.value
            if (isinstance(base, ast.Name) and base.id == self.name) or \
                    (isinstance(base, ast.Attribute) and base.attr == self.name):
                return node.attr
        return None

    def truth(self, node: ast.AST, mode: str) -> Truth:
        """The value of a test at a point of the program where the batch is in `mode`."""
        return self._eval(node, mode, None, {}, 0)

    # ---- the interpreter ----------------------------------------------------------------
    def _eval(self, node: ast.AST, mode: str, self_name: Optional[str], env: dict, depth: int) -> Truth:
        if isinstance(node, ast.BoolOp):
            values = [self._eval(v, mode, self_name, env, depth) for v in node.values]
            if isinstance(node.op, ast.And):
                return False if False in values else (True if all(v is True for v in values) else None)
            return True if True in values else (False if all(v is False for v in values) else None)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            value = self._eval(node.operand, mode, self_name, env, depth)
            return None if value is None else not value
        if isinstance(node, ast.IfExp):
            test = self._eval(node.test, mode, self_name, env, depth)
            body = self._eval(node.body, mode, self_name, env, depth)
            orelse = self._eval(node.orelse, mode, self_name, env, depth)
            if test is None:
                return body if body == orelse else None
            return body if test else orelse
        if isinstance(node, ast.Constant):
            return bool(node.value) if isinstance(node.value, (bool, int, type(None))) else None
        if isinstance(node, ast.Name):
            value = env.get(node.id)
            return None if value is _MODE else value
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return self._compare(node, mode, self_name, env)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = node.func.value
            is_self = isinstance(receiver, ast.Name) and (receiver.id == self_name or env.get(receiver.id) is _MODE)
            if (is_self or self._is_mode(receiver)) and node.func.attr in self.predicates:
                return self._call(self.predicates[node.func.attr], node, mode, env if is_self else {}, depth)
        if isinstance(node, ast.Call) and self._resolver is not None and depth < _MAX_DEPTH \
                and any(self._is_this_mode(a, self_name, env) for a in node.args):
            return self._helper(node, mode, self_name, env, depth)
        return None

    def _helper(self, call: ast.Call, mode: str, self_name: Optional[str], env: dict, depth: int) -> Truth:
        """A project function handed the mode (`_is_speculative_paged_mode(fb.forward_mode)`):
        its body, with the mode bound to that parameter."""
        found = self._resolver(call)
        if found is None:
            return None
        function, skip = found
        expression = _body_value(function)
        if expression is None:
            return None
        params = [a.arg for a in (*function.args.posonlyargs, *function.args.args)][skip:]
        inner: dict = {}
        for name, value in zip(params, call.args):
            inner[name] = _MODE if self._is_this_mode(value, self_name, env) else \
                self._eval(value, mode, self_name, env, depth)
        for keyword in call.keywords:
            if keyword.arg is not None:
                inner[keyword.arg] = _MODE if self._is_this_mode(keyword.value, self_name, env) else \
                    self._eval(keyword.value, mode, self_name, env, depth)
        return self._eval(expression, mode, None, inner, depth + 1)

    def _is_this_mode(self, node: ast.AST, self_name: Optional[str], env: Optional[dict] = None) -> bool:
        if isinstance(node, ast.Name) and ((self_name is not None and node.id == self_name)
                                           or (env is not None and env.get(node.id) is _MODE)):
            return True
        return self._is_mode(node) and not (isinstance(node, ast.Name) and env is not None and node.id in env)

    def _compare(self, node: ast.Compare, mode: str, self_name: Optional[str], env: Optional[dict] = None) -> Truth:
        left, op, right = node.left, node.ops[0], node.comparators[0]
        if not self._is_this_mode(left, self_name, env):
            left, right = right, left
            if not self._is_this_mode(left, self_name, env):
                return None
        if isinstance(right, ast.Constant) and right.value is None and isinstance(op, (ast.Is, ast.IsNot)):
            return isinstance(op, ast.IsNot)  # a mode is never None
        if isinstance(op, (ast.Eq, ast.Is, ast.NotEq, ast.IsNot)):
            member = self._member(right)
            if member is None:
                return None
            return (mode == member) == isinstance(op, (ast.Eq, ast.Is))
        if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            members = [self._member(e) for e in right.elts]
            if None in members:
                return None
            return (mode in members) == isinstance(op, ast.In)
        return None

    def _call(self, predicate: ast.FunctionDef, call: ast.Call, mode: str, outer: dict, depth: int) -> Truth:
        if depth >= _MAX_DEPTH:
            return None
        expression = _body_value(predicate)
        if expression is None:
            return None
        params = [a.arg for a in predicate.args.args]
        self_name, params = params[0], params[1:]
        env: dict[str, Truth] = {}
        defaults = predicate.args.defaults
        for name, default in zip(params[len(params) - len(defaults):], defaults):
            env[name] = self._eval(default, mode, None, {}, depth)
        for name, value in zip(params, call.args):
            env[name] = self._eval(value, mode, None, outer, depth)
        for keyword in call.keywords:
            if keyword.arg in params:
                env[keyword.arg] = self._eval(keyword.value, mode, None, outer, depth)
            elif keyword.arg is None:
                return None  # `**kwargs`: cannot tell which arguments are passed
        return self._eval(expression, mode, self_name, env, depth + 1)


def _body_value(function: ast.FunctionDef) -> Optional[ast.expr]:
    """What a predicate's body returns, as one expression: `if c: return v` guards
    before a final `return e` are `v if c else e` (after a docstring); None for any
    other body."""
    body = [s for s in function.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str))]
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        return None
    value: ast.expr = body[-1].value
    for statement in reversed(body[:-1]):
        if not (isinstance(statement, ast.If) and not statement.orelse and len(statement.body) == 1
                and isinstance(statement.body[0], ast.Return) and statement.body[0].value is not None):
            return None
        value = ast.IfExp(statement.test, statement.body[0].value, value)
    return value
