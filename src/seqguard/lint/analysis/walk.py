"""The walk: one pass over a module's `ast`, statement by statement, carrying the
set of expressions known not to be None (`guards`), classifying each use of a mirror
or an alias of one (`usage`), and reporting classes, flag declarations and host
pulls as it meets them (`classes`). The result is plain data (`lint.model`).

Works on `ast` (about ten times faster to build than a concrete syntax tree); the
codemod maps the positions found here onto its libcst tree.
Why one long module: it is the one pass over a module's `ast`, one visitor whose
scope state (guards on the path, aliases, types) every statement kind reads and
updates; split by statement kind, each part would need that whole state passed in.
What is not the walk itself lives beside it (`guards`, `usage`, `classes`, `terms`,
`values`, `source`)."""

from __future__ import annotations

import ast
import bisect
import builtins
import copy
import unicodedata
import dataclasses
import re
from typing import Iterable, Optional, Union

from seqguard.config import DEFAULT_DEVICE_LENGTH_NAME_PARTS, DEFAULT_HOST_NAME_WORDS
from seqguard.lint.analysis.classes import FLAG, Declarations, ModuleNames, names_defined, record_imports
from seqguard.lint.analysis.facts import Facts
from seqguard.lint.analysis.guards import (
    EXIT_STATEMENTS, HELD, atom, bound_keys, bound_keys_of_target, catches_none_errors, compared_link, drop_keys_under,
    guard_keys, indexes_any, is_never_none, mentioned_keys, mentions_any, nonnull_when_false, nonnull_when_true,
    own_nodes,
)
from seqguard.lint.analysis.names import (
    dotted, expression_key, getattr_target, indexes_with, is_under, key_root, keys_of, names_host_copy,
)
from seqguard.lint.analysis.terms import Terms, annotation_terms, expression_terms, is_optional_annotation
from seqguard.lint.analysis.usage import (
    data_roots,
    host_pull,
    may_replace,
    passed_to,
    receiver_root,
    usage_of,
)
from seqguard.lint.analysis.values import MAYBE, NEVER, NONE, Values, stored_values
from seqguard.lint.model import (
    Callee, CalleeHead, ClassFacts, HostPull, Import, MirrorAccess, MirrorStore, PathFact, StoreKind, Usage,
)

_COMPOUND = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Try, ast.Match)
# Each statement kind's walker (`ModuleWalker._walk_<kind>`); any other kind is walked
# as a simple statement (its expressions, and a `return`'s facts).
_STATEMENT_WALKERS = {
    "FunctionDef": "_walk_def", "AsyncFunctionDef": "_walk_def", "ClassDef": "_walk_class", "If": "_walk_if",
    "While": "_walk_while", "For": "_walk_for", "AsyncFor": "_walk_for", "With": "_walk_with",
    "AsyncWith": "_walk_with", "Try": "_walk_try", "TryStar": "_walk_try", "Match": "_walk_match",
    "Assign": "_walk_assign", "AnnAssign": "_walk_ann_assign", "AugAssign": "_walk_aug_assign",
    "Assert": "_walk_assert",
}
class _Unreachable:
    """What a compound statement's walk returns when no path falls out of it (every
    branch returns, raises, breaks or continues); one instance, told by identity."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNREACHABLE"


_UNREACHABLE = _Unreachable()
_SUBEXPRESSIONS = (ast.expr, ast.keyword, ast.comprehension, ast.arguments)
# what makes a line one where an expression can rebind a name: a walrus, or a closure's
# `nonlocal` (its calls rebind the enclosing function's name)
_REBINDING_WORDS = (":=", "nonlocal")
# Attributes of a watched function that neither call it nor hand it out; any other
# (`HANDLERS.get(mode)`, `HANDLERS.copy()`, `f.__wrapped__`, `f.__call__`) is a use of
# it other than a call, whose calls cannot be seen
_HARMLESS_ATTRIBUTES = frozenset({"__name__", "__qualname__", "__doc__", "__module__", "cache_clear", "cache_info"})
# `functools.partial(f, ...)`, as written: a call of `f` with what it binds
_PARTIAL = frozenset({"functools.partial", "partial"})


def _is_mode_expression(node: ast.AST, words: frozenset) -> bool:
    """An attribute naming a mode word (`fb.forward_mode`, `fb.logical_forward_mode`),
    or a conditional choosing between two such: what a mode alias may be bound to."""
    if isinstance(node, ast.IfExp):
        return _is_mode_expression(node.body, words) and _is_mode_expression(node.orelse, words)
    if not isinstance(node, ast.Attribute) or not all(
            isinstance(n, (ast.Attribute, ast.Name, ast.Load)) for n in ast.walk(node)):
        return False
    return node.attr in words or any(node.attr.endswith("_" + w) for w in words)


class _Substitute(ast.NodeTransformer):
    def __init__(self, aliases: dict[str, ast.expr]) -> None:
        self.aliases = aliases

    def visit_Name(self, node: ast.Name) -> ast.AST:
        bound = self.aliases.get(node.id)
        return copy.deepcopy(bound) if bound is not None and isinstance(node.ctx, ast.Load) else node


def _lines_mentioning(source: str, words: Iterable[str]) -> list[int]:
    """Line numbers (ascending, each once) of the lines holding one of `words`. Each
    word is searched for alone with `str.find` (a regex alternation of them tries every
    word at every position: a tenth of a cold lint on SGLang)."""
    find = source.find
    starts = []
    for word in set(words):
        if not word:
            continue
        at = find(word)
        while at != -1:
            starts.append(at)
            at = find("\n", at + len(word))   # one match a line is enough
            if at == -1:
                break
            at = find(word, at + 1)
    starts.sort()
    lines, line, last = [], 1, 0
    for start in starts:
        line += source.count("\n", last, start)
        last = start
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


def _in_lines(lines: list[int], first: int, last: int) -> bool:
    i = bisect.bisect_left(lines, first)
    return i < len(lines) and lines[i] <= last


_DOTTED_KEY = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")


def _key_known(node: ast.AST, nonnull: Facts) -> bool:
    """`expression_key(node) in nonnull`, without unparsing an expression (a call, an
    operation) when every key held is a dotted name, which no such expression spells:
    its text has brackets, operators or spaces. (Down an attribute chain to a name or a
    constant, the key is built: `True.real` spells a dotted name.)"""
    bottom = node
    while isinstance(bottom, ast.Attribute):
        bottom = bottom.value
    if isinstance(bottom, (ast.Name, ast.Constant)) or getattr_target(bottom) is not None or \
            nonnull.has_undotted():
        return expression_key(node) in nonnull
    return False


class _Scope:
    """Per-function state: aliases of mirrors and names derived from device lengths."""

    def __init__(self, name: str, class_qualname: Optional[str], self_name: Optional[str],
                 method_name: Optional[str]) -> None:
        self.name = name
        self.class_qualname = class_qualname
        self.self_name = self_name
        self.method_name = method_name
        self.aliases: dict[str, tuple[str, str]] = {}  # local -> (mirror key, mirror attr)
        self.device_names: set[str] = set()
        self.stale: set[str] = set()  # aliases whose object has been rebound since
        self.conditions: dict[str, tuple[frozenset, frozenset]] = {}  # see Conditions
        self.condition_keys: dict[str, set[str]] = {}  # local boolean -> what its test mentions
        self.condition_roots: dict[str, set[str]] = {}  # ... and the names those start with
        self.imports: dict[str, Import] = {}       # imports inside the function (classes defined there use them)
        self.types: dict[str, Terms] = {}          # local -> type terms (parameter annotations, constructors)
        self.values: dict[str, Values] = {}        # local -> what storing it into a mirror gives
        self.alias_types: dict[str, Terms] = {}    # alias of a mirror -> terms of the object it hangs on
        self.cls_name: Optional[str] = None        # `cls` in a classmethod
        self.mode_aliases: dict[str, ast.expr] = {}  # local -> the mode expression it names
        self.pending: Optional[tuple] = None       # (def, is_method) whose parameters are not read yet
        # closure -> the names of this function it rebinds through `nonlocal` (see
        # `closure_rebinds`); and the names rebound by a closure handed out as a value
        self.rebinders: dict[str, frozenset[str]] = {}
        self.escaped: frozenset[str] = frozenset()
        # local -> the mirrors a mapping bound to it holds (`d = {"total": b.seq_lens_sum}`):
        # (key, value, mirror, the facts where it was built), handed on by `f(**d)`
        self.splats: dict[str, list[tuple[str, ast.expr, tuple[str, str], set]]] = {}
        # the class whose methods this scope's `self` may call (see `_self_writers`)
        self.class_node: Optional[ast.ClassDef] = None

    def forget(self, rebound: Iterable[str]) -> None:
        """`rebound` names or attributes were assigned: tests held about them are stale."""
        rebound = list(rebound)
        roots = {key_root(r) for r in rebound}
        stale = [name for name in self.conditions
                 if name in rebound or (self.condition_roots[name] & roots and any(
                     is_under(k, r) for k in self.condition_keys[name] for r in rebound))]
        for name in stale:
            del self.conditions[name]
        # an alias names the mode of an object: rebinding the object (`fb = other`,
        # `for fb in ...`, `fb.forward_mode = ...`) leaves the alias naming the old one's
        keys = set(rebound)
        for name in [n for n, value in self.mode_aliases.items()
                     if n in rebound or key_root(n) in roots or mentions_any(value, keys)]:
            del self.mode_aliases[name]


class ModuleAnalysis:
    """One walk over a module: mirror accesses with their guard state, classes with
    their flag declarations and host pulls, and the import table."""

    def __init__(self, mirrors: Iterable[str], device_attribute: str, source: Optional[str] = None,
                 words: Iterable[str] = (), device_lengths: Iterable[str] = (), flag: str = FLAG,
                 host_words: Iterable[str] = DEFAULT_HOST_NAME_WORDS,
                 length_parts: Iterable[str] = DEFAULT_DEVICE_LENGTH_NAME_PARTS) -> None:
        """`words`: names the engine model reads tests by (the forward-mode attribute,
        the conditions it states): statements that mention one are walked for their
        path facts although they touch no mirror. `flag`: what a backend declares.
        `host_words`, `length_parts`: the naming conventions that say a tensor is a host
        copy, or device lengths (`host-name-words`, `device-length-name-parts`)."""
        self.mirrors = frozenset(mirrors)
        self.host_words = tuple(host_words)
        self.length_parts = tuple(length_parts)
        self.flag = flag
        self.words = frozenset(words)
        # Lines that can matter; a function whose lines mention none of these holds no
        # access, flag or host pull, so its body is not walked (most of a parsed file).
        # A function is walked when its lines mention a mirror, the flag or a device
        # length; inside one, a statement also when it mentions a condition word (its
        # test is a path fact for the reads after it).
        self._relevant_lines: Optional[list[int]] = None
        self._condition_lines: Optional[list[int]] = None
        # lines holding `:=` or `nonlocal` (None: not known): where an expression, or a
        # call of a closure, can rebind a name
        self._walrus_lines: Optional[list[int]] = None
        # the module's lines: a method body the skeleton took out is read from its text
        self._source_lines: Optional[list[str]] = None
        self._writers: dict[int, dict[str, frozenset[str]]] = {}  # id(class) -> `_self_writers`
        if source is not None:
            if not source.isascii():
                # Python reads identifiers after NFKC normalisation (`b.ｓeq_lens_cpu` is
                # `b.seq_lens_cpu`); the line search must too (it keeps lines as they are)
                source = unicodedata.normalize("NFKC", source)
            self._source_lines = source.split("\n")
            self._relevant_lines = _lines_mentioning(
                source, (*self.mirrors, flag, device_attribute, *device_lengths, "class "))
            self._condition_lines = _lines_mentioning(source, self.words) if self.words else []
            self._walrus_lines = _lines_mentioning(source, _REBINDING_WORDS)
        self.device_attribute = device_attribute
        self.device_lengths = (device_attribute, *device_lengths)
        self.accesses: list[MirrorAccess] = []
        self.stores: list[MirrorStore] = []
        self._rendered: dict[int, str] = {}  # id(test node) -> its source, for path facts
        self._watch: frozenset[str] = frozenset()  # names whose calls `call_sites` records
        # path facts of the `with` contexts open here: a closure or lambda defined inside
        # may run after the context closed, so it does not keep them
        self._entered: frozenset = frozenset()
        self._stop_line = 1 << 62  # `call_sites`: the last line worth walking
        self.calls: list[CallRecord] = []
        # watched names used other than by a call, with what holds there (`return Worker`
        # under a test) and the object of `obj.m`
        self.references: list[CallRecord] = []
        self._returns: Optional[list[set]] = None  # `true_summary`: facts at each return that may be truthy
        self._asserted: frozenset = frozenset()  # keys the `assert` being walked establishes
        self.classes: list[ClassFacts] = []
        self.names = ModuleNames()
        self._declarations = Declarations(flag)
        self._scope = _Scope("<module>", None, None, None)
        self._conditional_depth = 0
        self._tolerant = 0  # inside `try:` bodies whose handlers catch what a None read raises

    @property
    def relevant_lines(self) -> Optional[list[int]]:
        """The lines that make a function worth walking (None: every function is)."""
        return self._relevant_lines

    # ---- entry -------------------------------------------------------------------
    def run(self, tree: ast.Module) -> "ModuleAnalysis":
        self.names = names_defined(tree.body)
        self._block(tree.body, set())
        # built last: `Cls.needs_cpu_seq_lens = False` after the class still declares it
        self.classes = self._declarations.facts()
        return self

    # ---- statements ------------------------------------------------------------
    def _true(self, test: ast.AST) -> set[str]:
        return self._after_walrus(test, self._held_when_true(test))

    def _false(self, test: ast.AST) -> set[str]:
        return self._after_walrus(test, nonnull_when_false(self._unaliased(test), self._scope.conditions))

    def _held_when_true(self, test: ast.AST) -> set[str]:
        """What `test` being true says of the objects as it finds them."""
        return nonnull_when_true(self._unaliased(test), self._scope.conditions)

    def _after_walrus(self, test: ast.AST, keys: set[str]) -> set[str]:
        """`keys` less what a walrus in the test rebinds (`fb.seq_lens_cpu is not None and
        (fb := other)`: the None test was of the old object)."""
        walrus = self._rebound_inside(test) if keys else set()
        if walrus:
            keys = set(keys)
            drop_keys_under(keys, walrus)
        return keys

    def _rebound_inside(self, node: ast.AST) -> set[str]:
        """The names a walrus anywhere in `node` binds, and those a call there of a
        closure rebinds (`nonlocal b; b = other`). Only a node whose lines hold `:=` is
        searched for a walrus: searching every compound statement whole, at every level
        of its nesting, was quadratic in depth."""
        lines = self._walrus_lines
        first = getattr(node, "lineno", None)
        if first is None:
            return set()
        found = set()
        if lines is None or _in_lines(lines, first, node.end_lineno or first):
            found = {n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr)}
        rebinders, escaped = self._scope.rebinders, self._scope.escaped
        if rebinders or escaped:
            for call in ast.walk(node):
                if isinstance(call, ast.Call):
                    found |= escaped  # a closure handed out may run in any call
                    if isinstance(call.func, ast.Name):
                        found |= rebinders.get(call.func.id, frozenset())
        return found

    def _unaliased(self, test: ast.AST) -> ast.AST:
        """`test` with each local naming a batch's mode written as what it was bound to
        (`mode = fb.logical_forward_mode if linear else fb.forward_mode; if mode.is_decode()`
        is a test of the mode): path facts are read by their text."""
        aliases = self._scope.mode_aliases
        if not aliases or not any(isinstance(n, ast.Name) and n.id in aliases for n in ast.walk(test)):
            return test
        return ast.copy_location(_Substitute(aliases).visit(copy.deepcopy(test)), test)

    def _block(self, body: list[ast.stmt], inherited: set[str]) -> Optional[set[str]]:
        """Walk `body`; the keys known non-None where control falls out of its end, or
        None when it never does (every path returns, raises, breaks or continues)."""
        nonnull = inherited.copy() if type(inherited) is Facts else Facts(inherited, self.mirrors)
        for stmt in body:
            if stmt.lineno > self._stop_line:
                break  # `call_sites`: nothing after the last watched call can matter to it
            after = self._stmt(stmt, nonnull)
            if after is _UNREACHABLE or isinstance(stmt, EXIT_STATEMENTS):
                return None
            if after is not None:
                nonnull = after
            elif isinstance(stmt, ast.Assert):
                nonnull |= self._true(stmt.test)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                self._assigned(targets, stmt.value, nonnull)
            elif isinstance(stmt, (ast.AugAssign, ast.Delete, ast.Import, ast.ImportFrom)) \
                    and (nonnull or self._scope.conditions or self._scope.mode_aliases):
                rebound = bound_keys([stmt])
                drop_keys_under(nonnull, rebound)
                self._scope.forget(rebound)
        return nonnull

    def _assigned(self, targets: list[ast.expr], value: ast.expr, nonnull: set[str]) -> None:
        """What `targets = value` does to the None-ness known so far, and to the tests
        that local booleans hold."""
        condition = None
        alias = None   # made once what the assignment rebinds is forgotten
        if len(targets) == 1 and isinstance(targets[0], ast.Name):
            name = targets[0].id
            self._scope.mode_aliases.pop(name, None)
            if self.words and _is_mode_expression(value, self.words):
                alias = (name, value)
        if len(targets) == 1 and isinstance(targets[0], ast.Name):
            # computed before the name is forgotten: `ok = ok and x is not None` builds on the old `ok`
            when_true, when_false = self._true(value) - {targets[0].id}, self._false(value)
            # only a test that says something about a mirror, or names a word of the
            # engine model (`is_two_chunk = fb.forward_mode == ForwardMode.EXTEND and ...`),
            # is worth keeping (each kept one makes the rest of the function walked)
            if any(type(k) is str and (k.rsplit(".", 1)[-1] in self.mirrors or k in self._scope.aliases)
                   for k in when_true | when_false) or self._mentions_condition_word(value):
                condition = (frozenset(when_true), frozenset(when_false))
        known = is_never_none(value)
        if not known and nonnull:  # keys are only worth building when something is guarded
            indexed = value.value if isinstance(value, ast.Subscript) else None
            known = _key_known(value, nonnull) or (indexed is not None and _key_known(indexed, nonnull))
        for target in targets:
            if not (nonnull or known or self._scope.conditions or self._scope.mode_aliases):
                break  # nothing known that this could change (most assignments)
            target_keys = keys_of(target) if isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)) \
                else bound_keys_of_target(target)
            if self._scope.conditions or self._scope.mode_aliases:
                self._scope.forget(target_keys)
            if not (known or any(nonnull.any_under(t) for t in target_keys)
                    or indexes_any(nonnull, target_keys)):
                continue
            if mentions_any(value, target_keys):
                # `X = f(X)`: non-None afterwards only if X was before; otherwise a
                # guard that skips this statement would leave X None for what follows.
                if not all(k in nonnull for k in target_keys):
                    drop_keys_under(nonnull, target_keys)
                else:
                    drop_keys_under(nonnull, {k + "." for k in target_keys})
            elif known and isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)):
                drop_keys_under(nonnull, target_keys)
                nonnull |= target_keys
            else:
                drop_keys_under(nonnull, target_keys)
        if alias is not None:
            self._scope.mode_aliases[alias[0]] = alias[1]
        if condition is not None:
            name = targets[0].id
            self._scope.conditions[name] = condition
            self._scope.condition_keys[name] = keys = mentioned_keys(value)
            self._scope.condition_roots[name] = {key_root(k) for k in keys}

    def _stmt(self, stmt: ast.stmt, nonnull: set[str]) -> Union[set[str], None, _Unreachable]:
        scope = self._scope
        if nonnull or scope.conditions or scope.mode_aliases or scope.types or scope.aliases:
            # `if (mode := pick(fb)):`, `print(fb := other)`: a walrus anywhere in the
            # statement rebinds its name before what follows (forgotten up front: the
            # guards, tests, types and aliases held about it are stale wherever in the
            # statement it runs; an operand of `or`, a comprehension, works on a copy of
            # the guards the statement holds)
            walrus = self._rebound_inside(stmt)
            if walrus:
                scope.forget(walrus)
                drop_keys_under(nonnull, walrus)
                self._forget_names(walrus)
            self._drop_moved_indexes([stmt], nonnull)
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.Try, ast.Match, ast.With, ast.AsyncWith)) \
                or type(stmt).__name__ == "TryStar":
            # a body that may not run (or may stop anywhere) keeps the aliases it found
            before = dict(self._scope.aliases)
            after = self._walk_stmt(stmt, nonnull)
            self._scope.aliases = {**self._scope.aliases, **{k: v for k, v in before.items()
                                                             if k not in self._scope.aliases}}
            return after
        return self._walk_stmt(stmt, nonnull)

    def _walk_stmt(self, stmt: ast.stmt, nonnull: set[str]) -> Union[set[str], None, _Unreachable]:
        """Walk one statement. A compound statement returns the keys non-None after it
        (the join of its branches; _UNREACHABLE when none falls through); a simple one
        returns None and `_block` applies its effect."""
        compound = isinstance(stmt, _COMPOUND)
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) and self._scope.name != "<module>":
            record_imports(stmt, self._scope.imports)
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and not (self._scope.aliases or self._scope.device_names or self._scope.conditions
                         or self._scope.splats) \
                and not self._is_relevant(stmt.lineno, stmt.end_lineno or stmt.lineno) \
                and not self._mentions_condition_word(stmt) \
                and not _is_early_exit(stmt):
            # No mirror, flag or device-length name here, and no local alias of one in
            # scope (a read through an alias names neither): nothing here can matter,
            # except what it rebinds.
            scope = self._scope
            if scope.types or scope.values or scope.alias_types or scope.mode_aliases:
                # `fb = other` walked past: the type `fb` had (and a mode alias of it) is gone
                rebound = bound_keys([stmt])
                self._forget_names(rebound)
                if compound and scope.mode_aliases:
                    scope.forget(rebound)
            if compound and (nonnull or scope.conditions):
                return self._without_rebound(stmt, nonnull)
            return None
        return getattr(self, _STATEMENT_WALKERS.get(type(stmt).__name__, "_walk_simple"))(stmt, nonnull)

    # ---- one walker per statement kind (_STATEMENT_WALKERS) ---------------------------
    def _walk_def(self, stmt: ast.FunctionDef | ast.AsyncFunctionDef, nonnull: set[str]) -> None:
        self._function(stmt, nonnull)

    def _walk_class(self, stmt: ast.ClassDef, nonnull: set[str]) -> None:
        self._class(stmt)

    def _walk_if(self, stmt: ast.If, nonnull: set[str]) -> Union[set[str], "_Unreachable"]:
        self._expr(stmt.test, nonnull, [stmt])
        self._conditional_depth += 1
        before = dict(self._scope.aliases)
        body_end = self._block(stmt.body, nonnull | self._true(stmt.test))
        after_body, self._scope.aliases = self._scope.aliases, dict(before)
        ends = [body_end, self._block(stmt.orelse, nonnull | self._false(stmt.test))]
        # a name is a mirror's alias after the `if` if it is one on either path
        self._scope.aliases = {**after_body, **self._scope.aliases}
        self._conditional_depth -= 1
        ends = [e for e in ends if e is not None]
        return ends[0].intersection(*ends[1:]) if ends else _UNREACHABLE

    def _walk_while(self, stmt: ast.While, nonnull: set[str]) -> set[str]:
        self._expr(stmt.test, nonnull, [stmt])
        self._conditional_depth += 1
        self._block(stmt.body, self._without_rebound(stmt, nonnull) | self._true(stmt.test))
        self._block(stmt.orelse, nonnull | self._false(stmt.test))
        self._conditional_depth -= 1
        after = self._without_rebound(stmt, nonnull)
        # `while b.seq_lens_cpu is None: b = nxt(b)`: without a break, the loop ends
        # only when its test fails.
        if not any(isinstance(n, ast.Break) for n in own_nodes(stmt.body, loops=False)):
            after |= self._false(stmt.test)
        return after

    def _walk_for(self, stmt: ast.For | ast.AsyncFor, nonnull: set[str]) -> set[str]:
        self._expr(stmt.iter, nonnull, [stmt])
        self._bind(stmt.target, None)
        inside = self._without_rebound(stmt, nonnull)
        self._conditional_depth += 1
        self._block(stmt.body, inside)
        self._block(stmt.orelse, inside)
        self._conditional_depth -= 1
        return inside

    def _walk_with(self, stmt: ast.With | ast.AsyncWith, nonnull: set[str]) -> set[str]:
        for item in stmt.items:
            self._expr(item.context_expr, nonnull, [stmt])
        inside = nonnull.copy()
        for item in stmt.items:
            if item.optional_vars is not None:
                # `with swap(other) as fb:` binds `fb` anew: its guards, tests, type and
                # mode aliases are of the old object
                rebound = bound_keys_of_target(item.optional_vars)
                drop_keys_under(inside, rebound)
                self._scope.forget(rebound)
                self._bind(item.optional_vars, None)
        # the body runs inside each context a call opened (`with model_capture_mode():`):
        # a path fact, as an `if` test is, for conditions that name the context
        entered = {atom(item.context_expr, HELD) for item in stmt.items if isinstance(item.context_expr, ast.Call)}
        outer, self._entered = self._entered, self._entered | entered
        try:
            end = self._block(stmt.body, inside | entered)
        finally:
            self._entered = outer
        # a context manager may swallow what the body raised: its end is not certain
        if end is not None and not self._scope.conditions:
            return end - entered  # the context is closed after the block
        return self._without_rebound(stmt, nonnull)

    def _walk_try(self, stmt: ast.Try, nonnull: set[str]) -> set[str]:
        tolerant = any(catches_none_errors(h) for h in stmt.handlers)
        inside = self._without_rebound(stmt, nonnull)
        self._conditional_depth += 1
        self._tolerant += tolerant
        # A handler is entered from wherever in the body its exception is raised. What
        # it catches (`except ValueError:`) no load and no `is` test raises, so nothing
        # before the first statement that may raise it can (`if b.seq_lens_cpu is None:
        # return 0`): the handler starts from what held there, less what the rest of
        # the body may rebind; the statement after the `try` from what held at the end
        # of each path that falls out of it.
        first = self._first_raising(stmt.body) if catches_only_what_calls_raise(stmt.handlers) else 0
        end = self._block(stmt.body[:first], nonnull)
        rest = stmt.body[first:]
        entry = inside if not first or end is None else self._without_rebound_in(rest, end)
        if end is not None:
            end = self._block(rest, end)
        self._tolerant -= tolerant
        ends = [self._block(handler.body, entry) for handler in stmt.handlers]
        ends.append(self._block(stmt.orelse, end if first and end is not None else inside))
        self._block(stmt.finalbody, inside)
        self._conditional_depth -= 1
        ends = [e for e in ends if e is not None]
        if not first or not ends:
            return inside
        return self._without_rebound_in(stmt.finalbody, ends[0].intersection(*ends[1:]))

    def _first_raising(self, body: list[ast.stmt]) -> int:
        """The index of the first statement of `body` that may raise what a call raises
        (`len(body)` when none does): one that only tests for None, stores a load, or
        leaves, does not."""
        booleans = self._scope.conditions
        for i, stmt in enumerate(body):
            if not _cannot_raise(stmt, booleans):
                return i
        return len(body)

    def _without_rebound_in(self, body: list[ast.stmt], nonnull: set) -> set:
        """`nonnull` less what `body` may rebind anywhere in it (by a walrus, or by a
        call of a closure, too)."""
        kept = nonnull.copy()
        if body and kept:
            drop_keys_under(kept, bound_keys(body).union(*(self._rebound_inside(s) for s in body)))
            self._drop_moved_indexes(body, kept)
        return kept

    def _drop_moved_indexes(self, body: list[ast.stmt], nonnull: set) -> None:
        """Forget the keys reached through an index that a call in `body` of a method of
        the object moves (`self.advance()` doing `self.idx += 1` for
        `self.batches[self.idx]`). Only indexes: a method rebinding `self.batch` itself is
        left to the project's judgement of that method."""
        scope = self._scope
        if scope.class_node is None or not scope.self_name:
            return
        owner = scope.self_name
        bracketed = nonnull.bracketed if type(nonnull) is Facts else [k for k in nonnull if type(k) is str and "[" in k]
        bracketed = [k for k in bracketed if indexes_with(k, owner)]
        if not bracketed:
            return
        writers = self._self_writers(scope.class_node)
        moved = {f"{owner}.{attr}" for stmt in body for call in own_nodes([stmt])
                 if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                 and isinstance(call.func.value, ast.Name) and call.func.value.id == owner
                 for attr in writers.get(call.func.attr, ())}
        if moved:
            for key in [k for k in bracketed if any(indexes_with(k, m) for m in moved)]:
                nonnull.discard(key)

    def _self_writers(self, cls: ast.ClassDef) -> dict[str, frozenset[str]]:
        """`self_attribute_writers` of `cls`, once per class, asked only where a guard
        indexes through `self`."""
        found = self._writers.get(id(cls))
        if found is None:
            found = self._writers[id(cls)] = self_attribute_writers(cls, self._source_lines)
        return found

    def _walk_match(self, stmt: ast.Match, nonnull: set[str]) -> set[str]:
        self._expr(stmt.subject, nonnull, [stmt])
        inside = self._without_rebound(stmt, nonnull)
        self._conditional_depth += 1
        before, found, captured = dict(self._scope.aliases), {}, set()
        # (class or None for any, key): a case runs only where those before it did not
        # match, so after `case Batch(seq_lens_cpu=None):` a later `case Batch(...)` sees
        # the mirror set, and after `case None:` every later case sees the subject set
        unmatched: list[tuple[Optional[str], str]] = []
        for case in stmt.cases:
            self._scope.aliases = dict(before)
            narrowed = inside.copy()
            cls = _pattern_class(case.pattern)
            narrowed |= {key for of, key in unmatched if of is None or of == cls}
            captured |= self._bind_captures(case.pattern, stmt.subject, narrowed)
            if case.guard is not None:
                self._expr(case.guard, narrowed, [case])
                narrowed |= self._true(case.guard)
            else:
                unmatched += _none_patterns(case.pattern, stmt.subject)
            self._block(case.body, narrowed)
            found.update(self._scope.aliases)
        # after the `match` a captured name is what some case made it, or what it was
        # (no case matched): its type is not told; it is a mirror's alias if it is one
        # on some path
        self._forget_names(captured)
        self._scope.aliases = {**before, **found}
        self._conditional_depth -= 1
        return inside

    def _bind_captures(self, pattern: ast.pattern, subject: ast.expr, narrowed: set) -> set[str]:
        """Bind the names a case captures, and say which: `case Batch(seq_lens_cpu=lens):`
        makes `lens` an alias of `subject.seq_lens_cpu` (None where the batch's is), as
        does `case lens:` of a mirror subject; a pattern None cannot match (`case
        Tensor() as lens:`) captures no None."""
        captured: dict[str, tuple[Optional[ast.expr], bool, Terms]] = {}
        for name, value, may_be_none, terms in _pattern_captures(pattern, subject):
            known = captured.get(name)
            if known is None:
                captured[name] = (value, may_be_none, terms)
            elif known[0] is not None and self._mirror_of(known[0]) is not None:
                # `case (Tensor() as lens) | lens`: the mirror by either way
                captured[name] = (known[0], known[1] or may_be_none, known[2])
            else:
                captured[name] = (value, known[1] or may_be_none, terms)
        for name, (value, may_be_none, terms) in captured.items():
            self._bind(ast.Name(name, ast.Store()), value, narrowed)
            if value is not None and name in self._scope.aliases and terms:
                self._scope.alias_types[name] = terms  # the class the pattern matched
            if not may_be_none:
                narrowed.add(name)
        return set(captured)

    def _walk_assign(self, stmt: ast.Assign, nonnull: set[str]) -> None:
        self._assign(stmt, stmt.targets, stmt.value, nonnull)

    def _walk_ann_assign(self, stmt: ast.AnnAssign, nonnull: set[str]) -> None:
        self._assign(stmt, [stmt.target], stmt.value, nonnull)

    def _walk_aug_assign(self, stmt: ast.AugAssign, nonnull: set[str]) -> None:
        self._aug_assign(stmt, nonnull)

    def _walk_assert(self, stmt: ast.Assert, nonnull: set[str]) -> None:
        # `assert b.seq_lens_cpu is not None`: a guard for what follows, and a crash here
        # what it asserts is of the objects as the test finds them (a walrus later in it
        # rebinds the name only for what follows, `_block` applies that)
        self._asserted = frozenset(guard_keys(self._held_when_true(stmt.test)))
        self._expr(stmt.test, nonnull, [stmt])
        self._asserted = frozenset()
        if stmt.msg is not None:
            self._expr(stmt.msg, nonnull, [stmt])

    def _walk_simple(self, stmt: ast.stmt, nonnull: set[str]) -> None:
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.expr):
                self._expr(child, nonnull, [stmt])
        if self._returns is not None and isinstance(stmt, ast.Return) and not _falsy(stmt.value):
            facts = nonnull.copy()
            if stmt.value is not None:
                facts |= self._true(stmt.value)
            self._returns.append(facts)

    def _forget_names(self, rebound: Iterable[str]) -> None:
        """What the scope knew of local names now bound to something else (their types,
        the values they would store, the mirror they aliased), as binding them to an
        unknown value forgets it."""
        for name in rebound:
            if name.isidentifier():
                self._bind(ast.Name(name, ast.Store()), None)

    def _without_rebound(self, stmt: ast.stmt, nonnull: set) -> set:
        """`nonnull` less what `stmt` may rebind somewhere inside it. Path facts alone
        are kept as they are: a statement with no word of interest in it rebinding the
        name a test started with is not worth walking every skipped statement for."""
        if not self._scope.conditions and not self._scope.mode_aliases and \
                not nonnull.has_keys():
            return nonnull.copy()
        rebound = bound_keys([stmt])
        self._scope.forget(rebound)
        kept = nonnull.copy()
        drop_keys_under(kept, rebound)
        return kept

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, nonnull: Optional[set[str]] = None) -> None:
        for decorator in node.decorator_list:
            self._expr(decorator, set(), [node])
        # defaults are evaluated where the function is defined
        for default in (*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)):
            self._expr(default, nonnull.copy() if nonnull is not None else set(), [node.args])
        # `def inner(x=b.seq_lens_sum): return x + 1`: where the default is used, the
        # parameter is the mirror in the body (guarded if the mirror was where it was defined)
        defaulted = [(name, mirror, self._object_terms(default), mirror[0] in (nonnull or ()))
                     for name, default in _defaults(node.args) for mirror in [self._mirror_of(default)]
                     if mirror is not None]
        owner = self._declarations.current(self._scope.class_qualname)
        is_method = owner is not None and self._scope.method_name is None
        if is_method:
            self._declarations.method(node, owner)
        args = node.args.posonlyargs + node.args.args
        self_name = args[0].arg if is_method and args else self._scope.self_name
        outer = self._scope
        self._scope = _Scope(
            name=node.name if outer.name == "<module>" else f"{outer.name}.{node.name}",
            class_qualname=outer.class_qualname,
            self_name=self_name,
            method_name=node.name if is_method else outer.method_name,
        )
        self._scope.imports = dict(outer.imports)  # a closure sees the names of the function it is in
        self._scope.class_node = outer.class_node
        if outer.name != "<module>" and not is_method:
            # a closure sees the enclosing function's names (unless it rebinds them)
            if outer.pending is not None:
                inner, self._scope = self._scope, outer
                self._parameters(*outer.pending)
                self._scope = inner
            self._scope.types = dict(outer.types)
            self._scope.values = dict(outer.values)
        self._scope.pending = (node, is_method)  # parameter types, read when first needed
        if outer.name != "<module>" and not is_method:
            # a closure calling the enclosing function's closures rebinds its names too
            self._scope.rebinders, self._scope.escaped = dict(outer.rebinders), outer.escaped
        for name, mirror, terms, _ in defaulted:
            self._scope.aliases[name] = mirror
            self._scope.alias_types[name] = terms
        if not self._is_relevant(node.lineno, node.end_lineno or node.lineno):
            self._scope.pending = None  # its body is not walked: nothing will ask
        depth, self._conditional_depth = self._conditional_depth, 0
        if self._is_relevant(node.lineno, node.end_lineno or node.lineno):
            # A closure defined after `if x is None: return` runs where x is not None
            # (unless x is rebound later: Pyright's rule for captured narrowing, relaxed).
            closure = nonnull is not None and outer.name != "<module>" and not is_method
            start = nonnull - self._entered if closure else set()
            # a parameter is a name of its own: what held of the enclosing one does not
            drop_keys_under(start, [a.arg for a in (*args, *node.args.kwonlyargs, node.args.vararg,
                                                    node.args.kwarg) if a is not None])
            start |= {name for name, _, _, guarded in defaulted if guarded}
            self._watch_closures(node)
            entered, self._entered = self._entered, frozenset()
            try:
                self._block(node.body, start)
            finally:
                self._entered = entered
        self._conditional_depth = depth
        self._scope = outer

    def _watch_closures(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """Record in the scope the closures of `function` that rebind its names (only a
        function whose lines say `nonlocal` can have one)."""
        lines = self._walrus_lines
        if lines is not None and not _in_lines(lines, function.lineno, function.end_lineno or function.lineno):
            return
        rebinders, escaped = closure_rebinds(function.body)
        if rebinders:
            self._scope.rebinders = {**self._scope.rebinders, **rebinders}
            self._scope.escaped = self._scope.escaped | escaped

    def _parameters(self, node: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool) -> None:
        """What the parameters' annotations and defaults say of their types and of the
        values they would give a mirror attribute."""
        scope = self._scope
        scope.pending = None
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        decorators = {dotted(d) for d in node.decorator_list}
        if is_method and "classmethod" in decorators and positional:
            scope.cls_name = positional[0].arg
        defaults = dict(zip([a.arg for a in positional][len(positional) - len(args.defaults):], args.defaults))
        defaults.update((a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)
        first = positional[0].arg if is_method and positional and "staticmethod" not in decorators else None
        for arg in (*positional, *args.kwonlyargs):
            if arg.arg == first:
                continue
            terms = annotation_terms(arg.annotation)
            if terms:
                scope.types[arg.arg] = terms
            default = defaults.get(arg.arg)
            if default is not None and isinstance(default, ast.Constant) and default.value is None:
                scope.values[arg.arg] = (NONE,)
            elif node.name == "__init__" and default is None:
                # a required constructor argument: what callers pass is a keyword store
                # of their own (`Cls(seq_lens_cpu=...)`), judged there
                scope.values[arg.arg] = (NEVER,)
            elif arg.annotation is not None and not is_optional_annotation(arg.annotation) and default is None:
                scope.values[arg.arg] = (NEVER,)  # annotated non-Optional: trusted, as NullAway does
            else:
                scope.values[arg.arg] = (MAYBE,)

    def _terms(self, node: ast.AST) -> Terms:
        scope = self._scope
        if scope.pending is not None:
            self._parameters(*scope.pending)
        return expression_terms(node, scope.types, scope.self_name, scope.class_qualname
                                if scope.self_name is not None else None, scope.cls_name)

    def _store(self, node: ast.AST, attr: str, kind: StoreKind, receiver: str, value: Optional[ast.AST],
               receiver_terms: Terms = ()) -> None:
        if self._scope.pending is not None:
            self._parameters(*self._scope.pending)
        values = (NONE,) if value is None else stored_values(value, self.mirrors, self._scope.values, self._terms)
        scope = self._scope
        self.stores.append(MirrorStore(
            line=node.lineno, col=node.col_offset, attr=attr, kind=kind, receiver=receiver,
            values=values, scope=scope.name, class_qualname=scope.class_qualname,
            receiver_types=receiver_terms))

    def _is_relevant(self, first: int, last: int) -> bool:
        if self._relevant_lines is None:
            return True
        return _in_lines(self._relevant_lines, first, last)

    def _mentions_condition_word(self, node: ast.AST) -> bool:
        if not self.words:
            return False
        if self._condition_lines is not None:
            return _in_lines(self._condition_lines, node.lineno, node.end_lineno or node.lineno)
        return any((isinstance(n, ast.Name) and n.id in self.words) or
                   (isinstance(n, ast.Attribute) and n.attr in self.words) for n in ast.walk(node))

    def _class(self, node: ast.ClassDef) -> None:
        for expr in [*node.bases, *node.decorator_list, *(k.value for k in node.keywords)]:
            self._expr(expr, set(), [node])
        outer = self._scope
        in_function = outer.name != "<module>" and outer.class_qualname != outer.name
        qualname = node.name if outer.name == "<module>" else (
            f"{outer.name}.<locals>.{node.name}" if in_function else f"{outer.name}.{node.name}")
        self._declarations.enter(node, qualname, tuple(outer.imports.items()))
        self._scope = _Scope(qualname, qualname, None, None)
        self._scope.class_node = node
        self._block(node.body, set())
        self._scope = outer
        self._declarations.leave()

    def _assign(self, stmt: ast.stmt, targets: list[ast.expr], value: Optional[ast.expr],
                nonnull: set[str]) -> None:
        if value is not None:
            self._expr(value, nonnull, [stmt])
        for target in targets:
            self._declarations.assignment(target, value, self._scope, self._conditional_depth > 0)
            if not isinstance(target, ast.Name):
                self._expr(target, nonnull, [stmt])
            self._mirror_store(target, value)
            self._bind(target, value, nonnull)

    def _mirror_store(self, target: ast.expr, value: Optional[ast.expr]) -> None:
        """`obj.seq_lens_cpu = value`, or a class-level default, is a store."""
        scope = self._scope
        if isinstance(target, ast.Attribute) and target.attr in self.mirrors:
            self._store(target, target.attr, StoreKind.ATTRIBUTE, expression_key(target.value) or "",
                        value, self._terms(target.value))
        elif (isinstance(target, ast.Name) and target.id in self.mirrors and scope.class_qualname is not None
              and scope.name == scope.class_qualname and value is not None):
            self._store(target, target.id, StoreKind.CLASS, "", _field_default(value), (f"C:{scope.class_qualname}",))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                if isinstance(element, ast.Attribute) and element.attr in self.mirrors:
                    # unpacked: the element's value is not told apart
                    self._store(element, element.attr, StoreKind.ATTRIBUTE, expression_key(element.value) or "",
                                ast.Name("<unpacked>", ast.Load()), self._terms(element.value))

    def _bind(self, target: ast.expr, value: Optional[ast.expr], nonnull: Optional[set[str]] = None) -> None:
        """Track `name = mirror` aliases and names holding device lengths."""
        scope = self._scope
        if not isinstance(target, ast.Name):
            if isinstance(target, (ast.Tuple, ast.List)):
                for element in target.elts:
                    self._bind(element, None)
            return
        previous = scope.aliases.pop(target.id, None)
        if scope.splats:
            scope.splats.pop(target.id, None)
        scope.types.pop(target.id, None)
        scope.values.pop(target.id, None)
        previous_object = scope.alias_types.pop(target.id, ())
        if value is not None:
            if scope.pending is not None:
                self._parameters(*scope.pending)
            terms = self._terms(value)
            if terms:
                scope.types[target.id] = terms
            scope.values[target.id] = stored_values(value, self.mirrors, scope.values, self._terms)
        scope.stale.discard(target.id)
        for alias, (key, _) in scope.aliases.items():
            if key_root(key) == target.id:
                scope.stale.add(alias)  # the object the alias came from is another one now
        scope.device_names.discard(target.id)
        if value is None:
            return
        if nonnull is None:
            nonnull = set()
        if isinstance(value, (ast.Dict, ast.Call)):
            entries = self._splat_entries(value, nonnull)
            if entries:
                scope.splats[target.id] = entries
        mirror = self._mirror_of(value)
        if mirror is None and previous is not None and receiver_root(value) == target.id:
            # `lens = lens[idx]`: still the mirror's data (or None, where a guard skipped
            # the statement), so reads after it are reads of the mirror
            scope.aliases[target.id] = previous
            scope.alias_types[target.id] = previous_object
        elif mirror is not None:
            scope.aliases[target.id] = mirror
            scope.alias_types[target.id] = self._object_terms(value)
            if key_root(mirror[0]) == target.id:
                scope.stale.add(target.id)  # `x = x.seq_lens_cpu`: the alias replaced its object
            if mirror[0] in nonnull:
                nonnull.add(target.id)  # bound under a guard: the alias is safe there too
            else:
                nonnull.discard(target.id)  # whatever the name held before, it may be None now
        elif self._mentions_device_lengths(value):
            scope.device_names.add(target.id)

    def _aug_assign(self, stmt: ast.AugAssign, nonnull: set[str]) -> None:
        self._expr(stmt.value, nonnull, [stmt])
        self._declarations.augmented(stmt.target, self._scope)
        target = stmt.target
        mirror = self._mirror_of(target, store_ok=True)
        if mirror is not None:
            self._record(target, mirror, Usage.READ, nonnull)
        elif not isinstance(target, ast.Name):
            self._expr(target, nonnull, [stmt])

    def _object_terms(self, node: ast.AST) -> Terms:
        """Terms of the object a mirror expression hangs on (`b` of `b.seq_lens_cpu`)."""
        if isinstance(node, ast.Attribute):
            return self._terms(node.value)
        target = getattr_target(node)
        if target is not None:
            return self._terms(target[0])
        if isinstance(node, ast.Name):
            return self._scope.alias_types.get(node.id, ())
        if isinstance(node, ast.NamedExpr):
            return self._object_terms(node.value)
        return ()

    # ---- expressions -------------------------------------------------------------
    def _mirror_of(self, node: ast.AST, store_ok: bool = False) -> Optional[tuple[str, str]]:
        """(key, attr) when `node` evaluates to a mirror: `x.seq_lens_cpu`,
        `getattr(x, "seq_lens_cpu"[, None])` or an alias."""
        if isinstance(node, ast.Attribute) and node.attr in self.mirrors \
                and (store_ok or isinstance(node.ctx, ast.Load)):
            key = expression_key(node)
            return (key, node.attr) if key is not None else None
        if isinstance(node, ast.Call) and self.mirrors:
            target = getattr_target(node)
            if target is not None and target[1] in self.mirrors:
                key = expression_key(node)
                return (key, target[1]) if key is not None else None
        if isinstance(node, ast.Name) and (store_ok or isinstance(node.ctx, ast.Load)):
            return self._scope.aliases.get(node.id)
        return None

    def _expr(self, node: ast.AST, nonnull: set[str], chain: list[ast.AST]) -> None:
        kind = type(node)
        if kind is ast.Constant:
            return  # half of all expressions are a name or a constant: the fast way out
        if kind is ast.Name:  # only an alias can be a mirror here
            mirror = self._scope.aliases.get(node.id) if type(node.ctx) is ast.Load else None
        else:
            mirror = self._mirror_of(node)
        if mirror is not None:
            usage = usage_of(node, chain)
            if usage is not None:
                passed = passed_to(node, chain, self._scope.self_name) if usage == Usage.PASS else None
                self._record(node, mirror, usage, nonnull, passed, _storage_role(node, chain))
        if self._watch:
            self._watch_reference(node, nonnull, chain)
        if kind is ast.Name:
            return
        if self._scope.splats and kind in (ast.Subscript, ast.Attribute) and type(node.value) is ast.Name \
                and not (kind is ast.Subscript and type(node.ctx) is ast.Load):
            # `d["total"] = 0`, `d.update(extra)`: the mapping may hold something else now
            self._scope.splats.pop(node.value.id, None)
        if isinstance(node, ast.Call):
            self._host_pull(node, nonnull)
            self._declarations.setattr_call(node, self._scope, self._conditional_depth > 0)
            self._call_stores(node)
            if self._scope.splats:
                self._splat_passes(node)
        if isinstance(node, ast.BoolOp):
            chain.append(node)
            narrowed = nonnull.copy()
            for value in node.values:
                self._expr(value, narrowed, chain)
                narrowed |= (self._true(value) if isinstance(node.op, ast.And)
                             else self._false(value))
            chain.pop()
            return
        if isinstance(node, ast.Compare) and len(node.ops) > 1:
            # `None is not x > 0` is `None is not x and x > 0`: a link runs only where
            # those before it held, so the link `x > 0` reads `x` already tested
            chain.append(node)
            operands = (node.left, *node.comparators)
            narrowed = nonnull
            self._expr(node.left, nonnull, chain)
            for i, op in enumerate(node.ops):
                held = compared_link(operands[i], op, operands[i + 1], (ast.IsNot, ast.NotEq))
                if held:
                    narrowed = narrowed.copy() if narrowed is nonnull else narrowed
                    narrowed |= self._after_walrus(node, held)
                self._expr(operands[i + 1], narrowed, chain)
            chain.pop()
            return
        if isinstance(node, ast.IfExp):
            chain.append(node)
            self._expr(node.test, nonnull, chain)
            self._expr(node.body, nonnull | self._true(node.test), chain)
            self._expr(node.orelse, nonnull | self._false(node.test), chain)
            chain.pop()
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            chain.append(node)
            narrowed = nonnull.copy()
            for generator in node.generators:
                chain.append(generator)
                self._expr(generator.iter, narrowed, chain)
                chain.pop()
                for condition in generator.ifs:
                    self._expr(condition, narrowed, chain)
                    narrowed |= self._true(condition)
            for element in ((node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,)):
                self._expr(element, narrowed, chain)
            chain.pop()
            return
        if isinstance(node, ast.Lambda):
            # runs later; like a closure it keeps the guards around its definition
            for default in (*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)):
                self._expr(default, nonnull, [node.args])
            # `lambda n=b.seq_lens_sum: n * 2`: the parameter is the mirror in the body
            bound = {name: mirror for name, default in _defaults(node.args)
                     for mirror in [self._mirror_of(default)] if mirror is not None}
            saved = {name: self._scope.aliases.get(name) for name in bound}
            self._scope.aliases.update(bound)
            chain.append(node)
            self._expr(node.body, nonnull - set(bound) - self._entered, chain)
            chain.pop()
            for name, previous in saved.items():
                if previous is None:
                    self._scope.aliases.pop(name, None)
                else:
                    self._scope.aliases[name] = previous
            return
        if isinstance(node, ast.NamedExpr):
            # `(lens := b.seq_lens_cpu).max()`: the value is used as the walrus is, and bound
            mirror = self._mirror_of(node.value)
            drop_keys_under(nonnull, {node.target.id})  # `(i := i + 1)`: what held of `bs[i]` is gone
            if mirror is not None:
                usage = usage_of(node, chain)
                if usage is not None:
                    self._record(node.value, mirror, usage, nonnull)
                self._bind(node.target, node.value, nonnull)
                return
            self._bind(node.target, node.value, nonnull)
        chain.append(node)
        for field in node._fields:  # ast.iter_child_nodes, without its generators
            child = getattr(node, field)
            if type(child) is list:
                for item in child:
                    if isinstance(item, _SUBEXPRESSIONS):
                        self._expr(item, nonnull, chain)
            elif isinstance(child, _SUBEXPRESSIONS):
                self._expr(child, nonnull, chain)
        chain.pop()

    def _splat_entries(self, value: ast.expr, nonnull: set) -> list[tuple[str, ast.expr, tuple[str, str], set]]:
        """The mirrors a mapping display (`{"total": b.seq_lens_sum}`, `dict(total=...)`)
        holds under a key no later entry may replace, with the facts where it is built."""
        if isinstance(value, ast.Dict):
            pairs = list(zip(value.keys, value.values))
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict" \
                and not value.args:
            pairs = [(ast.Constant(k.arg) if k.arg else None, k.value) for k in value.keywords]
        else:
            return []
        entries = []
        for at, (key, item) in enumerate(pairs):
            mirror = self._mirror_of(item) if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
            if mirror is not None and not any(may_replace(k, v, key.value) for k, v in pairs[at + 1:]):
                entries.append((key.value, item, mirror, nonnull.copy()))
        return entries

    def _splat_passes(self, call: ast.Call) -> None:
        """`f(**d)` for a local mapping holding mirrors: each is handed to its keyword of
        `f`, guarded as it was where the mapping was built."""
        for keyword in call.keywords:
            if keyword.arg is None and isinstance(keyword.value, ast.Name):
                for key, item, mirror, facts in self._scope.splats.get(keyword.value.id, ()):
                    # the value was recorded as stored in a mapping, handed nowhere: it is
                    # handed to `f` now (explain shows one answer for it)
                    self.accesses[:] = [a for a in self.accesses if not (
                        a.line == item.lineno and a.col == item.col_offset and a.usage is Usage.PASS
                        and a.passed_to is None)]
                    slot = ast.keyword(arg=key, value=item)
                    self._record(item, mirror, Usage.PASS, facts, passed_to(item, [call, slot], self._scope.self_name))

    def _watch_reference(self, node: ast.AST, nonnull: set, chain: list[ast.AST]) -> None:
        """A watched name: called (`f(x)`, `obj.f(x)`, `TABLE[k](x)` for a table that
        holds it), or used otherwise (passed as a value: its calls cannot be seen).
        `getattr(obj, "f")` names it as `obj.f` does."""
        if isinstance(node, ast.Call):
            self._watch_getattr(node, nonnull, chain)
            return
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name is None or name not in self._watch or not isinstance(getattr(node, "ctx", None), ast.Load):
            return
        parent = chain[-1] if chain else None
        if isinstance(parent, ast.Call) and parent.func is node:
            self._call_record(parent, name, None, nonnull)
        elif (isinstance(parent, ast.Subscript) and parent.value is node and len(chain) >= 2
              and isinstance(chain[-2], ast.Call) and chain[-2].func is parent):
            self._call_record(chain[-2], name, name, nonnull)
        elif (isinstance(parent, ast.Call) and parent.args and parent.args[0] is node
              and dotted(parent.func) in _PARTIAL):
            # `functools.partial(f, a, k=v)` binds what a call `f(a, k=v)` binds; what the
            # partial object is later called with fills the other parameters (a keyword
            # passed again there would override: rare, and not followed)
            bound = ast.Call(func=node, args=parent.args[1:], keywords=parent.keywords)
            ast.copy_location(bound, parent)
            self._call_record(bound, name, None, nonnull, deferred=dotted(parent.func))
        elif isinstance(parent, ast.Attribute) and parent.value is node and parent.attr in _HARMLESS_ATTRIBUTES:
            return  # `f.__name__`, `f.cache_clear()`: no call of f, nothing handed out
        elif not (isinstance(parent, ast.Call) and dotted(parent.func) in ("isinstance", "issubclass")):
            self.references.append(self._reference(node, name, nonnull))

    def _watch_getattr(self, call: ast.Call, nonnull: set, chain: list[ast.AST]) -> None:
        """`getattr(obj, "f")(x)` is a call of `obj.f`; `getattr(obj, "f", default)` not
        called there hands it out. (A name built at run time, `"forward_" + mode`, is not
        seen: see docs/guides/engine-model.md.)"""
        if not (isinstance(call.func, ast.Name) and call.func.id == "getattr" and len(call.args) >= 2
                and isinstance(call.args[1], ast.Constant) and call.args[1].value in self._watch):
            return
        name = call.args[1].value
        attribute = ast.Attribute(value=call.args[0], attr=name, ctx=ast.Load())
        ast.copy_location(attribute, call)
        parent = chain[-1] if chain else None
        if isinstance(parent, ast.Call) and parent.func is call:
            as_written = ast.copy_location(ast.Call(func=attribute, args=parent.args, keywords=parent.keywords), parent)
            self._call_record(as_written, name, None, nonnull)
        else:
            self.references.append(self._reference(attribute, name, nonnull))

    def _reference(self, node: ast.AST, name: str, nonnull: set) -> "CallRecord":
        """A watched name used as a value, with its object (`obj` of `obj.m`; None for
        a bare name, which is a method only in its own class's body)."""
        scope = self._scope
        receiver = node.value if isinstance(node, ast.Attribute) else None
        return CallRecord(line=node.lineno, col=node.col_offset, name=name, callee=Callee(CalleeHead.VALUE), table=None,
                          receiver=expression_key(receiver) if receiver is not None else None, receiver_types=(),
                          args=(), arg_types=(), keywords=(), keyword_types=(),
                          path=self._path(nonnull), known=(), scope=scope.name, class_qualname=scope.class_qualname)

    def _call_record(self, call: ast.Call, name: str, table: Optional[str], nonnull: set,
                     deferred: Optional[str] = None) -> None:
        func = call.func
        receiver = func.value if isinstance(func, ast.Attribute) else None
        callee = Callee(CalleeHead.NAME, dotted(func) if table is None else table)
        if receiver is not None and isinstance(receiver, ast.Name) and receiver.id == self._scope.self_name:
            callee = Callee(CalleeHead.SELF, func.attr, receiver.id)
        elif (receiver is not None and isinstance(receiver, ast.Call) and not receiver.args
              and dotted(receiver.func) == "super"):
            callee = Callee(CalleeHead.SUPER, func.attr)
        scope = self._scope
        self.calls.append(CallRecord(
            line=call.lineno, col=call.col_offset, name=name, callee=callee, table=table,
            receiver=expression_key(receiver) if receiver is not None else None,
            receiver_types=self._terms(receiver) if receiver is not None else (),
            # after a `*args` the positions are not known: the arguments end there
            args=tuple(expression_key(a) for a in _before_starred(call.args)),
            arg_types=tuple(self._terms(a) for a in _before_starred(call.args)),
            keywords=tuple((k.arg, expression_key(k.value)) for k in call.keywords if k.arg is not None),
            keyword_types=tuple((k.arg, self._terms(k.value)) for k in call.keywords if k.arg is not None),
            path=self._path(nonnull), known=tuple(sorted(guard_keys(nonnull))),
            scope=scope.name, class_qualname=scope.class_qualname, deferred=deferred,
            splat=any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)))

    def _call_stores(self, call: ast.Call) -> None:
        """`Cls(seq_lens_cpu=v)` and `SimpleNamespace(seq_lens_cpu=v)` store on the object
        built; `setattr(obj, "seq_lens_cpu", v)` on `obj`."""
        for keyword in call.keywords:
            if keyword.arg in self.mirrors:
                self._store(keyword.value, keyword.arg, StoreKind.KEYWORD, dotted(call.func),
                            keyword.value, self._terms(call))
        if (isinstance(call.func, ast.Name) and call.func.id == "setattr" and len(call.args) == 3
                and not call.keywords):
            name = call.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                if name.value in self.mirrors:
                    self._store(call, name.value, StoreKind.SETATTR, expression_key(call.args[0]) or "",
                                call.args[2], self._terms(call.args[0]))
            elif not is_never_none(call.args[2]):
                # `setattr(batch, field, value)`: any attribute, a mirror among them
                self._store(call, "*", StoreKind.SETATTR, expression_key(call.args[0]) or "",
                            call.args[2], self._terms(call.args[0]))

    def _path(self, facts: Iterable) -> tuple[PathFact, ...]:
        """The path facts among `facts`: each test as source text, and whether it held."""
        out = []
        for fact in (facts.atoms() if type(facts) is Facts else facts):
            if type(fact) is tuple:
                node = fact[0]
                text = self._rendered.get(id(node))
                if text is None:
                    try:
                        text = ast.unparse(node)
                    except Exception:  # pragma: no cover - unparse handles every parsed node
                        text = ""
                    self._rendered[id(node)] = text
                if text:
                    out.append(PathFact(text, fact[1] == HELD))
        return tuple(sorted(out))

    def _record(self, node: ast.AST, mirror: tuple[str, str], usage: Usage, nonnull: set[str],
                passed_to: Optional[tuple[str, object]] = None,
                role: tuple[bool, Optional[str]] = (False, None)) -> None:
        key, attr = mirror
        subject = node.id if isinstance(node, ast.Name) else key
        guarded = subject in nonnull or key in nonnull or self._tolerant > 0
        if usage == Usage.GUARD and (key in self._asserted or subject in self._asserted):
            usage = Usage.ASSERT
        scope = self._scope
        unguarded = not guarded and usage in (Usage.READ, Usage.PASS, Usage.ASSERT)
        self.accesses.append(MirrorAccess(
            line=node.lineno, col=node.col_offset, end_line=node.end_lineno, end_col=node.end_col_offset,
            attr=attr, usage=usage, guarded=guarded, subject=subject,
            alias_of=key if isinstance(node, ast.Name) else None,
            scope=scope.name, class_qualname=scope.class_qualname, passed_to=passed_to,
            object_rebound=isinstance(node, ast.Name) and node.id in scope.stale,
            # only an unguarded use is ever judged by the engine model
            path=self._path(nonnull) if unguarded else (),
            known=tuple(sorted(k for k in (nonnull.watched_keys() if type(nonnull) is Facts and
                                           nonnull.watched is self.mirrors else guard_keys(nonnull))
                               if k != key and k.rsplit(".", 1)[-1] in self.mirrors)) if unguarded else (),
            receiver_types=(scope.alias_types.get(node.id, ()) if isinstance(node, ast.Name)
                            else self._object_terms(node)) if unguarded or role != (False, None) else (),
            written=role[0], fills=role[1],
        ))
        owner = self._declarations.current(scope.class_qualname)
        if owner is not None:
            owner.reads_mirror = True

    # ---- device lengths pulled to the host ----------------------------------------
    def _mentions_device_lengths(self, node: ast.AST) -> bool:
        """Whether the tensor `node` evaluates to comes from device sequence lengths."""
        return any(self._is_device_name(name) for name in data_roots(node, self.length_parts))

    def _is_device_name(self, name: str) -> bool:
        if name in self.mirrors or names_host_copy(name, self.host_words):
            return False  # `seq_lens_cpu_int`, `host_seq_lens`: host copies already
        return any(d in name for d in self.device_lengths) or name in self._scope.device_names

    def _host_pull(self, call: ast.Call, nonnull: set) -> None:
        found = host_pull(call)
        if found is None:
            return
        pulled, how = found
        if _on_host_already(pulled):
            # `t.cpu().tolist()`, `int(t.max().item())`: one sync, reported at the first pull
            return
        owner = self._declarations.current(self._scope.class_qualname)
        if owner is not None and self._mentions_device_lengths(pulled):
            receiver = ast.unparse(pulled)
            if len(receiver) > 60:
                receiver = receiver[:57] + "..."
            owner.host_pulls.append(HostPull(call.lineno, call.col_offset, how, receiver, self._scope.name,
                                             self._path(nonnull),
                                             _device_roots(pulled, self._is_device_name, self.length_parts)))


def _before_starred(args: list[ast.expr]) -> list[ast.expr]:
    """The positional arguments whose position is known: those before any `*x`."""
    for i, arg in enumerate(args):
        if isinstance(arg, ast.Starred):
            return args[:i]
    return args


def _device_roots(pulled: ast.AST, is_device_name, length_parts: tuple[str, ...]) -> tuple[str, ...]:
    """The device-length names `pulled` is computed from: `.name` where only an
    attribute spells it (`meta.total_seq_lens`), `name` where a local or a parameter
    does (its declared type, if any, is not a field's)."""
    names = {n.id for n in ast.walk(pulled) if isinstance(n, ast.Name)}
    roots = dict.fromkeys(r for r in data_roots(pulled, length_parts) if is_device_name(r))
    return tuple(r if r in names else f".{r}" for r in roots)


_IN_PLACE_EXCLUDED = frozenset({"__setitem__"})


def _in_place(name: str) -> bool:
    """`copy_`, `fill_`, `add_`: a tensor method that writes into its receiver."""
    return name.endswith("_") and not name.startswith("_") and name not in _IN_PLACE_EXCLUDED


def _storage_role(node: ast.AST, chain: list[ast.AST]) -> tuple[bool, Optional[str]]:
    """(whether the mirror expression `node` is written into: `buf.seq_lens_cpu[:n].copy_(x)`,
    `b.seq_lens_cpu[i] = x`; the storage it fills when it is the source of such a write:
    `buf[:n].copy_(fb.seq_lens_cpu[:n])` -> `buf`)."""
    # through slices up to what uses the value
    index = len(chain) - 1
    current = node
    while index >= 0 and isinstance(chain[index], ast.Subscript) and chain[index].value is current:
        current = chain[index]
        index -= 1
    parent = chain[index] if index >= 0 else None
    if isinstance(parent, ast.Attribute) and parent.value is current and _in_place(parent.attr) \
            and index >= 1 and isinstance(chain[index - 1], ast.Call) and chain[index - 1].func is parent:
        return True, None
    if isinstance(current, ast.Subscript) and isinstance(current.ctx, ast.Store):
        return True, None
    for position in range(len(chain) - 1, -1, -1):
        ancestor = chain[position]
        if (
            isinstance(ancestor, ast.Call)
            and isinstance(ancestor.func, ast.Attribute)
            and _in_place(ancestor.func.attr)
            and ancestor.func is not (chain[position + 1] if position + 1 < len(chain) else None)
        ):
            storage = ancestor.func.value
            while isinstance(storage, ast.Subscript):
                storage = storage.value
            return False, expression_key(storage)
        if isinstance(ancestor, ast.Assign) and any(isinstance(t, ast.Subscript) for t in ancestor.targets):
            storage = next(t for t in ancestor.targets if isinstance(t, ast.Subscript)).value
            while isinstance(storage, ast.Subscript):
                storage = storage.value
            return False, expression_key(storage)
        if isinstance(ancestor, (ast.stmt, ast.Lambda, ast.comprehension)):
            break
    return False, None


def _is_early_exit(stmt: ast.stmt) -> bool:
    """`if not args.enable_two_batch_overlap: return`: what follows runs only where the
    test failed, whatever it tests (a feature the aggregator forces the mirror for is
    known only to the project, so every such test is kept as a path fact)."""
    return (isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1
            and isinstance(stmt.body[0], EXIT_STATEMENTS))


def _defaults(args: ast.arguments) -> list[tuple[str, ast.expr]]:
    """(parameter, default) pairs of a signature."""
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip([a.arg for a in positional][len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return pairs


def _pattern_captures(pattern: ast.pattern, subject: Optional[ast.expr]
                      ) -> Iterable[tuple[str, Optional[ast.expr], bool, Terms]]:
    """(name, what it captures: None when that is not told, whether it can be None, the
    terms of the object it was read from when a class pattern names its class) for each
    capture of `pattern` matched against `subject`."""
    if isinstance(pattern, ast.MatchAs):
        if pattern.pattern is not None:
            yield from _pattern_captures(pattern.pattern, subject)
        if pattern.name:
            yield pattern.name, subject, pattern.pattern is None or _may_match_none(pattern.pattern), ()
    elif isinstance(pattern, ast.MatchOr):
        for alternative in pattern.patterns:
            yield from _pattern_captures(alternative, subject)
    elif isinstance(pattern, ast.MatchStar):
        if pattern.name:
            yield pattern.name, None, False, ()  # a list of the rest
    elif isinstance(pattern, ast.MatchSequence):
        elements = subject.elts if isinstance(subject, (ast.Tuple, ast.List)) and not any(
            isinstance(e, ast.Starred) for e in subject.elts) else None
        star = next((i for i, p in enumerate(pattern.patterns) if isinstance(p, ast.MatchStar)), None)
        for i, inner in enumerate(pattern.patterns):
            value = None
            if elements is not None and i != star:
                at = i if star is None or i < star else len(elements) - (len(pattern.patterns) - i)
                value = elements[at] if 0 <= at < len(elements) else None
            yield from _pattern_captures(inner, value)
    elif isinstance(pattern, ast.MatchMapping):
        values = {}
        if isinstance(subject, ast.Dict):
            values = {k.value: v for k, v in zip(subject.keys, subject.values) if isinstance(k, ast.Constant)}
        for key, inner in zip(pattern.keys, pattern.patterns):
            found = values.get(key.value) if isinstance(key, ast.Constant) else None
            yield from _pattern_captures(inner, found)
        if pattern.rest:
            yield pattern.rest, None, False, ()
    elif isinstance(pattern, ast.MatchClass):
        for inner in pattern.patterns:
            yield from _pattern_captures(inner, None)  # by `__match_args__`: not told
        cls = dotted(pattern.cls)
        for attr, inner in zip(pattern.kwd_attrs, pattern.kwd_patterns):
            value = None if subject is None else ast.copy_location(
                ast.Attribute(value=subject, attr=attr, ctx=ast.Load()), subject)
            for name, captured, may_be_none, terms in _pattern_captures(inner, value):
                yield name, captured, may_be_none, terms or ((f"A:{cls}",) if cls and captured is value else ())


def _pattern_class(pattern: ast.pattern) -> Optional[str]:
    """The class a pattern matches only instances of (`Batch(...)`, `Batch() as b`)."""
    while isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
        pattern = pattern.pattern
    return dotted(pattern.cls) or None if isinstance(pattern, ast.MatchClass) else None


def _none_patterns(pattern: ast.pattern, subject: ast.expr) -> list[tuple[Optional[str], str]]:
    """(class or None for any, key) for each value `pattern` matches wherever it is None
    (`case None:`, `case Batch(seq_lens_cpu=None):` with nothing else to fail): where the
    pattern did not match, that key of an instance of that class is not None."""
    while isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
        pattern = pattern.pattern
    if isinstance(pattern, ast.MatchOr):  # none of the alternatives matched
        return [told for p in pattern.patterns for told in _none_patterns(p, subject)]
    if isinstance(pattern, ast.MatchSingleton) and pattern.value is None:
        key = expression_key(subject)
        return [(None, key)] if key is not None else []
    cls = _pattern_class(pattern)
    if cls is None or pattern.patterns:
        return []
    nones = [attr for attr, p in zip(pattern.kwd_attrs, pattern.kwd_patterns)
             if isinstance(p, ast.MatchSingleton) and p.value is None]
    if len(nones) != 1 or not all(isinstance(p, ast.MatchAs) and p.pattern is None and p.name is None
                                  for attr, p in zip(pattern.kwd_attrs, pattern.kwd_patterns) if attr != nones[0]):
        # `Batch(seq_lens_cpu=None, seq_lens_sum=0)` may have failed on the other one, and
        # a capture may be bound by a match that then failed
        return []
    key = expression_key(ast.Attribute(value=subject, attr=nones[0], ctx=ast.Load()))
    return [(cls, key)] if key is not None else []


def _may_match_none(pattern: ast.pattern) -> bool:
    """Whether None can match `pattern` (a capture, `None`, `object()`)."""
    if isinstance(pattern, ast.MatchAs):
        return pattern.pattern is None or _may_match_none(pattern.pattern)
    if isinstance(pattern, ast.MatchOr):
        return any(_may_match_none(p) for p in pattern.patterns)
    if isinstance(pattern, ast.MatchSingleton):
        return pattern.value is None
    if isinstance(pattern, ast.MatchClass):
        return dotted(pattern.cls) in ("object", "builtins.object", "NoneType", "types.NoneType")
    return False


# Exceptions a load of a name or attribute, or any step, may raise: a handler catching
# one can be entered from anywhere in its `try`. Each other builtin exception comes from
# a call, an operator, a subscript or a `raise`.
_RAISED_ANYWHERE = frozenset({"BaseException", "Exception", "AttributeError", "NameError", "UnboundLocalError",
                              "KeyboardInterrupt", "MemoryError", "SystemError", "RecursionError"})
_RAISED_BY_STEPS = frozenset(name for name, value in vars(builtins).items()
                             if isinstance(value, type) and issubclass(value, BaseException)) - _RAISED_ANYWHERE


def catches_only_what_calls_raise(handlers: list[ast.ExceptHandler]) -> bool:
    """Whether every handler names builtin exceptions that neither a load nor an `is`
    test raises (`except (ValueError, KeyError):`); a bare `except:`, `Exception`, or a
    class of the project's own (it may alias anything) do not."""
    for handler in handlers:
        caught = handler.type
        if caught is None:
            return False
        for name in (caught.elts if isinstance(caught, ast.Tuple) else [caught]):
            if not (isinstance(name, ast.Name) and name.id in _RAISED_BY_STEPS):
                return False
    return True


def _cannot_raise(stmt: ast.stmt, booleans) -> bool:
    """Whether `stmt` only tests for None, stores a load, passes or leaves (a statement
    no `except ValueError:` can be entered from). `booleans`: local names holding a test."""
    if isinstance(stmt, (ast.Pass, ast.Break, ast.Continue)):
        return True
    if isinstance(stmt, ast.Expr):
        return isinstance(stmt.value, ast.Constant)
    if isinstance(stmt, ast.Return):
        return stmt.value is None or _loads_only(stmt.value, booleans)
    if isinstance(stmt, ast.Assign):
        return all(isinstance(t, ast.Name) for t in stmt.targets) and _loads_only(stmt.value, booleans)
    if isinstance(stmt, ast.If):
        return _tests_only(stmt.test, booleans) and all(_cannot_raise(s, booleans) for s in (*stmt.body, *stmt.orelse))
    return False


def _loads_only(node: ast.AST, booleans) -> bool:
    """A constant, a name, an attribute chain, `getattr(x, "a", None)`, or a test of them."""
    if isinstance(node, (ast.Constant, ast.Name)):
        return True
    if isinstance(node, ast.Attribute):
        return _loads_only(node.value, booleans)
    target = getattr_target(node)
    if target is not None:
        return _loads_only(target[0], booleans)
    return _tests_only(node, booleans)


def _tests_only(test: ast.AST, booleans) -> bool:
    """A test whose evaluation raises nothing a call could: `x is None` of loads, and
    `not`/`and`/`or` of such tests, constants and local booleans (truthiness of anything
    else calls `__bool__`: a tensor of many elements raises there)."""
    if isinstance(test, ast.Compare):
        return all(isinstance(op, (ast.Is, ast.IsNot)) for op in test.ops) and all(
            _loads_only(o, booleans) for o in (test.left, *test.comparators))
    if isinstance(test, ast.BoolOp):
        return all(_tests_only(v, booleans) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _tests_only(test.operand, booleans)
    return isinstance(test, ast.Constant) or (isinstance(test, ast.Name) and test.id in booleans)


def _falsy(value: Optional[ast.AST]) -> bool:
    """`return`, `return None`, `return False`, `return 0`: a predicate saying no."""
    return value is None or (isinstance(value, ast.Constant) and not value.value)


def self_attribute_writers(cls: ast.ClassDef, lines: Optional[list[str]] = None) -> dict[str, frozenset[str]]:
    """method -> the attributes of its first parameter it assigns (`self.idx += 1`),
    itself or through the methods of the class it calls on that parameter. A body the
    skeleton took out (one `pass` now) is read from `lines`, the module's text."""
    methods = {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and (n.args.posonlyargs or n.args.args)}
    writes: dict[str, set[str]] = {}
    calls: dict[str, set[str]] = {}
    for name, method in methods.items():
        first = (method.args.posonlyargs or method.args.args)[0].arg
        if lines is not None and len(method.body) == 1 and isinstance(method.body[0], ast.Pass) \
                and (method.end_lineno or method.lineno) <= len(lines):
            text = "\n".join(lines[method.lineno - 1:method.end_lineno or method.lineno])
            prefix = rf"(?<![\w.]){re.escape(first)}\.(\w+)\s*"
            writes[name] = set(re.findall(prefix + _ASSIGNED, text))
            calls[name] = {m for m in re.findall(prefix + r"\(", text) if m in methods}
            continue
        writes[name] = {k[len(first) + 1:] for k in bound_keys(method.body)
                        if k.startswith(first + ".") and k[len(first) + 1:].isidentifier()}
        calls[name] = {n.func.attr for n in own_nodes(method.body)
                       if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                       and isinstance(n.func.value, ast.Name) and n.func.value.id == first
                       and n.func.attr in methods}
    _through_calls(writes, calls)  # `self.skip()` calling `self.advance()` writes what it writes
    return {name: frozenset(attrs) for name, attrs in writes.items() if attrs}


def _through_calls(sets: dict[str, set[str]], calls: dict[str, set[str]]) -> None:
    """Grow each function's set by the sets of the functions it calls, transitively (in place)."""
    changed = True
    while changed:
        changed = False
        for name, called in calls.items():
            for other in called:
                if not sets[other] <= sets[name]:
                    sets[name] |= sets[other]
                    changed = True


# After `self.x`: an assignment to it, annotated or augmented (`= `, `: int = `, `+= `),
# not a comparison (`==`, `<=`, `!=`)
_ASSIGNED = r"(?::[^=\n]*)?(?:\*\*|//|>>|<<|[-+*/%&|^@])?=(?!=)"


def closure_rebinds(body: list[ast.stmt]) -> tuple[dict[str, frozenset[str]], frozenset[str]]:
    """(closure -> the names of the function holding `body` that calling it may rebind,
    the names rebound by closures used other than by a call). A closure rebinds what it
    declares `nonlocal` (`def advance(): nonlocal b; b = other`), and what the closures it
    calls rebind; one handed out (`hook = advance`, `run(advance)`) may run in any call."""
    closures = {n.name: n for n in own_nodes(body) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    declared = {name: {v for n in ast.walk(f) if isinstance(n, ast.Nonlocal) for v in n.names}
                for name, f in closures.items()}
    if not any(declared.values()):
        return {}, frozenset()
    calls = {name: {n.id for n in ast.walk(f) if isinstance(n, ast.Name) and n.id in closures and n.id != name}
             for name, f in closures.items()}
    _through_calls(declared, calls)  # a closure calling one that rebinds rebinds as well
    rebinders = {name: frozenset(names) for name, names in declared.items() if names}
    called_directly = {id(n.func) for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Call)}
    escaped = frozenset(v for stmt in body for n in ast.walk(stmt)
                        if isinstance(n, ast.Name) and n.id in rebinders and isinstance(n.ctx, ast.Load)
                        and id(n) not in called_directly for v in rebinders[n.id])
    return rebinders, escaped


def true_summary(function: ast.FunctionDef | ast.AsyncFunctionDef, class_qualname: Optional[str],
                 mirrors: Iterable[str], device_attribute: str, words: Iterable[str] = ()
                 ) -> tuple[frozenset[str], frozenset[str]]:
    """What holds wherever `function` returns something truthy: (expression keys known
    not to be None, path facts), written in its own parameters' names. A predicate
    `if x.seq_lens_cpu is None: return False ... return True` tells its callers that
    `x.seq_lens_cpu` is not None where it returned True, as a TypeGuard would."""
    analysis = ModuleAnalysis(mirrors, device_attribute, None, words)
    is_method = class_qualname is not None
    args = [*function.args.posonlyargs, *function.args.args]
    analysis._scope = _Scope(function.name if not is_method else f"{class_qualname}.{function.name}",
                             class_qualname, args[0].arg if is_method and args else None,
                             function.name if is_method else None)
    analysis._returns = []
    analysis._watch_closures(function)
    analysis._block(function.body, set())
    if not analysis._returns:
        return frozenset(), frozenset()
    common = analysis._returns[0].intersection(*analysis._returns[1:])
    return frozenset(guard_keys(common)), frozenset(analysis._path(common))


def _field_default(value: ast.AST) -> Optional[ast.AST]:
    """The default a class-level `x = field(default=...)` gives instances; a
    `default_factory` builds a value (never None); other values are the default."""
    if isinstance(value, ast.Call) and dotted(value.func) in ("field", "dataclasses.field"):
        for keyword in value.keywords:
            if keyword.arg == "default":
                return keyword.value
            if keyword.arg == "default_factory":
                return ast.Constant(0)
        return ast.Constant(0)  # no default: a required field, given by each constructor call
    return value


def _on_host_already(node: ast.AST) -> bool:
    """Whether a value is read from a host copy made on the way: `t.max().item()`,
    `b.seq_lens.cpu()[0]` (the sync is reported at that pull, not again at `int()`)."""
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if host_pull(node) is not None:
                return True
            node = node.func.value
        elif isinstance(node, (ast.Subscript, ast.Attribute)):
            node = node.value
        else:
            return False


@dataclasses.dataclass(frozen=True)
class CallRecord:
    """A call of a watched function, with what holds where it is made."""
    line: int
    col: int
    name: str                        # the watched name
    callee: Callee                   # what the call names (`self.m`, `super().m`, `mod.f`, `f`)
    table: Optional[str]             # `TABLE[key](...)`: the table's name
    receiver: Optional[str]          # key of the object of an attribute call (`batch` of `batch.m()`)
    receiver_types: Terms
    args: tuple[Optional[str], ...]  # keys of the positional arguments (None: not a plain expression)
    arg_types: tuple[Terms, ...]
    keywords: tuple[tuple[str, Optional[str]], ...]
    keyword_types: tuple[tuple[str, Terms], ...]
    path: tuple[PathFact, ...]       # path facts at the call
    known: tuple[str, ...]           # expression keys known not to be None there
    scope: str
    class_qualname: Optional[str]
    # `functools.partial(f, ...)` as spelled: the call of f happens later, elsewhere,
    # so what holds here (path, modes, guards) says nothing of it; only what it binds
    deferred: Optional[str] = None
    # a `*args` or `**kwargs` in the call: how many arguments it passes is not known
    splat: bool = False


def call_sites(function: ast.FunctionDef | ast.AsyncFunctionDef, class_qualname: Optional[str],
               watch: Iterable[str], mirrors: Iterable[str], device_attribute: str, words: Iterable[str] = (),
               relevant: Optional[tuple[list[int], list[int], list[int]]] = None, stop_line: Optional[int] = None,
               flag: str = FLAG) -> tuple[list[CallRecord], list[CallRecord]]:
    """The calls of `watch`ed names in `function` (a method of `class_qualname`, or a
    module-level function), each with the path facts and non-None keys where it is made;
    and the places a watched name is used other than by a call, with the path facts
    there. With `relevant` (`relevant_lines` of the file), only statements
    that mention a watched name, a mirror or a condition word are walked (the others
    cannot change either)."""
    watch = frozenset(watch)
    analysis = ModuleAnalysis(mirrors, device_attribute, None, words, flag=flag)
    if relevant is not None:
        analysis._relevant_lines, analysis._condition_lines, analysis._walrus_lines = relevant
        if stop_line is not None:
            analysis._stop_line = stop_line
    analysis._watch = watch
    is_method = class_qualname is not None
    args = [*function.args.posonlyargs, *function.args.args]
    analysis._scope = _Scope(function.name if not is_method else f"{class_qualname}.{function.name}",
                             class_qualname, args[0].arg if is_method and args else None,
                             function.name if is_method else None)
    analysis._parameters(function, is_method)
    analysis._watch_closures(function)
    for default in (*function.args.defaults, *(d for d in function.args.kw_defaults if d is not None)):
        analysis._expr(default, set(), [function.args])
    analysis._block(function.body, set())
    return analysis.calls, analysis.references


def relevant_lines(source: str, mirrors: Iterable[str], device_attribute: str,
                   words: Iterable[str], flag: str = FLAG) -> tuple[list[int], list[int], list[int]]:
    """The lines of `source` that `call_sites` walks whatever it watches: those naming a
    mirror, the flag or the device lengths; and those naming a condition word (add the
    lines naming the watched names to the first); and the lines holding a walrus or a
    `nonlocal`."""
    words = tuple(words)
    return (_lines_mentioning(source, (*mirrors, flag, device_attribute)),
            _lines_mentioning(source, words) if words else [], _lines_mentioning(source, _REBINDING_WORDS))


PARAMETER = "<parameter>"  # the `attr` of accesses to a tracked parameter


@dataclasses.dataclass(frozen=True)
class ParameterUse:
    """How a function uses one parameter: unguarded reads, and calls it is handed to."""
    reads: tuple[tuple[int, int], ...]              # (line, col) of unguarded reads
    passed: tuple[tuple[str, object, int], ...]     # (callee, slot, line) where passed on unguarded


def parameter_uses(function: ast.FunctionDef | ast.AsyncFunctionDef, class_qualname: Optional[str],
                   device_attribute: str) -> dict[str, ParameterUse]:
    """For each parameter of `function`: where it is read without a None guard, by the
    same definition of a read as for the mirrors, and where it is passed on."""
    analysis = ModuleAnalysis((), device_attribute)
    args = function.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    scope = _Scope(function.name, class_qualname, names[0] if class_qualname and names else None,
                   function.name if class_qualname else None)
    for name in names:
        scope.aliases[name] = (name, PARAMETER)
    analysis._scope = scope
    analysis._watch_closures(function)
    analysis._block(function.body, set())
    uses: dict[str, tuple[list, list]] = {}
    for access in analysis.accesses:
        if access.attr != PARAMETER or access.guarded or access.alias_of is None:
            continue
        reads, passed = uses.setdefault(access.alias_of, ([], []))
        if access.usage == Usage.READ:
            reads.append((access.line, access.col))
        elif access.usage == Usage.PASS and access.passed_to is not None:
            passed.append((*access.passed_to, access.line))
    return {name: ParameterUse(tuple(r), tuple(p)) for name, (r, p) in uses.items()}
