"""Is this host pull the per-step sync (SG004)?

A device-to-host pull in an opted-out backend is the sync the skip exists to avoid,
unless it pulls no device tensor (fields declared as host values, arguments every
caller passes a host copy), or it runs only where a sync is expected: capture, a mode
the skip never runs in, or a fallback taken only when a caller passes None
(`OffStepAtCalls`, asked of the fixpoint)."""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import TYPE_CHECKING, ClassVar, Iterable, Optional

from seqguard.config import Config
from seqguard.lint.analysis.names import bound_names, names_host_copy
from seqguard.lint.contract.conditions import FAILED, parsed_facts
from seqguard.lint.contract.fixpoint import Fixpoint, Question, site_of
from seqguard.lint.contract.reasons import Kind, Reason, leaf
from seqguard.lint.contract.sites import CallSite, Function, depth_above
from seqguard.lint.model import PathFact

if TYPE_CHECKING:
    from seqguard.lint.contract.model import Contract


@dataclasses.dataclass(frozen=True)
class PullVerdict:
    per_step: bool                     # a per-step sync: a finding
    reason: str = ""                   # a finding's clause: the skip modes possible there
    cleared: Optional[Reason] = None   # why it is not the per-step sync (the tree)
    callers: Optional[Reason] = None   # a finding's callers, asked and left open


@dataclasses.dataclass(frozen=True)
class OffStepAtCalls(Question):
    """Is a call made where a host sync in the function it calls is not the per-step
    one (capture, or a mode the skip never runs in), the batch in one of `modes`?"""
    ASKS = "a host sync is not the per-step one"
    parameter: ClassVar[None] = None   # about no object
    modes: Optional[frozenset[str]]

    def at(self, site: CallSite, fixpoint: Fixpoint, depth: int) -> Reason:
        point, sites = fixpoint.point, fixpoint.sites
        record = site.record
        opened = Reason(Kind.CALL, False, site=site_of(site))
        if record.deferred is not None:  # run later, wherever the partial is called
            return dataclasses.replace(opened, rests_on=(Reason(Kind.DEFERRED, False, fact=record.deferred),))
        _, path = sites.path_at(site)
        why = point.sync_allowed_by_path(path, site.relpath, record.class_qualname, self.modes, record.scope)
        if why is not None:
            return leaf(Kind.SYNC_ALLOWED, why)
        narrowed = sites.narrowed(site, path, self.modes)
        opened = dataclasses.replace(opened, modes=tuple(sorted((narrowed or frozenset()) & point.skip_modes)))
        caller = sites.function_of(site)
        if caller is None:
            return dataclasses.replace(opened, rests_on=(Reason(Kind.MODULE_LEVEL, False),))
        deeper = fixpoint.why_safe(caller, OffStepAtCalls(narrowed), depth_above(depth, site, caller))
        if deeper.holds:
            return Reason(Kind.CALLER, True, function=caller.name, rests_on=(deeper,), assumed=deeper.assumed)
        return dataclasses.replace(opened, rests_on=(deeper,))


class PerStepSync:
    """The verdict on a device-to-host pull in an opted-out backend (SG004)."""

    def __init__(self, contract: "Contract") -> None:
        self.contract = contract
        self.point = contract.point
        self.config = contract.config
        self.whole_project = contract.whole_project
        self._declarations_memo: dict[str, Optional[tuple[str, int, str]]] = {}

    def judge(self, relpath: str, pull) -> PullVerdict:
        """Whether the pull runs on the per-step path (a finding) or only where a sync
        is expected (capture, prefill), or pulls no device tensor at all (a field the
        project declares as a host value)."""
        point = self.point
        why = self._host_fields(pull.roots)
        if why is not None:
            return PullVerdict(False, cleared=leaf(Kind.HOST_VALUE, why))
        _, implied = point.expand(pull.path, relpath, None)
        path = (*pull.path, *implied)
        why = point.sync_allowed_by_path(path, relpath, None, scope=pull.scope)
        if why is not None:
            return PullVerdict(False, cleared=leaf(Kind.SYNC_ALLOWED, why))
        possible = point.possible_modes(path, relpath, None, pull.scope)
        function = self.contract.sites.function_at(relpath, pull.scope) if self.whole_project else None
        callers = None
        if function is not None:
            why = self._host_arguments(function, pull.roots)
            if why is not None:
                return PullVerdict(False, cleared=leaf(Kind.HOST_VALUE, why))
            callers = self.contract.fixpoint.why_safe(function, OffStepAtCalls(possible))
            if callers.holds:
                return PullVerdict(False, cleared=callers)
            # the fallback of a helper (`if lens_cpu is None: lens = seq_lens.cpu()`)
            # runs only if a caller passes None
            for parameter in _tested_none(pull.path):
                why = self._never_none(function, parameter)
                if why is not None:
                    return PullVerdict(False, cleared=leaf(Kind.NEVER_NONE,
                                                           f"it runs only where `{parameter}` is None, and {why}"))
        skipped = sorted((possible or frozenset()) & point.skip_modes)
        return PullVerdict(True, f"on the per-step path ({', '.join(skipped)} possible here)" if skipped else "",
                           callers=callers)

    def _never_none(self, function: Function, parameter: str) -> Optional[str]:
        """Why no call of `function` binds `parameter` to None (each passes an
        expression tested not to be None there); None when one may."""
        sites = self.contract.sites.sites(function, parameter)
        if not sites:
            return None
        for site in sites:
            if site.argument is None or site.argument not in site.record.known:
                return None
        site = sites[0]
        return (f"{_every_call(sites, function)} `{parameter}` tested not to be None "
                f"({site.relpath}:{site.record.line}: `{site.argument}`)")

    def _host_arguments(self, function: Function, roots: tuple[str, ...]) -> Optional[str]:
        """Why a pull of parameters (`seq_lens[i].item()` in a helper) copies nothing:
        every call of the function passes each of them a host copy, named as one
        (`seq_lens=meta.seq_lens_cpu_int`, as the walk names host copies)."""
        if not roots or any(r.startswith(".") for r in roots):
            return None
        index = self.contract.index
        definition = index.functions_of(function.relpath).get(function.qualname, (None, None))[0]
        if definition is None:
            return None
        bound = bound_names(definition, nested=True)
        if any(bound.get(r, 0) > 1 for r in roots):
            return None  # `seq_lens = fb.seq_lens` in the body: not what the callers passed
        said = []
        for root in roots:
            sites = self.contract.sites.sites(function, root)
            if not sites or not all(s.argument is not None and _host_named(s.argument, self.config) for s in sites):
                return None
            said.append(f"{_every_call(sites, function)} `{root}` a host copy "
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
        index = self.contract.index
        annotating, storing = index.files_annotating(name)
        if storing or not annotating:
            return None
        text_re = re.compile(rf"(?<![\w.]){re.escape(name)}[ \t]*:[ \t]*([^=\r\n#]*)")
        sources = []
        for relpath in annotating:
            source = index.source(relpath)
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


def _every_call(sites: list[CallSite], function: Function) -> str:
    """"the one call of `f` passes" or "all 3 calls of `f` pass", to say what each passes."""
    if len(sites) == 1:
        return f"the one call of `{function.name}` passes"
    return f"all {len(sites)} calls of `{function.name}` pass"


def _tested_none(facts: Iterable[PathFact]) -> list[str]:
    """The plain names a path has found to be None (`x is None` held, `x is not None`
    failed)."""
    names = []
    for _, node, polarity in parsed_facts(facts):
        if polarity == FAILED and isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) \
                and isinstance(node.ops[0], ast.IsNot):
            names.append(node.left.id)
    return names


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
