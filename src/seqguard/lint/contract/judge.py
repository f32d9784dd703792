"""The judge: can this unguarded read see a None mirror at run time?

It asks, in order, and the first answer that clears the read wins:
1. the object: is it of a type whose attribute no store ever makes None (a CUDA-graph
   runner's `torch.full` buffer)?
2. the path: does a test on the way rule the skip out (a stated present-condition, a
   feature the aggregator forces the mirror for, a forward mode the skip never runs in,
   the device lengths being None)?
3. the code around it: is it inside a backend whose own flag is True; was its object
   built by a copy of one whose mirror was just tested?
4. the callers: is every call of the function that holds it made where 1-3 hold?
A read none of these clears is a finding, and the verdict says why: the store that
makes the attribute None and the copies that carry it to this object.
Why one long module: the four questions share one cache of receiver types,
nullability and path facts per run; the questions' own models are beside it
(`types`, `nullability`, `conditions`, `modes`, `callers`)."""

from __future__ import annotations

import ast
import dataclasses
import fnmatch
import functools
import re
from typing import TYPE_CHECKING, Iterable, Optional

from seqguard.config import Condition, Config
from seqguard.lint.analysis.names import bound_names, names_host_copy
from seqguard.lint.analysis.source import split_lines
from seqguard.lint.analysis.terms import expression_terms
from seqguard.lint.contract.conditions import (FAILED, Pattern, fact_text, first_implied, forcing_conditions,
                                               generalised, parse_fact)
from seqguard.lint.contract.modes import ModeDomain
from seqguard.lint.contract.nullability import Nullability, Source
from seqguard.lint.contract.types import UNKNOWN, Types
from seqguard.lint.model import MirrorAccess

if TYPE_CHECKING:
    from seqguard.lint.contract.callers import Callers, Function
    from seqguard.lint.index import ProjectIndex, ResolvedClass


@dataclasses.dataclass(frozen=True)
class Step:
    """One location of an explanation (a SARIF codeFlow location)."""
    relpath: str
    line: int
    col: int                   # 0-based
    message: str


@dataclasses.dataclass(frozen=True)
class Verdict:
    may_be_none: bool
    reason: str                # one clause: why it can be None here, or why it cannot
    steps: tuple[Step, ...] = ()   # the store that gives None, each copy, then the read


SAFE_TYPE, SAFE_PATH, SAFE_BACKEND, SAFE_COPY, SAFE_CALLERS, SAFE_CLASS = (
    "type", "path", "backend", "copy", "callers", "class")


class Contract:
    """The engine model (from the configuration) applied to one project index."""

    def __init__(self, index: "ProjectIndex", config: Config, whole_project: bool = True) -> None:
        """`whole_project`: the index holds every file of the project. Without it, what
        the files not seen store or call is unknown, and only the code around a read
        (its path, its backend) can clear it."""
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
        self._fills_by_storage: Optional[dict[str, list]] = None
        self._tails: Optional[set[str]] = None
        self._declarations_memo: dict[str, Optional[tuple[str, int, str]]] = {}
        self._sync_memo: dict[tuple, Optional[str]] = {}
        # the branch where a batch's device lengths are None never runs: they always exist
        self.dead = [Pattern.of(Condition(f"*.{self.device} is None", "the device lengths always exist"))]

    def prepare(self) -> None:
        """Build what every judgement reads (before forked judges share it)."""
        _ = self.nullability, self.forced, self.modes
        if self.whole_project:
            self._fills()
            self._fill_tails()
            self.callers.index_imports()

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

    # ---- verdicts ---------------------------------------------------------------------
    def judge(self, relpath: str, access: MirrorAccess) -> Verdict:
        cleared = self.clearance(relpath, access)
        if cleared is not None:
            return Verdict(False, cleared[1])
        return self._finding(relpath, access)

    def clearance(self, relpath: str, access: MirrorAccess) -> Optional[tuple[str, str]]:
        """(kind, why) when the read cannot see None, else None."""
        why = self._by_type(relpath, access) if self.whole_project else None
        if why is not None:
            return SAFE_TYPE, why
        known, access = self._with_implied(relpath, access)
        if access.mirror_key in known:
            return SAFE_PATH, f"{known[access.mirror_key]}, which it does only where `{access.mirror_key}` is not None"
        why = self.by_path(access.path, relpath, access.class_qualname)
        if why is not None:
            return SAFE_PATH, why
        if self.is_capture_function(access.scope):
            return SAFE_PATH, (f"`{access.scope}` is CUDA-graph capture code (capture-functions): its batches are "
                               f"the runner's own, built from its buffers, never skipped")
        backend = self.backend_keeping_mirror(relpath, access.class_qualname)
        if backend is not None:
            return SAFE_BACKEND, (f"it runs inside `{backend.name}`, whose {self.flag} is True "
                                  f"({backend.flag_source}): its own flag keeps the mirror")
        why = self._by_copy(relpath, access)
        if why is not None:
            return SAFE_COPY, why
        if not self.whole_project:
            return None
        question = self._callers_question(relpath, access)
        if question is not None:
            why = self.callers.why_safe(*question)
            if why is not None:
                return SAFE_CALLERS, why
        owner = self.index.classes_in(relpath).get(access.class_qualname) if access.class_qualname else None
        if owner is not None and "." not in owner.facts.qualname:
            why = self.callers.why_class_safe(owner)
            if why is not None:
                return SAFE_CLASS, why
        return None

    def callers_gap(self, relpath: str, access: MirrorAccess) -> Optional[str]:
        """For `explain`: why the callers of the function holding a read do not clear it
        (the first call that is not safe and what it leaves open); None when the read is
        not in a function whose callers are followed."""
        if not self.whole_project:
            return None
        question = self._callers_question(relpath, self._with_implied(relpath, access)[1])
        return None if question is None else self.callers.why_not(*question)

    def pull_callers_gap(self, relpath: str, pull) -> Optional[str]:
        """`callers_gap` for a host pull: why its callers do not show it off the per-step path."""
        function = self._pull_function(relpath, pull) if self.whole_project else None
        if function is None:
            return None
        modes = self.possible_modes(self._pull_path(relpath, pull), relpath, None)
        return self.callers.why_not(function, None, "", modes, question="sync")

    def _with_implied(self, relpath: str, access: MirrorAccess) -> tuple[dict, MirrorAccess]:
        """(what the read's path facts imply is not None, the read with the facts they
        imply on its path): what the judge and `explain` reason from."""
        known, implied = self.expand(access.path, relpath, access.class_qualname)
        if implied:
            access = dataclasses.replace(access, path=tuple(sorted({*access.path, *implied})),
                                         known=tuple(sorted({*access.known, *known})))
        return known, access

    def _callers_question(self, relpath: str, access: MirrorAccess) -> Optional[tuple]:
        """(function, parameter, attribute, modes) that the callers are asked about for a
        read in a function whose calls can be followed, else None."""
        function, parameter = self._holder(relpath, access.scope, access.receiver)
        if function is None:
            return None
        return function, parameter, access.attr, self.possible_modes(access.path, relpath, access.class_qualname)

    def _pull_path(self, relpath: str, pull) -> tuple:
        _, implied = self.expand(pull.path, relpath, None)
        return (*pull.path, *implied)

    def _pull_function(self, relpath: str, pull) -> Optional["Function"]:
        """The function holding a pull, when its calls can be followed (not module level)."""
        if pull.scope not in self.index.function_names(relpath):
            return None
        from seqguard.lint.contract.callers import Function

        return Function(relpath, pull.scope)

    @functools.cached_property
    def callers(self) -> "Callers":
        from seqguard.lint.contract.callers import Callers
        return Callers(self)

    def _holder(self, relpath: str, scope: str, receiver: str) -> tuple[Optional["Function"], Optional[str]]:
        """The function (module-level, or a method of a module-level class) holding a
        read, and the parameter the read's object is, if it is one (`self` included)."""
        from seqguard.lint.contract.callers import Function
        if scope not in self.index.function_names(relpath):
            return None, None
        function = Function(relpath, scope)
        definition = self.index.functions_of(relpath).get(scope, (None, None))[0]
        if definition is None:
            return None, None
        args = definition.args
        names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        # `fb = other` before the read: the object read is not the one the caller passed
        return function, receiver if receiver in names and self.callers.unrebound(function, receiver) else None

    def _by_copy(self, relpath: str, access: MirrorAccess) -> Optional[str]:
        return self.copy_guard(relpath, access.line, access.class_qualname, access.receiver, access.attr,
                               access.known)

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
            target = self.index.callable_named(relpath, owner, callee.replace("self.", "<self>.", 1)
                                               if callee.startswith("self.") else callee)
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
        from seqguard.lint.analysis.values import parse_copy
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
                if value.startswith("copy:"):
                    copied, _, source = parse_copy(value)
                    if copied == attr and key_root(source) in names and source == key_root(source):
                        out.add(source)
        return out

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

    def _by_type(self, relpath: str, access: MirrorAccess) -> Optional[str]:
        types = self.receiver_types(relpath, access)
        if UNKNOWN in types or not types:
            return None
        if any(self.nullability.why_none(t, access.attr) is not None or self.nullability.dynamic(t)
               for t in types):
            return None
        names = ", ".join(f"`{self.type_name(t)}`" for t in sorted(types))
        return (f"`{access.receiver}` is {names}, whose `{access.attr}` no store ever sets to None "
                f"(a persistent buffer, not the batch's mirror)")

    # ---- predicates the code calls in its tests ----------------------------------------
    def expand(self, facts: Iterable[str], relpath: Optional[str], class_qualname: Optional[str]
               ) -> tuple[dict[str, str], tuple[str, ...]]:
        """What the project's own predicates that held on the path guarantee:
        `if self._opus_prefill_applies(q, fb, r):` where that method returns True only
        past `or fb.seq_lens_cpu is None: return False`. (key known not None -> which test
        says so, path facts), in the caller's names."""
        if relpath is None or not self.whole_project:
            return {}, ()
        resolve = self._resolver(relpath, class_qualname, with_target=True)
        known: dict[str, str] = {}
        implied: list[str] = []
        for fact in facts:
            text, _, polarity = fact.rpartition("\0")
            if polarity != "+" or not text.endswith(")"):
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

    def possible_modes(self, facts: Iterable[str], relpath: str, class_qualname: Optional[str]
                       ) -> Optional[frozenset[str]]:
        if self.modes is None:
            return None
        return self.modes.possible(facts, self._resolver(relpath, class_qualname))[0]

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
                callee = f"<self>.{func.attr}"
            else:
                callee = _dotted(func)
            if not callee:
                return None
            target = self.index.callable_named(relpath, owner, callee)
            if target is None:
                return None
            return target if with_target else (target[1], target[3])
        return resolve

    def by_path(self, facts: Iterable[str], relpath: Optional[str] = None,
                class_qualname: Optional[str] = None, modes: bool = True) -> Optional[str]:
        """Why the path (its facts) rules the skip out, or None. `relpath` and
        `class_qualname` say where the facts were written (for the project's own
        helpers they call); `modes=False` asks only about what holds for the whole
        process (features, not the batch's forward mode)."""
        facts = tuple(facts)
        hit = first_implied(facts, self.dead)
        if hit is not None:
            return f"this branch runs only where `{fact_text(hit[0])}`, and the device lengths always exist"
        hit = first_implied(facts, self.present)
        if hit is not None:
            return f"`{fact_text(hit[0])}` holds here: {hit[1].condition.why or 'the mirror is present then'}"
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
                    return (f"`{fact_text(hit[0])}` holds here, and the batch cannot be in "
                            f"{', '.join(pattern.condition.outside_modes)}: "
                            f"{pattern.condition.why or 'the mirror is present then'}")
        hit = first_implied(facts, self.forced)
        if hit is not None:
            return f"`{fact_text(hit[0])}` holds here, and {hit[1].condition.why}: the mirror is kept"
        if self.modes is not None and modes:
            possible, used = self.modes.possible(facts, self._resolver(relpath, class_qualname))
            # no mode at all: tests that contradict each other say the model lost track (a
            # call the batch was handed to set its mode), not that the code never runs
            if possible and not possible & self.skip_modes and used:
                still = ", ".join(sorted(possible))
                return (f"the batch can only be in {still} here ({'; '.join(fact_text(u) for u in used)}), "
                        f"and the mirror is None only in {', '.join(sorted(self.skip_modes))}")
        return None

    # ---- composites ---------------------------------------------------------------------
    def delegates(self, cls) -> Optional[str]:
        """The first method of `cls` that hands its work to another object's method of
        the same name (`self.primary.init_forward_metadata(fb)`, `for b in self.backends:
        b.forward(...)`): a composite backend, judged by the backends it holds."""
        prefix = cls.facts.qualname + "."
        source = self.index.source(cls.relpath) or ""
        lines = split_lines(source)  # as Python numbers them (str.splitlines splits at form feeds)
        # only a method whose text calls `.<its own name>(` is parsed to look closer
        methods = [q for q, first, last in self.index.function_spans(cls.relpath)
                   if q.startswith(prefix) and "." not in q[len(prefix):]
                   and any(f".{q[len(prefix):]}(" in line for line in lines[first - 1:last])]
        for qualname, (function, _) in ((q, self.index.functions_of(cls.relpath).get(q, (None, None)))
                                        for q in methods):
            if function is None or not function.args.args:
                continue
            own = function.args.args[0].arg
            for node in ast.walk(function):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == function.name and not function.name.startswith("__")):
                    receiver = node.func.value
                    if isinstance(receiver, ast.Name) and receiver.id == own:
                        continue
                    if isinstance(receiver, ast.Call) and _dotted(receiver.func) == "super":
                        continue
                    return qualname
        return None

    # ---- persistent buffers (SG010) ---------------------------------------------------
    def stale_buffer(self, relpath: str, access: MirrorAccess) -> Optional[tuple[str, str]]:
        """(source, where) when `access` reads a persistent buffer (a type no store makes
        None) that its class hierarchy refills from a mirror only under that mirror's
        None test, and nothing on the read's path says the mirror was present."""
        if access.class_qualname is None or not self.whole_project or access.guarded or access.known:
            return None
        if _tail(access.mirror_key) not in self._fill_tails():
            return None  # no refill of a buffer spelled like this anywhere: not worth typing
        types = self.receiver_types(relpath, access)
        if UNKNOWN in types or not types or any(
                self.nullability.why_none(t, access.attr) is not None for t in types):
            return None
        if self.is_capture_function(access.scope):
            return None  # capture: the buffer is being built, the skip does not run there
        # a buffer type every refill of which waits for the mirror (one refilled on some
        # path whatever the mirror is not this defect)
        fills = next((found for t in sorted(types) for found in [self._fills().get((t, access.attr), [])]
                      if found and all(fill.guarded for _, fill in found)), None)
        if not fills:
            return None
        if access.known or self.by_path(access.path, relpath, access.class_qualname) is not None \
                or self.sync_allowed_by_path(access.path, relpath, access.class_qualname) is not None:
            return None  # read where a mirror was tested, or where the skip cannot be
        function, _ = self._holder(relpath, access.scope, "")
        if function is not None and self.callers.why_safe(
                function, None, "", self.possible_modes(access.path, relpath, access.class_qualname),
                question="sync") is not None:
            return None  # only ever called at capture, or where the skip cannot be
        fill_relpath, fill = fills[0]
        return fill.mirror_key, f"{fill_relpath}:{fill.line}"

    def is_capture_function(self, scope: str) -> bool:
        """Whether `scope` (a qualname) is, or is inside, a function the model names as
        CUDA-graph capture code (`capture-functions`)."""
        return any(fnmatch.fnmatchcase(part, pattern) for part in scope.split(".")
                   for pattern in self.config.capture_functions)

    def _fill_tails(self) -> set[str]:
        """`buffers.seq_lens_cpu` for every buffer some mirror read fills (the last two
        names of what it writes into)."""
        if self._tails is None:
            self._tails = {_tail(a.fills) for _, facts in self.index.parsed_files() for a in facts.accesses
                           if a.fills is not None}
        return self._tails

    def _fills(self) -> dict[tuple[str, str], list[tuple[str, MirrorAccess]]]:
        """(buffer type, attribute) -> every mirror read that fills that buffer
        (`buffers.seq_lens_cpu[:n].copy_(fb.seq_lens_cpu)`), the buffer typed from the
        function it is written in."""
        if self._fills_by_storage is None:
            self._fills_by_storage = {}
            for relpath, facts in self.index.parsed_files():
                for a in facts.accesses:
                    if a.fills is None or "." not in a.fills or a.fills.rsplit(".", 1)[1] not in self.mirrors:
                        continue
                    holder, attr = a.fills.rsplit(".", 1)
                    for t in self.expression_types(relpath, a.line, a.class_qualname, holder) - {UNKNOWN}:
                        self._fills_by_storage.setdefault((t, attr), []).append((relpath, a))
        return self._fills_by_storage

    # ---- host syncs (SG004) ----------------------------------------------------------
    def sync_allowed_by_path(self, facts: Iterable[str], relpath: Optional[str], class_qualname: Optional[str],
                             modes: Optional[frozenset[str]] = None, scope: Optional[str] = None) -> Optional[str]:
        """Why a host sync on this path is not the per-step one the opt-out removes: a
        stated sync-allowed condition (capture) holds, or no skip mode is possible."""
        facts = tuple(facts)
        # the calls of a method's overrides are one set of sites, asked of for each
        key = (facts, relpath, class_qualname, modes, scope)
        if key not in self._sync_memo:
            self._sync_memo[key] = self._sync_allowed_by_path(facts, relpath, class_qualname, modes, scope)
        return self._sync_memo[key]

    def _sync_allowed_by_path(self, facts: tuple[str, ...], relpath: Optional[str], class_qualname: Optional[str],
                              modes: Optional[frozenset[str]], scope: Optional[str]) -> Optional[str]:
        if scope is not None and self.is_capture_function(scope):
            return f"`{scope}` is CUDA-graph capture code (capture-functions)"
        hit = first_implied(facts, self.sync_allowed)
        if hit is not None:
            return f"`{fact_text(hit[0])}` holds here: {hit[1].condition.why or 'a host sync is expected there'}"
        if self.modes is not None:
            possible, used = self.modes.possible(facts, self._resolver(relpath, class_qualname))
            if modes is not None:
                possible = possible & modes
            if possible and not possible & self.skip_modes and (used or modes is not None):
                return f"the batch can only be in {', '.join(sorted(possible))} there"
        return None

    def judge_pull(self, relpath: str, pull) -> Verdict:
        """Whether a device-to-host pull in an opted-out backend runs on the per-step
        path (a finding) or only where a sync is expected (capture, prefill), or pulls
        no device tensor at all (a field the project declares as a host value)."""
        why = self._host_fields(pull.roots)
        if why is not None:
            return Verdict(False, why)
        path = self._pull_path(relpath, pull)
        why = self.sync_allowed_by_path(path, relpath, None, scope=pull.scope)
        if why is not None:
            return Verdict(False, why)
        possible = self.possible_modes(path, relpath, None)
        function = self._pull_function(relpath, pull) if self.whole_project else None
        if function is not None:
            why = self._host_arguments(function, pull.roots)
            if why is not None:
                return Verdict(False, why)
            why = self.callers.why_safe(function, None, "", possible, question="sync")
            if why is not None:
                return Verdict(False, why)
            # the fallback of a helper (`if lens_cpu is None: lens = seq_lens.cpu()`)
            # runs only if a caller passes None
            for parameter in _tested_none(pull.path):
                why = self.callers.why_never_none(function, parameter)
                if why is not None:
                    return Verdict(False, f"it runs only where `{parameter}` is None, and {why}")
        skipped = sorted((possible or frozenset()) & self.skip_modes)
        return Verdict(True, f"on the per-step path ({', '.join(skipped)} possible here)" if skipped else "")

    def _host_arguments(self, function: "Function", roots: tuple[str, ...]) -> Optional[str]:
        """Why a pull of parameters (`seq_lens[i].item()` in a helper) copies nothing:
        every call of the function passes each of them a host copy, named as one
        (`seq_lens=meta.seq_lens_cpu_int`, as the walk names host copies)."""
        if not roots or any(r.startswith(".") for r in roots):
            return None
        definition = self.index.functions_of(function.relpath).get(function.qualname, (None, None))[0]
        if definition is None:
            return None
        bound = bound_names(definition, nested=True)
        if any(bound.get(r, 0) > 1 for r in roots):
            return None  # `seq_lens = fb.seq_lens` in the body: not what the callers passed
        said = []
        for root in roots:
            sites = self.callers.sites(function, root)
            if not sites or not all(s.argument is not None and _host_named(s.argument, self.config) for s in sites):
                return None
            calls = "the one call" if len(sites) == 1 else f"all {len(sites)} calls"
            verb = "passes" if len(sites) == 1 else "pass"
            said.append(f"{calls} of `{function.name}` {verb} `{root}` a host copy "
                        f"({sites[0].relpath}:{sites[0].record.line}: `{sites[0].argument}`)")
        return "; ".join(said) + ": nothing is copied from the device"

    def _host_fields(self, roots: tuple[str, ...]) -> Optional[str]:
        """Why a pull whose value comes only from fields (`.total_seq_lens`) pulls no
        device tensor: each such field is declared in a class body, every class-body
        declaration and every other annotation of that name in the project says a host
        type (`total_seq_lens: int = 0`), and nothing stores it as an attribute
        (`self.total_seq_lens = x`), which could give it any value. Declared types are
        trusted, as NullAway trusts its annotations: a value passed to the class's
        constructor is taken to be what the field says."""
        if not roots or not self.whole_project or any(not r.startswith(".") for r in roots):
            return None
        said = []
        for root in roots:
            declared = self._host_declaration(root[1:])
            if declared is None:
                return None
            where, line, text = declared
            said.append(f"`{root[1:]}` is declared `{text}` ({where}:{line})")
        return "; ".join(said) + ": a host value, so nothing is copied from the device"

    def _host_declaration(self, name: str) -> Optional[tuple[str, int, str]]:
        """(relpath, line, annotation) of the first class-body declaration of field
        `name`, when every annotation of that name in the project says a host type and
        no file stores it as an attribute; else None. The byte scan names the files; the
        annotations are read as text first (`seq_lens: torch.Tensor` somewhere ends the
        search at once), and only when all say a host type are the files parsed."""
        if name in self._declarations_memo:
            return self._declarations_memo[name]
        self._declarations_memo[name] = None
        annotating, storing = self.index.files_annotating(name)
        if storing or not annotating:
            return None
        text_re = re.compile(rf"(?<![\w.]){re.escape(name)}[ \t]*:[ \t]*([^=\r\n#]*)")
        sources = []
        for relpath in annotating:
            source = self.index.source(relpath)
            if source is None:
                return None  # a declaration that cannot be read may say anything
            if any(not _host_annotation_text(m.group(1)) for m in text_re.finditer(source)):
                return None
            sources.append((relpath, source))
        first = None
        for relpath, source in sources:
            try:
                tree = ast.parse(source)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return None
            for node in ast.walk(tree):
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute) \
                        and node.target.attr == name:
                    return None  # `self.total_seq_lens: T = x`: a store (the scan should have said)
                if not isinstance(node, ast.ClassDef):
                    continue
                for statement in node.body:
                    if (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                            and statement.target.id == name):
                        if not _is_host_type(statement.annotation):
                            return None
                        first = first or (relpath, statement.lineno, ast.unparse(statement.annotation))
        self._declarations_memo[name] = first
        return first

    def backend_keeping_mirror(self, relpath: str, class_qualname: Optional[str]) -> Optional["ResolvedClass"]:
        if class_qualname is None:
            return None
        cls = self.index.classes_in(relpath).get(class_qualname)
        if cls is not None and (cls.is_backend or cls.is_root) and cls.flag is True and \
                all(d.flag is True for d in self.index.descendants(cls)):
            # its methods run with `self` any subclass: one that opts out runs them too
            return cls
        return None

    # ---- the explanation of a finding -------------------------------------------------
    def _finding(self, relpath: str, access: MirrorAccess) -> Verdict:
        types = self.receiver_types(relpath, access)
        read = Step(relpath, access.line, access.col, f"`{access.subject}` is read here without a None guard")
        chain: list[Source] = []
        for t in sorted(types - {UNKNOWN}):
            chain = self.nullability.chain(t, access.attr)
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
            return Verdict(True, reason + self._path_note(access), (*steps, read))
        if UNKNOWN in types:
            reason = "its object's type cannot be told, so any batch's mirror may be read here"
        else:
            reason = "no store could be traced"
        return Verdict(True, reason + self._path_note(access), (read,))

    def _path_note(self, access: MirrorAccess) -> str:
        if self.modes is None:
            return ""
        possible, _ = self.modes.possible(access.path)
        skipped = sorted(possible & self.skip_modes)
        return f"; the batch can be in {', '.join(skipped)} here" if skipped else ""

    def type_name(self, type_id: str) -> str:
        if type_id.startswith("ns:"):
            relpath, line, _ = type_id[3:].rsplit(":", 2)
            return f"SimpleNamespace built at {relpath}:{line}"
        return type_id.rsplit(".", 1)[-1]


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


# Declared types that hold host values: a number, a string, a Python container of them,
# or None (`int(None)` raises, it does not sync); spelled with or without `typing.`.
_HOST_NAMES = frozenset({"int", "float", "bool", "str", "bytes", "None"})
_HOST_CONTAINERS = frozenset({"List", "list", "Tuple", "tuple", "Sequence", "Set", "set", "FrozenSet", "frozenset",
                              "Optional", "Union"})


def _is_host_type(node: ast.expr) -> bool:
    """Whether an annotation names only host types (`Optional[List[int]]`, `int | None`);
    a name it does not know (an alias of `Tensor`, `np.ndarray`, `Any`) is not."""
    if isinstance(node, ast.Constant):
        return node.value is None or node.value is Ellipsis
    if isinstance(node, ast.Name):
        return node.id in _HOST_NAMES
    if isinstance(node, ast.Attribute):
        return isinstance(node.value, ast.Name) and node.value.id == "typing" and node.attr in _HOST_NAMES
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _is_host_type(node.left) and _is_host_type(node.right)
    if isinstance(node, ast.Subscript):
        container = node.value
        name = container.id if isinstance(container, ast.Name) else container.attr if (
            isinstance(container, ast.Attribute) and isinstance(container.value, ast.Name)
            and container.value.id == "typing") else None
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return name in _HOST_CONTAINERS and all(_is_host_type(item) for item in items)
    return False


def _host_annotation_text(text: str) -> bool:
    """Whether the annotation that starts `text` (the rest of its line: `int = 0`,
    `torch.Tensor, other: int)`) is a host type: the shortest prefix ending before a
    `,`, `)`, `:` or `=` that parses is the annotation; none parsing is not a host type."""
    text = text.strip()
    cuts = [i for i, c in enumerate(text) if c in ",):="] + [len(text)]
    for cut in cuts:
        try:
            node = ast.parse(text[:cut].strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        return _is_host_type(node)
    return False


def _tested_none(facts: Iterable[str]) -> list[str]:
    """The plain names a path has found to be None (`x is None` held, `x is not None`
    failed)."""
    names = []
    for fact in facts:
        parsed = parse_fact(fact)
        if parsed is None:
            continue
        node, polarity = parsed
        if polarity == FAILED and isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) \
                and isinstance(node.ops[0], ast.IsNot):
            names.append(node.left.id)
    return names


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


def _rename_fact(fact: str, names: dict[str, ast.expr]) -> Optional[str]:
    text, _, polarity = fact.rpartition("\0")
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    free = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    if not free & set(names):
        return fact if not free - {"self"} - set(names) else None

    class Rename(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name):
            return names.get(name.id, name)
    try:
        return f"{ast.unparse(Rename().visit(node))}\0{polarity}"
    except Exception:  # pragma: no cover - unparse handles what parse made
        return None


def _tail(key: str) -> str:
    return ".".join(key.split(".")[-2:])


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


def _written(store) -> str:
    if store.kind.value == "keyword":
        return f"{store.receiver}({store.attr}=...)"
    if store.kind.value == "class":
        return f"{store.attr} = ... (class default)"
    receiver = store.receiver or "?"
    return f"{receiver}.{store.attr} = ..."


def _local_tests(function: ast.FunctionDef) -> dict[str, ast.expr]:
    """`algo = SpeculativeAlgorithm.from_string(...)` style locals are not tests; a
    `flag = <test>` at the top of the aggregator is (for `if flag: return True`)."""
    out = {}
    for statement in function.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name):
            out[statement.targets[0].id] = statement.value
    return out


def _host_named(expression: str, config: Config) -> bool:
    """Whether an argument is a field named as a host copy of lengths: an attribute
    (a local may be bound to anything) whose name holds a word of `host-name-words`
    (`cpu`, `host`) and one of `length-name-words` (`len`, `lens`):
    `meta.seq_lens_cpu_int`, `self.host_lens[:bs]`; not `x.cpu_count`."""
    try:
        node = ast.parse(expression, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    while isinstance(node, ast.Subscript):
        node = node.value
    if not isinstance(node, ast.Attribute):
        return False
    return names_host_copy(node.attr, config.host_name_words) and \
        any(w in config.length_name_words for w in node.attr.split("_"))
