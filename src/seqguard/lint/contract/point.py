"""The engine model at a point: what holds at a point of the code, from the configuration
and the project index. Conditions (stated present- and sync-allowed conditions, the
features the aggregator forces the mirror for, the device lengths always existing),
forward modes, receiver types, nullability, CUDA-graph capture and sync-allowed regions,
copies that carry a tested mirror, backends' effective flags, and the model's facts
about functions and classes (`models`). No callers, no verdicts: the call sites
(`sites`) and the questions (`lint.questions`) ask it, and it imports neither (issue
38, layer 1). This is the layer a preset parameterises."""

from __future__ import annotations

import ast
import dataclasses
import fnmatch
import functools
import io
import re
import tokenize
from typing import TYPE_CHECKING, Iterable, Optional

from seqguard.config import Cite, Condition, Config, ModelFact
from seqguard.lint.analysis.source import split_lines
from seqguard.lint.analysis.terms import expression_terms
from seqguard.lint.contract.conditions import Pattern, first_implied, forcing_conditions, generalised
from seqguard.lint.contract.modes import ModeDomain
from seqguard.lint.contract.nullability import Nullability
from seqguard.lint.contract.types import UNKNOWN, Types, describe
from seqguard.lint.model import Callee, CalleeHead, MirrorAccess, PathFact, ValueKind

if TYPE_CHECKING:
    from seqguard.lint.index import ProjectIndex, ResolvedClass


class EngineAtPoint:
    """What holds at a point: conditions, modes, types, nullability, capture and
    sync-allowed regions, copies, forced features, backends' effective flags; no
    callers, no verdicts. The engine model (from the configuration) applied to one
    project index, asked about one place of its code at a time."""

    def __init__(self, index: "ProjectIndex", config: Config, whole_project: bool = True) -> None:
        """`whole_project`: the index holds every file of the project. Without it, what
        the files not seen store or call is unknown: a project predicate is not expanded."""
        self.index = index
        self.config = config
        self.whole_project = whole_project
        self.mirrors = tuple(config.mirror_attributes)
        self.device = config.device_attribute
        self.flag = config.flag_attribute
        self.types = Types(index)
        present = _patterns(config.present_when)
        self.present = [p for p in present if not p.condition.outside_modes]
        # those that hold only where some modes are ruled out (`outside-modes`)
        self.present_outside = [p for p in present if p.condition.outside_modes]
        self.sync_allowed = _patterns(config.sync_allowed_when)
        self._summaries: dict[tuple, tuple[frozenset[str], frozenset[str]]] = {}
        self._sync_memo: dict[tuple, Optional[str]] = {}
        # the branch where a batch's device lengths are None never runs: they always exist
        self.dead = [Pattern.of(Condition(f"*.{self.device} is None", "the device lengths always exist"))]

    # ---- the model's inferred parts -------------------------------------------------
    @functools.cached_property
    def nullability(self) -> Nullability:
        return Nullability(self.index, self.types, self.mirrors)

    @functools.cached_property
    def forced(self) -> list[Pattern]:
        """The aggregator's early `return True` tests, as patterns (`*.is_ngram()`)."""
        found = self._function(self.config.aggregator)
        if found is None:
            return []
        relpath, function = found
        patterns = []
        env_values = _local_tests(function)
        for test, line in forcing_conditions(function):
            if isinstance(test, ast.Name) and test.id in env_values:
                test = env_values[test.id]
            pattern = generalised(test)
            if pattern is None:
                continue
            why = f"{self.config.aggregator.rsplit('.', 1)[-1]} returns True under it ({relpath}:{line})"
            patterns.append(
                Pattern(pattern, "+", Condition(ast.unparse(pattern).replace("__seqguard_any__", "*"), why))
            )
        return patterns

    @functools.cached_property
    def modes(self) -> Optional[ModeDomain]:
        """The forward-mode enum when there are skip modes to rule out, else None."""
        return self.enum if self.skip_modes else None

    @functools.cached_property
    def skip_modes(self) -> frozenset[str]:
        """The skip modes the enum has. A name it lacks (a preset's member of a newer
        release) is never possible, so it neither clears nor keeps a read; and with none
        left, no read is cleared by its mode. (A user's name the enum lacks stops the run
        before any judgement: `model_names`.)"""
        listed = frozenset(self.config.skip_modes)
        return listed & frozenset(self.enum.members) if listed and self.enum is not None else listed

    @functools.cached_property
    def facts(self) -> "ModelFacts":
        """The model's facts (`models`), each checked against the code it cites."""
        return ModelFacts.check(self)

    def _facts_at(self, relpath: Optional[str], scope: Optional[str]) -> list["LiveFact"]:
        """The live facts whose function or class holds the code of `scope` in `relpath`."""
        if relpath is None or not scope or not self.facts.live:
            return []
        return [f for f in self.facts.live
                if f.relpath == relpath and (scope == f.qualname or scope.startswith(f.qualname + "."))]

    def fact_at(self, relpath: Optional[str], scope: Optional[str]) -> Optional["ModesAt"]:
        """What the facts about modes say of the code of `scope`: each holds, so the
        modes are those all of them allow (a class's and one of its methods')."""
        facts = [f for f in self._facts_at(relpath, scope) if f.fact.modes]
        if not facts:
            return None
        return ModesAt(frozenset.intersection(*(f.modes for f in facts)), "; ".join(_fact_words(f) for f in facts))

    def present_fact(self, relpath: Optional[str], scope: Optional[str], attr: str) -> Optional["LiveFact"]:
        """A live fact that `attr` is never None in the code of `scope`, if one says so."""
        return next((f for f in self._facts_at(relpath, scope) if attr in f.fact.present), None)

    @functools.cached_property
    def enum(self) -> Optional[ModeDomain]:
        """The forward-mode enum (`mode-enum`) as the project defines it, or None."""
        found = self.located_enum
        return ModeDomain(found[1], self.config.mode_attribute) if found is not None else None

    @functools.cached_property
    def located_enum(self) -> Optional[tuple[str, ast.ClassDef]]:
        """(relpath, class) of `mode-enum`, a class at the top level of a project module."""
        if not self.config.mode_enum:
            return None
        located = self.index.locate_class(self.index.resolve_name("", self.config.mode_enum))
        if located is None:
            return None
        relpath, qualname = located
        source = self.index.source(relpath)
        if source is None:
            return None
        node = _top_level_class(source, qualname)
        return (relpath, node) if node is not None else None

    def _function(self, qualified: Optional[str]) -> Optional[tuple[str, ast.FunctionDef]]:
        relpath, function = self.locate_function(qualified)
        return (relpath, function) if function is not None else None

    def locate_function(self, qualified: Optional[str]) -> tuple[Optional[str], Optional[ast.FunctionDef]]:
        """(the project file of the module `qualified` names, or None; the function or
        method there, or None): `pkg.mod.func` or `pkg.mod.Class.method`."""
        if not qualified:
            return None, None
        module, _, name = qualified.rpartition(".")
        relpath = self.index.relpath_of(module)
        if relpath is None:
            module, _, cls = module.rpartition(".")
            relpath = self.index.relpath_of(module)
            name = f"{cls}.{name}"
        if relpath is None:
            return None, None
        return relpath, self.index.functions_of(relpath).get(name, (None, None))[0]
    # ---- types and copies ------------------------------------------------------------
    def receiver_types(self, relpath: str, access: MirrorAccess) -> frozenset[str]:
        types = self.types.resolve(relpath, access.receiver_types) if access.receiver_types else frozenset({UNKNOWN})
        if UNKNOWN in types and access.receiver:
            # the walk saw only part of the function: type the object from all of it
            lazy = self._typed_in_function(relpath, access)
            if lazy:
                types = (types - {UNKNOWN}) | lazy if UNKNOWN not in lazy else types | lazy
        return types

    def _typed_in_function(self, relpath: str, access: MirrorAccess) -> frozenset[str]:
        return self.expression_types(relpath, access.line, access.class_qualname, access.receiver)

    def expression_types(self, relpath: str, line: int, class_qualname: Optional[str], text: str) -> frozenset[str]:
        """The types of expression `text` written at `line`, from the whole function
        around it (its parameters' annotations, every assignment of its names)."""
        function, owner = self._enclosing(relpath, line, class_qualname)
        if function is None:
            return frozenset()
        try:
            node = ast.parse(text, mode="eval").body
        except SyntaxError:
            return frozenset()
        root = _root(node)
        env, self_name, cls_name = self.types.environment(relpath, function, owner, {root})
        if root in env and root not in (self_name, cls_name):
            # a binding the environment cannot type (`fb = batches[0]`, `for fb in ...`, a
            # `match` capture) may hold anything: the name is typed only if none is
            env = {**env, root: self.types.local_terms(relpath, function, owner, root)}
        terms = expression_terms(node, env, self_name, owner if self_name or cls_name else None, cls_name)
        return self.types.resolve(relpath, terms) if terms else frozenset()

    def _enclosing(self, relpath: str, line: int, class_qualname: Optional[str]
                   ) -> tuple[Optional[ast.FunctionDef], Optional[str]]:
        function = self.index.function_at(relpath, line)
        owner = class_qualname if class_qualname and "<locals>" not in class_qualname else None
        return function, owner

    def type_name(self, type_id: str) -> str:
        return describe(type_id)

    def copy_guard(self, relpath: str, line: int, class_qualname: Optional[str], receiver: str, attr: str,
                   known: Iterable[str]) -> Optional[str]:
        """`forward_batch = ForwardBatch.init_new(batch, ...)` where `init_new` copies
        `batch.seq_lens_cpu` into what it builds, and `batch.seq_lens_cpu` is known not
        to be None at `line`: a guard on the source holds for the copy."""
        known = set(known)
        if not known or not receiver.isidentifier():
            return None
        function = self.index.function_at(relpath, line)
        if function is None:
            return None
        for node in ast.walk(function):
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id == receiver and isinstance(node.value, ast.Call)
                    and node.lineno <= line):
                continue
            call = node.value
            callee = _dotted(call.func)
            if not callee:
                continue
            owner = class_qualname if class_qualname and "<locals>" not in class_qualname else None
            target = self.index.callable_named(relpath, owner, Callee.written(callee))
            if target is None:
                continue
            for parameter in self._copied_parameters(target, attr):
                argument = _argument(call, target[1], target[3], parameter)
                if argument is not None and f"{argument}.{attr}" in known:
                    name = target[1].name
                    return (f"`{receiver}` is built by `{name}` from `{argument}`, which copies its "
                            f"`{attr}`, and `{argument}.{attr}` is known not to be None there")
        return None

    def _copied_parameters(self, target, attr: str) -> set[str]:
        """Parameters of a builder whose `attr` it copies into a store
        (`cls(seq_lens_cpu=batch.seq_lens_cpu)`, `ret.seq_lens_cpu = batch.seq_lens_cpu`)."""
        from seqguard.lint.analysis.names import key_root
        relpath, function, owner, _ = target
        facts = self.index.facts_of(relpath)
        if facts is None:
            return set()
        qualname = f"{owner}.{function.name}" if owner else function.name
        args = function.args
        names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        out = set()
        for store in facts.stores:
            if store.scope != qualname or store.attr != attr:
                continue
            for value in store.values:
                source = value.source   # a parameter itself, not an attribute of one
                if value.kind is ValueKind.COPY and value.attr == attr and source in names \
                        and source == key_root(source):
                    out.add(source)
        return out
    # ---- predicates the code calls in its tests ----------------------------------------
    def expand(self, facts: Iterable[PathFact], relpath: Optional[str], class_qualname: Optional[str]
               ) -> tuple[dict[str, str], tuple[PathFact, ...]]:
        """What the project's own predicates that held on the path guarantee:
        `if self._opus_prefill_applies(q, fb, r):` where that method returns True only
        past `or fb.seq_lens_cpu is None: return False`. (key known not None -> which test
        says so, path facts), in the caller's names."""
        if relpath is None or not self.whole_project:
            return {}, ()
        resolve = self._resolver(relpath, class_qualname, with_target=True)
        known: dict[str, str] = {}
        implied: list[PathFact] = []
        for fact in facts:
            text = fact.test
            if not fact.held or not text.endswith(")"):
                continue
            node = _parsed_call(text)
            if node is None:
                continue
            target = resolve(node)
            if target is None:
                continue
            keys, path = self._summary(target)
            if not keys and not path:
                continue
            names = _bindings(node, target[1], target[3])
            for key in keys:
                mapped = _rename_key(key, names)
                if mapped is not None:
                    known.setdefault(mapped, f"`{text}` held here")
            for held in path:
                mapped = _rename_fact(held, names)
                if mapped is not None:
                    implied.append(mapped)
        return known, tuple(implied)

    def _summary(self, target) -> tuple[frozenset[str], frozenset[str]]:
        from seqguard.lint.analysis.walk import true_summary
        relpath, function, owner, _ = target
        key = (relpath, owner, function.name, function.lineno)
        if key not in self._summaries:
            self._summaries[key] = (frozenset(), frozenset())  # a recursion meets this
            try:
                self._summaries[key] = true_summary(function, owner, self.mirrors, self.device,
                                                    self.config.condition_words)
            except RecursionError:
                pass
        return self._summaries[key]

    def possible_modes(self, facts: Iterable[PathFact], relpath: str, class_qualname: Optional[str],
                       scope: Optional[str] = None) -> Optional[frozenset[str]]:
        """The modes a batch can be in on a path with `facts`, in the code of `scope`
        (a model fact about its function or class narrows them too)."""
        if self.modes is None:
            return None
        possible = self.modes.possible(facts, self._resolver(relpath, class_qualname))[0]
        fact = self.fact_at(relpath, scope)
        return possible & fact.modes if fact is not None else possible

    def _resolver(self, relpath: Optional[str], class_qualname: Optional[str], with_target: bool = False):
        """Finds the project function a test calls, in the file the test is written in:
        (def, leading parameters the call leaves out), or the index's whole target."""
        if relpath is None:
            return None
        owner = class_qualname if class_qualname and "<locals>" not in class_qualname else None

        def resolve(call: ast.Call):
            func = call.func
            if (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id in ("self", "cls")
            ):
                callee = Callee(CalleeHead.SELF, func.attr, func.value.id)
            else:
                written = _dotted(func)
                if not written:
                    return None
                callee = Callee(CalleeHead.NAME, written)
            target = self.index.callable_named(relpath, owner, callee)
            if target is None:
                return None
            return target if with_target else (target[1], target[3])
        return resolve

    def by_path(self, facts: Iterable[PathFact], relpath: Optional[str] = None,
                class_qualname: Optional[str] = None, modes: bool = True,
                scope: Optional[str] = None) -> Optional[str]:
        """Why the path (its facts) rules the skip out, or None. `relpath` and
        `class_qualname` say where the facts were written (for the project's own
        helpers they call), `scope` the function they are in (a model fact about it
        narrows the modes); `modes=False` asks only about what holds for the whole
        process (features, not the batch's forward mode)."""
        facts = tuple(facts)
        hit = first_implied(facts, self.dead)
        if hit is not None:
            return f"this branch runs only where `{hit[0].text}`, and the device lengths always exist"
        hit = first_implied(facts, self.present)
        if hit is not None:
            return f"`{hit[0].text}` holds here: {hit[1].condition.why or 'the mirror is present then'}"
        if self.modes is not None and modes:
            for pattern in self.present_outside:
                hit = first_implied(facts, [pattern])
                if hit is None:
                    continue
                excluded = set(pattern.condition.outside_modes)
                if not excluded <= set(self.modes.members):
                    continue  # a mode the enum does not have (a typo): the entry cannot be checked
                possible, _ = self.modes.possible(facts, self._resolver(relpath, class_qualname))
                if not possible & excluded:
                    return (f"`{hit[0].text}` holds here, and the batch cannot be in "
                            f"{', '.join(pattern.condition.outside_modes)}: "
                            f"{pattern.condition.why or 'the mirror is present then'}")
        hit = first_implied(facts, self.forced)
        if hit is not None:
            return f"`{hit[0].text}` holds here, and {hit[1].condition.why}: the mirror is kept"
        if self.modes is not None and modes:
            possible, used = self.modes.possible(facts, self._resolver(relpath, class_qualname))
            said = [u.text for u in used]
            fact = self.fact_at(relpath, scope)
            if fact is not None:
                possible = possible & fact.modes
                said.append(fact.words)
            # no mode at all: tests that contradict each other say the model lost track (a
            # call the batch was handed to set its mode), not that the code never runs
            if possible and not possible & self.skip_modes and said:
                still = ", ".join(sorted(possible))
                return (f"the batch can only be in {still} here ({'; '.join(said)}), "
                        f"and the mirror is None only in {', '.join(sorted(self.skip_modes))}")
        return None
    # ---- regions and backends ----------------------------------------------------------
    def is_capture_function(self, scope: str) -> bool:
        """Whether `scope` (a qualname) is, or is inside, a function the model names as
        CUDA-graph capture code (`capture-functions`)."""
        return any(fnmatch.fnmatchcase(part, pattern) for part in scope.split(".")
                   for pattern in self.config.capture_functions)

    def sync_allowed_by_path(self, facts: Iterable[PathFact], relpath: Optional[str], class_qualname: Optional[str],
                             modes: Optional[frozenset[str]] = None, scope: Optional[str] = None) -> Optional[str]:
        """Why a host sync on this path is not the per-step one the opt-out removes: a
        stated sync-allowed condition (capture) holds, or no skip mode is possible."""
        facts = tuple(facts)
        # the calls of a method's overrides are one set of sites, asked of for each
        key = (facts, relpath, class_qualname, modes, scope)
        if key not in self._sync_memo:
            self._sync_memo[key] = self._sync_allowed_by_path(facts, relpath, class_qualname, modes, scope)
        return self._sync_memo[key]

    def _sync_allowed_by_path(self, facts: tuple[PathFact, ...], relpath: Optional[str], class_qualname: Optional[str],
                              modes: Optional[frozenset[str]], scope: Optional[str]) -> Optional[str]:
        if scope is not None and self.is_capture_function(scope):
            return f"`{scope}` is CUDA-graph capture code (capture-functions)"
        hit = first_implied(facts, self.sync_allowed)
        if hit is not None:
            return f"`{hit[0].text}` holds here: {hit[1].condition.why or 'a host sync is expected there'}"
        if self.modes is not None:
            possible, used = self.modes.possible(facts, self._resolver(relpath, class_qualname))
            if modes is not None:
                possible = possible & modes
            fact = self.fact_at(relpath, scope)
            if fact is not None:
                possible = possible & fact.modes
            if possible and not possible & self.skip_modes and (used or modes is not None or fact is not None):
                where = f" ({fact.words})" if fact is not None else ""
                return f"the batch can only be in {', '.join(sorted(possible))} there{where}"
        return None

    def backend_keeping_mirror(self, relpath: str, class_qualname: Optional[str]) -> Optional["ResolvedClass"]:
        if class_qualname is None:
            return None
        cls = self.index.classes_in(relpath).get(class_qualname)
        if cls is not None and (cls.is_backend or cls.is_root) and cls.flag is True and \
                all(d.flag is True for d in self.index.descendants(cls)):
            # its methods run with `self` any subclass: one that opts out runs them too
            return cls
        return None


def _top_level_class(source: str, name: str) -> Optional[ast.ClassDef]:
    """The first class `name` at the top level of a module's source. Its own lines are
    parsed when they parse alone (the enum of SGLang: 2 ms, against 50 for its whole
    file, which a one-file run need not pay); the whole file otherwise."""
    found = re.search(rf"^class[ \t]+{re.escape(name)}\b", source, re.M)
    if found is None:
        return None
    first = source.count("\n", 0, found.start())
    lines = source[found.start():].split("\n")
    # the body ends at the first line back at the left margin (not a blank line or a
    # comment); one inside a string or a bracket leaves lines that do not parse alone
    end = next((i for i, line in enumerate(lines[1:], 1) if line[:1] not in ("", " ", "\t", "#", "\f")),
               len(lines))
    for text, offset in (("\n".join(lines[:end]), first), (source, 0)):
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return ast.increment_lineno(node, offset) if offset else node
    return None


def _patterns(conditions: Iterable[Condition]) -> list[Pattern]:
    """The conditions as patterns. One that does not parse, or is too deep to match
    safely, can only come from a Config built in code (a file's, a preset's and a
    table's are checked on loading): it is left out, so it clears nothing."""
    patterns = []
    for condition in conditions:
        try:
            patterns.append(Pattern.of(condition))
        except (SyntaxError, ValueError):
            continue
    return patterns


@functools.lru_cache(maxsize=4096)
def _parsed_call(text: str) -> Optional[ast.Call]:
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return node if isinstance(node, ast.Call) else None


def _bindings(call: ast.Call, function: ast.FunctionDef, skip: int) -> dict[str, ast.expr]:
    """Parameter name -> the expression the call passes for it (`self` -> the receiver)."""
    args = function.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    names: dict[str, ast.expr] = {}
    if skip and positional and isinstance(call.func, ast.Attribute):
        names[positional[0]] = call.func.value
    for name, value in zip(positional[skip:], call.args):
        if isinstance(value, ast.Starred):
            break
        names[name] = value
    for keyword in call.keywords:
        if keyword.arg is not None:
            names[keyword.arg] = keyword.value
    return names


def _rename_key(key: str, names: dict[str, ast.expr]) -> Optional[str]:
    from seqguard.lint.analysis.names import expression_key, key_root
    root = key_root(key)
    if root not in names:
        return None  # a global or a local of the predicate: says nothing of the caller
    replacement = expression_key(names[root])
    return None if replacement is None else replacement + key[len(root):]


def _rename_fact(fact: PathFact, names: dict[str, ast.expr]) -> Optional[PathFact]:
    """A predicate's path fact in its caller's names (its parameters replaced by what the
    call passes); None when it names something of the predicate's own."""
    try:
        node = ast.parse(fact.test, mode="eval").body  # a tree of its own: renaming changes it
    except SyntaxError:
        return None
    free = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    if not free & set(names):
        return fact if not free - {"self"} - set(names) else None

    class Rename(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name):
            return names.get(name.id, name)
    try:
        return PathFact(ast.unparse(Rename().visit(node)), fact.held)
    except Exception:  # pragma: no cover - unparse handles what parse made
        return None


def _root(node: ast.AST) -> str:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def _dotted(node: ast.AST) -> str:
    from seqguard.lint.analysis.names import dotted
    return dotted(node)


def _argument(call: ast.Call, function: ast.FunctionDef, skip: int, parameter: str) -> Optional[str]:
    """The source key of what `call` binds to `parameter` of `function`."""
    from seqguard.lint.analysis.names import expression_key
    args = function.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)][skip:]
    if parameter in positional:
        index = positional.index(parameter)
        if index < len(call.args) and not isinstance(call.args[index], ast.Starred):
            return expression_key(call.args[index])
    for keyword in call.keywords:
        if keyword.arg == parameter:
            return expression_key(keyword.value)
    return None


def _local_tests(function: ast.FunctionDef) -> dict[str, ast.expr]:
    """`algo = SpeculativeAlgorithm.from_string(...)` style locals are not tests; a
    `flag = <test>` at the top of the aggregator is (for `if flag: return True`)."""
    out = {}
    for statement in function.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name):
            out[statement.targets[0].id] = statement.value
    return out


@dataclasses.dataclass(frozen=True)
class LiveFact:
    """A fact of the model that holds in this project: the code it is about, found."""
    fact: ModelFact
    relpath: str
    qualname: str              # the function, method or class, in its file
    modes: frozenset[str]      # the fact's modes (none for a fact of attributes present)


@dataclasses.dataclass(frozen=True)
class ModesAt:
    """What the facts about a piece of code say of its modes: those all of them allow."""
    modes: frozenset[str]
    words: str                 # each fact, as `explain` says it


@dataclasses.dataclass(frozen=True)
class ModelFacts:
    """The model's facts checked against the project: those that hold, and why each
    other one is stale (its code is gone, or a piece of code it cites is). A fact about
    a module the project does not hold at all is `elsewhere`: a preset's describes code
    this project is not (another engine, a plugin, a release before that module)."""
    live: tuple[LiveFact, ...]
    stale: tuple[tuple[int, ModelFact, str], ...]     # (entry number from 1, fact, what is wrong)
    elsewhere: tuple[tuple[int, ModelFact, str], ...] = ()

    @classmethod
    def check(cls, point: "EngineAtPoint") -> "ModelFacts":
        live, stale, elsewhere = [], [], []
        members = frozenset(point.enum.members) if point.enum is not None else None
        code: dict[str, object] = {}

        def code_of(name: str):
            """(relpath, qualname, code tokens) of what `name` names, or why it names
            nothing; each located and tokenized once (facts cite the same caller)."""
            if name not in code:
                found = _code_of(point, name)
                code[name] = found if isinstance(found, str) else (found[0], found[1], _code_tokens(found[2]))
            return code[name]

        for number, fact in enumerate(point.config.models, 1):
            found = code_of(fact.about)
            if isinstance(found, str):
                # `pkg.mod.f`, `pkg.mod.Class` or `pkg.mod.Class.method`: is `pkg.mod` here?
                module_held = point.locate_function(fact.about)[0] is not None
                (stale if module_held else elsewhere).append((number, fact, found))
                continue
            relpath, qualname, own = found
            wrong = next((w for w in (_cite_missing(code_of, c, own) for c in fact.cites) if w), None)
            if wrong is not None:
                stale.append((number, fact, wrong))
                continue
            if members is None and fact.modes:
                stale.append((number, fact, "`mode-enum` names no enum of the project, so its modes mean nothing"))
                continue
            if fact.modes:
                unknown, kind = [m for m in fact.modes if m not in members], f"a member of {point.config.mode_enum}"
            else:
                unknown = [a for a in fact.present if a not in point.mirrors]
                kind = f"a mirror attribute ({', '.join(point.mirrors)})"
            if unknown:
                stale.append((number, fact, f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not {kind}"))
                continue
            live.append(LiveFact(fact, relpath, qualname, frozenset(fact.modes)))
        return cls(tuple(live), tuple(stale), tuple(elsewhere))


def _cite_missing(code_of, cite: Cite, own: list[str]) -> Optional[str]:
    """Why `cite` is not where the fact says (in `own`, the tokens of the code the fact
    is about, or in the code it names), or None."""
    held = own
    if cite.within:
        found = code_of(cite.within)
        if isinstance(found, str):
            return f"it cites the code of {cite.within}, but {found}"
        held = found[2]
    wanted = _code_tokens(cite.code)
    if wanted and any(held[i:i + len(wanted)] == wanted for i in range(len(held) - len(wanted) + 1)):
        return None
    return f"{f'the code of {cite.within}' if cite.within else 'its code'} no longer has {cite.code!r}"


_NOT_CODE = frozenset({tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                       tokenize.ENCODING, tokenize.ENDMARKER})


def _code_tokens(text: str) -> list[str]:
    """The tokens of `text` that are code: a cite matches whole tokens, so neither a
    comment that still spells a removed gate nor a piece of a longer name keeps a fact
    alive, and spacing and line breaks do not matter. A text that stops mid-way (an open
    bracket) keeps the tokens read before it."""
    out: list[str] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type not in _NOT_CODE:
                out.append(token.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def _code_of(point: "EngineAtPoint", about: str):
    """(relpath, qualname, its source text) of the function, method or class `about`
    names, or why it names none. (`split_lines` keeps no line ends: they are put back,
    so that the text tokenizes as the file does.)"""
    index = point.index
    relpath, function = point.locate_function(about)
    source = index.source(relpath) if relpath is not None else None
    lines = split_lines(source) if source is not None else []
    if function is not None:
        qualname = about[len(index.module_of(relpath)) + 1:]
        return relpath, qualname, "\n".join(lines[function.lineno - 1:function.end_lineno or function.lineno])
    located = index.locate_class(about)
    if located is not None:
        relpath, qualname = located
        source = index.source(relpath)
        node = _top_level_class(source, qualname) if source is not None and "." not in qualname else None
        if node is not None:   # the whole class: its attributes, and methods
            return relpath, qualname, "\n".join(split_lines(source)[node.lineno - 1:node.end_lineno or node.lineno])
        spans = [(first, last) for q, first, last in index.function_spans(relpath) if q.startswith(qualname + ".")]
        if spans and source is not None:   # a nested class: the span of its methods
            lines = split_lines(source)
            return relpath, qualname, "\n".join(lines[min(f for f, _ in spans) - 1:max(last for _, last in spans)])
    return f"no function, method or class of the project is {about}"


def _fact_words(fact: LiveFact) -> str:
    return f"`{fact.fact.about}` runs only with batches in {', '.join(fact.fact.modes)}: {fact.fact.why} (models)"
