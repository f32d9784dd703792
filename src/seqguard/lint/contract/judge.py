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
What holds at a point (types, nullability, path conditions, modes, capture code,
backends' flags, copies) is `point.EngineAtPoint`, one per run, which the judge and the
callers (`callers`) both ask; the judge builds both and keeps only the verdicts."""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
from typing import TYPE_CHECKING, Iterable, Optional

from seqguard.config import Config
from seqguard.lint.analysis.names import bound_names, dotted, names_host_copy
from seqguard.lint.analysis.source import split_lines
from seqguard.lint.contract.conditions import FAILED, parse_fact
from seqguard.lint.contract.nullability import Source
from seqguard.lint.contract.point import EngineAtPoint
from seqguard.lint.contract.types import UNKNOWN
from seqguard.lint.model import MirrorAccess

if TYPE_CHECKING:
    from seqguard.lint.contract.callers import Callers, Function
    from seqguard.lint.index import ProjectIndex


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
    """The verdicts of the engine model on one project index: a mirror read (SG002,
    SG003, SG009), a host pull (SG004), a persistent buffer (SG010), a composite backend
    (SG006). What holds at a point, which they rest on, is `self.point`."""

    def __init__(self, index: "ProjectIndex", config: Config, whole_project: bool = True) -> None:
        """`whole_project`: the index holds every file of the project. Without it, what
        the files not seen store or call is unknown, and only the code around a read
        (its path, its backend) can clear it."""
        self.index = index
        self.config = config
        self.whole_project = whole_project
        # what holds at a point, which the callers are asked about too
        self.point = EngineAtPoint(index, config, whole_project)
        self._fills_by_storage: Optional[dict[str, list]] = None
        self._tails: Optional[set[str]] = None
        self._declarations_memo: dict[str, Optional[tuple[str, int, str]]] = {}

    def prepare(self) -> None:
        """Build what every judgement reads (before forked judges share it)."""
        _ = self.point.nullability, self.point.forced, self.point.modes
        if self.whole_project:
            self._fills()
            self._fill_tails()
            self.callers.index_imports()

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
        why = self.point.by_path(access.path, relpath, access.class_qualname)
        if why is not None:
            return SAFE_PATH, why
        if self.point.is_capture_function(access.scope):
            return SAFE_PATH, (f"`{access.scope}` is CUDA-graph capture code (capture-functions): its batches are "
                               f"the runner's own, built from its buffers, never skipped")
        backend = self.point.backend_keeping_mirror(relpath, access.class_qualname)
        if backend is not None:
            return SAFE_BACKEND, (f"it runs inside `{backend.name}`, whose {self.point.flag} is True "
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
        modes = self.point.possible_modes(self._pull_path(relpath, pull), relpath, None)
        return self.callers.why_not(function, None, "", modes, question="sync")

    def _with_implied(self, relpath: str, access: MirrorAccess) -> tuple[dict, MirrorAccess]:
        """(what the read's path facts imply is not None, the read with the facts they
        imply on its path): what the judge and `explain` reason from."""
        known, implied = self.point.expand(access.path, relpath, access.class_qualname)
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
        return function, parameter, access.attr, self.point.possible_modes(access.path, relpath, access.class_qualname)

    def _pull_path(self, relpath: str, pull) -> tuple:
        _, implied = self.point.expand(pull.path, relpath, None)
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
        return Callers(self.point)

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
        return self.point.copy_guard(relpath, access.line, access.class_qualname, access.receiver, access.attr,
                               access.known)

    def _by_type(self, relpath: str, access: MirrorAccess) -> Optional[str]:
        types = self.point.receiver_types(relpath, access)
        if UNKNOWN in types or not types:
            return None
        if any(self.point.nullability.why_none(t, access.attr) is not None or self.point.nullability.dynamic(t)
               for t in types):
            return None
        names = ", ".join(f"`{self.point.type_name(t)}`" for t in sorted(types))
        return (f"`{access.receiver}` is {names}, whose `{access.attr}` no store ever sets to None "
                f"(a persistent buffer, not the batch's mirror)")

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
                    if isinstance(receiver, ast.Call) and dotted(receiver.func) == "super":
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
        types = self.point.receiver_types(relpath, access)
        if UNKNOWN in types or not types or any(
                self.point.nullability.why_none(t, access.attr) is not None for t in types):
            return None
        if self.point.is_capture_function(access.scope):
            return None  # capture: the buffer is being built, the skip does not run there
        # a buffer type every refill of which waits for the mirror (one refilled on some
        # path whatever the mirror is not this defect)
        fills = next((found for t in sorted(types) for found in [self._fills().get((t, access.attr), [])]
                      if found and all(fill.guarded for _, fill in found)), None)
        if not fills:
            return None
        if access.known or self.point.by_path(access.path, relpath, access.class_qualname) is not None \
                or self.point.sync_allowed_by_path(access.path, relpath, access.class_qualname) is not None:
            return None  # read where a mirror was tested, or where the skip cannot be
        function, _ = self._holder(relpath, access.scope, "")
        if function is not None and self.callers.why_safe(
                function, None, "", self.point.possible_modes(access.path, relpath, access.class_qualname),
                question="sync") is not None:
            return None  # only ever called at capture, or where the skip cannot be
        fill_relpath, fill = fills[0]
        return fill.mirror_key, f"{fill_relpath}:{fill.line}"

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
                    if a.fills is None or "." not in a.fills or a.fills.rsplit(".", 1)[1] not in self.point.mirrors:
                        continue
                    holder, attr = a.fills.rsplit(".", 1)
                    for t in self.point.expression_types(relpath, a.line, a.class_qualname, holder) - {UNKNOWN}:
                        self._fills_by_storage.setdefault((t, attr), []).append((relpath, a))
        return self._fills_by_storage

    # ---- host syncs (SG004) ----------------------------------------------------------
    def judge_pull(self, relpath: str, pull) -> Verdict:
        """Whether a device-to-host pull in an opted-out backend runs on the per-step
        path (a finding) or only where a sync is expected (capture, prefill), or pulls
        no device tensor at all (a field the project declares as a host value)."""
        why = self._host_fields(pull.roots)
        if why is not None:
            return Verdict(False, why)
        path = self._pull_path(relpath, pull)
        why = self.point.sync_allowed_by_path(path, relpath, None, scope=pull.scope)
        if why is not None:
            return Verdict(False, why)
        possible = self.point.possible_modes(path, relpath, None)
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
        skipped = sorted((possible or frozenset()) & self.point.skip_modes)
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

    # ---- the explanation of a finding -------------------------------------------------
    def _finding(self, relpath: str, access: MirrorAccess) -> Verdict:
        types = self.point.receiver_types(relpath, access)
        read = Step(relpath, access.line, access.col, f"`{access.subject}` is read here without a None guard")
        chain: list[Source] = []
        for t in sorted(types - {UNKNOWN}):
            chain = self.point.nullability.chain(t, access.attr)
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
        if self.point.modes is None:
            return ""
        possible, _ = self.point.modes.possible(access.path)
        skipped = sorted(possible & self.point.skip_modes)
        return f"; the batch can be in {', '.join(skipped)} here" if skipped else ""


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


def _tail(key: str) -> str:
    return ".".join(key.split(".")[-2:])


def _written(store) -> str:
    if store.kind.value == "keyword":
        return f"{store.receiver}({store.attr}=...)"
    if store.kind.value == "class":
        return f"{store.attr} = ... (class default)"
    receiver = store.receiver or "?"
    return f"{receiver}.{store.attr} = ..."


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
