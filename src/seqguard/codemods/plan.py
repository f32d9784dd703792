"""Planning a file's guards, before anything changes: group the reads lint reported by
statement, choose each read's fallback (device copy, the device tensor itself, a
template, the helper, an error), bind a copy once before the loop that needs it, and
say which reads are left for a manual fix and why. The result is a frozen `Plan` of
replacement nodes keyed by the original nodes' identities; `GuardMirrorReads` applies
it in one visit and checks it with `safety`.
Why one long module: the fallbacks a statement can take depend on each other (a
statement is written twice only when all its reads can be; a copy bound before a loop
serves the later loops of its block), so one planner walks each group with all of them
in view."""

from __future__ import annotations

import ast
import dataclasses
import re
from types import MappingProxyType
from typing import Mapping, NamedTuple, Optional, Sequence

import libcst as cst

from seqguard.codemods.bindings import Declarations, Targets, is_in_place, local_names
from seqguard.codemods.layout import char_column
from seqguard.codemods.locate import locate_whole
from seqguard.codemods.sites import ReadToGuard
from seqguard.codemods.templates import is_pure, quote, substituted, template_syncs
from seqguard.config import DEFAULT_FLAG
from seqguard.lint.analysis.source import split_lines
from seqguard.lint.cst_edits import ReplaceNodes

# Longer statements are not written twice (if/else) to vary one read: guarded in place.
MAX_DUPLICATED_LINES = 2
MAINTENANCE = "maintenance"
CONSUMER = "consumer"
HELPER_MODULE = "seqguard.runtime.fallback"
# the runtime helpers a `--style helper` fallback calls: host_seq_lens, host_seq_lens_sum
HELPER_PREFIX = "host_seq_lens"
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_CONDITIONAL = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.IfExp,
                cst.BooleanOperation)


class LocatedRead(NamedTuple):
    """A site found in the tree: its node, and whether it runs on some paths of its
    statement only."""
    site: ReadToGuard
    node: cst.CSTNode
    conditional: bool


class PlannedRead(NamedTuple):
    """A located read with the fallback chosen for it (device, direct, template,
    helper, raise)."""
    site: ReadToGuard
    node: cst.CSTNode
    conditional: bool
    mode: str


@dataclasses.dataclass(frozen=True)
class GuardedRead:
    """A read the command guarded (its input is a `sites.ReadToGuard`): where, how, and
    whether its fallback is a host sync."""
    line: int
    column: int          # 1-based, as lint reports it
    kind: str
    subject: str
    host_sync: bool      # the guard falls back to a device-to-host copy
    fallback: str = ""   # device | direct | template | helper | raise | "" (maintenance)
    reason: Optional[str] = None  # why no host-sync fallback was written here
    hoisted_as: Optional[str] = None  # the name its fallback is bound to, once, before its loop
    hoisted_at: Optional[int] = None  # the line (as lint found it) of the statement bound before
    inline: bool = False  # guarded within its statement (not an if/else around it)
    in_loop: bool = False  # a host sync every turn of a loop (its loop changes what it reads)


@dataclasses.dataclass
class _Group:
    """The sites of one statement (or one compound statement's header)."""
    statement: cst.CSTNode                  # SimpleStatementLine or a compound statement
    small: Optional[cst.BaseSmallStatement]  # the small statement holding the reads, if any
    sites: list[LocatedRead] = dataclasses.field(default_factory=list)
    can_wrap: bool = True                   # whole statement can be wrapped or duplicated
    can_insert_before: bool = True
    why_not: str = ""


@dataclasses.dataclass(frozen=True)
class Plan:
    """What one module's rewrite changes, keyed by `id()` of the original nodes:
    `inline` replaces a read's expression, `before` puts statements before a statement,
    `replace` puts statements in its place; `nodes` holds every keyed node (it keeps
    them alive, so no id is reused). `guarded` and `manual` are the report."""
    inline: Mapping[int, cst.BaseExpression]
    before: Mapping[int, tuple[cst.BaseStatement, ...]]
    replace: Mapping[int, tuple[cst.BaseStatement, ...]]
    touched: frozenset[int]
    nodes: Mapping[int, cst.CSTNode]
    guarded: tuple[GuardedRead, ...] = ()
    manual: tuple[tuple[int, str], ...] = ()   # (line, why) left for a manual fix
    imports: tuple[tuple[str, str], ...] = ()  # (module, name) the rewrite needs imported


@dataclasses.dataclass(frozen=True)
class Layout:
    """How the module writes code: what generated code must match."""
    lines: list[str]
    limit: int                 # line length
    nl: str                    # newline
    unit: str                  # indentation unit
    block_indent: Optional[str]
    config: cst.PartialParserConfig


class Planner:
    """Plans one module's guards (`plan`); state lives for that one call."""

    def __init__(self, module: cst.Module, layout: Layout, positions, parents, *, templates: Mapping[str, str],
                 fallback: str, style: str, device_attribute: str, mirrors: Sequence[str],
                 flag: str = DEFAULT_FLAG) -> None:
        self._module = module
        self._lines, self._limit = layout.lines, layout.limit
        self._nl, self._unit, self._block_indent, self._config = layout.nl, layout.unit, layout.block_indent, \
            layout.config
        self._positions, self._parents = positions, parents
        self.templates, self.fallback, self.style = templates, fallback, style
        self.device_attribute, self.mirrors, self.flag = device_attribute, tuple(mirrors), flag
        self.guarded: list[GuardedRead] = []
        self.manual: list[tuple[int, str]] = []
        self.imports: list[tuple[str, str]] = []
        self._inline: dict[int, cst.BaseExpression] = {}
        self._nodes: dict[int, cst.CSTNode] = {}
        self._before: dict[int, list[cst.BaseStatement]] = {}
        self._replace: dict[int, list[cst.BaseStatement]] = {}
        self._touched: set[int] = set()
        self._hoisted: dict[tuple[int, str], tuple] = {}  # (loop, read) -> (name, statement bound before)
        self._hoisted_for: dict[int, tuple] = {}         # read node -> (name, statement bound before)
        self._in_loop: set[int] = set()                  # reads whose fallback runs every turn
        self._names_taken: dict[int, set[str]] = {}      # function -> the names bound in it
        self._targets: dict[int, Targets] = {}           # function -> what it binds and calls
        self._locals: dict[int, set[str]] = {}           # function -> the names local to it
        self._declarations: Optional[Declarations] = None  # the module's, when a hoist asks

    def plan(self, sites: Sequence[ReadToGuard]) -> Plan:
        self._plan(sites)
        return Plan(MappingProxyType(dict(self._inline)),
                    MappingProxyType({k: tuple(v) for k, v in self._before.items()}),
                    MappingProxyType({k: tuple(v) for k, v in self._replace.items()}), frozenset(self._touched),
                    MappingProxyType(dict(self._nodes)), tuple(self.guarded), tuple(self.manual),
                    tuple(dict.fromkeys(self.imports)))

    @property
    def parents(self):
        """The parents found (all of the module's, when the lines' own did not hold)."""
        return self._parents

    def _find_sites(self, sites: Sequence[ReadToGuard]) -> Optional[list]:
        """(site, node or None) for each site; None when a node found does not hold
        the site's own text (the positions are then recomputed on the whole module)."""
        by_span = {}
        for node, rng in self._positions.items():
            if isinstance(node, (cst.Name, cst.Attribute)):
                by_span[(rng.start.line, rng.start.column, rng.end.line, rng.end.column)] = node
        found = []
        for site in sorted(sites, key=lambda s: (s.access.line, s.access.col)):
            a = site.access
            start = char_column(self._lines, a.line, a.col)
            node = by_span.get((a.line, start, a.end_line, char_column(self._lines, a.end_line, a.end_col)))
            if node is not None:
                text = split_lines(self._module.code_for_node(node))[0]
                if not self._lines[a.line - 1].startswith(text, start):
                    return None
            found.append((site, node))
        return found

    def _plan(self, sites: Sequence[ReadToGuard]) -> None:
        """Group the sites by statement and plan each group."""
        found = self._find_sites(sites)
        if found is None:
            lines = {s.access.line for s in sites} | {s.access.end_line for s in sites}
            self._positions, self._parents = locate_whole(self._module, lines)
            found = self._find_sites(sites) or [(site, None) for site in sites]
        groups: dict[int, _Group] = {}
        for site, node in found:
            a = site.access
            if node is None:
                self.manual.append((a.line, "the read could not be located in the syntax tree; guard it by hand"))
                continue
            group = self._group_of(node, groups)
            if group is None:
                self.manual.append((a.line, "the read is not inside a statement"))
                continue
            group.sites.append(LocatedRead(site, node, self._is_conditional(node, group)))
        for group in sorted(groups.values(), key=lambda g: self._positions[g.statement].start.line):
            self._plan_group(group)

    def _group_of(self, node: cst.CSTNode, groups: dict[int, _Group]) -> Optional[_Group]:
        child, parent = node, self._parents.get(node)
        while parent is not None:
            if isinstance(child, cst.BaseSmallStatement):
                group = groups.get(id(parent))
                if group is None:
                    group = groups[id(parent)] = _Group(parent, child)
                    self._judge_line(group)
                return group
            if isinstance(parent, cst.MatchCase):
                group = groups.setdefault(id(parent), _Group(parent, None))
                group.can_wrap = group.can_insert_before = False
                group.why_not = "a `case` guard"
                return group
            if isinstance(parent, cst.BaseCompoundStatement):
                group = groups.get(id(parent))
                if group is None:
                    group = groups[id(parent)] = _Group(parent, None, can_wrap=False)
                    holder = self._parents.get(parent)
                    if not isinstance(holder, (cst.IndentedBlock, cst.Module)):
                        group.can_insert_before, group.why_not = False, "an `elif` test"
                    elif isinstance(parent, cst.While):
                        group.can_insert_before, group.why_not = False, "a `while` test (evaluated every turn)"
                return group
            child, parent = parent, self._parents.get(parent)
        return None

    def _judge_line(self, group: _Group) -> None:
        line = group.statement
        holder = self._parents.get(line)
        if isinstance(line, cst.SimpleStatementSuite) or not isinstance(holder, (cst.IndentedBlock, cst.Module)):
            group.can_wrap = group.can_insert_before = False
            group.why_not = "a one-line block (`if c: ...` on one line)"
        elif len(line.body) != 1:
            group.can_wrap = False
            group.can_insert_before = line.body[0] is group.small
            group.why_not = "the statement shares its line with other code"

    def _is_conditional(self, node: cst.CSTNode, group: _Group) -> bool:
        """Is the read evaluated on some paths of its statement only (or inside a
        lambda/comprehension, where an outer guard would see other names)?"""
        stop = group.small if group.small is not None else group.statement
        child, parent = node, self._parents.get(node)
        eager = False  # came through a comprehension's first iterable: evaluated at once
        while parent is not None and parent is not stop:
            if isinstance(parent, cst.CompFor) and child is parent.iter and \
                    isinstance(self._parents.get(parent), _COMPREHENSIONS):
                eager = True
            elif eager and isinstance(parent, _COMPREHENSIONS):
                eager = False
            elif isinstance(parent, _CONDITIONAL):
                if not (isinstance(parent, (cst.BooleanOperation,)) and child is parent.left) and \
                        not (isinstance(parent, cst.IfExp) and child is parent.test):
                    return True
            if isinstance(parent, cst.NamedExpr):
                return True
            child, parent = parent, self._parents.get(parent)
        return False

    def _mode(self, site: ReadToGuard) -> str:
        attr = site.access.attr
        template = self.templates.get(attr)
        if template is not None and not template_syncs(template):
            return "template"       # computes on the device: fine anywhere
        if self.fallback == "raise" or site.no_sync is not None:
            return "raise"
        if template is not None:
            return "template"
        return "helper" if self.style == "helper" else "device"

    def _plan_group(self, group: _Group) -> None:
        code = self._module.code_for_node
        for site, node, _ in group.sites:
            if not is_pure(site.access.subject) or not is_pure(code(node)):
                self._leave(group, "the mirror's object is computed (a call); guard it by hand")
                return
            if site.access.object_rebound:
                self._leave(group, f"`{site.access.subject}` outlived the object it was read from "
                                   f"(`{site.access.alias_of}`: that name was rebound); guard it by hand")
                return
        if self._nested(node for _, node, _ in group.sites):
            # `self.lens[b.seq_lens_sum].seq_lens_cpu`: one read inside another's object
            self._leave(group, "one read is inside another's object; guard them by hand, innermost first")
            return
        if group.small is not None and self._is_maintenance(group):
            fed = self._fed_buffer(group)
            if fed is not None:
                self._leave(group, fed)
                return
            self._plan_maintenance(group)
            return
        modes = [PlannedRead(site, node, conditional,
                             "direct" if self._reads_no_value(site, node) else self._mode(site))
                 for site, node, conditional in group.sites]
        # a fallback from the object's device attribute, where the object's class has none
        lacking = {id(m.node) for m in modes if m.site.no_device and self._names_device(m.site, m.mode)}
        for site, node, _, _ in modes:
            if id(node) in lacking:
                self.manual.append((site.access.line, site.no_device))
        # nor from a device attribute the function changed before the read: a padded view
        # or an in-place update no longer holds the lengths the mirror held
        for site, node, _, mode in modes:
            changed = None if id(node) in lacking or not self._names_device(site, mode) \
                else self._device_changed(site, node)
            if changed is not None:
                lacking.add(id(node))
                self.manual.append((site.access.line, changed))
        modes = [m for m in modes if id(m.node) not in lacking]
        if not modes:
            return
        for site, node, _, mode in modes:
            if mode in ("device", "template") and self._syncs(site, mode):
                self._hoist(site, node, mode, group)
        raising = [m for m in modes if m.mode == "raise"]
        if raising:
            if not group.can_insert_before or any(conditional for _, _, conditional, _ in raising):
                why = group.why_not or "the read runs only on some paths of its expression"
                for site, _, _, _ in raising:
                    extra = f" ({site.no_sync}; no host-sync fallback written)" if site.no_sync else ""
                    self.manual.append((site.access.line, f"{why}: cannot put a None check before it{extra}"))
                modes = [m for m in modes if m.mode != "raise"]
            else:
                self._plan_raise(group, raising)
                modes = [m for m in modes if m.mode != "raise"]
        if not modes:
            return
        # the statement is written twice only when it is short: a call laid out over
        # several lines is not duplicated to vary one argument; its read is guarded in place
        span = self._positions[group.statement]
        blockable = (group.can_wrap and group.small is not None and not raising
                     and span.end.line - span.start.line < MAX_DUPLICATED_LINES
                     and all(m.mode in ("device", "template", "direct") and not m.conditional for m in modes))
        if blockable:
            self._plan_block(group, modes)
        else:
            self._plan_inline(group, modes)

    # ---- a host sync computed once, before the loop that needs it ---------------------
    def _hoist(self, site: ReadToGuard, node: cst.CSTNode, mode: str, group: _Group) -> None:
        """A read inside a loop (or comprehension) of its function gets its fallback
        from a name bound once before the outermost such loop, `name = <fallback> if
        <read> is None else None`: one host copy, not one per turn, and nothing at all
        while the mirror is there (the reads themselves are unchanged). Not when the
        loop rebinds the read's object, stores into it, or updates its device lengths in
        place: the copy taken before would go stale."""
        subject = self._module.code_for_node(node)
        obj = subject.rsplit(".", 1)[0]
        loop, before = None, None
        child, parent = node, self._parents.get(node)
        while parent is not None and not isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            if isinstance(parent, (cst.For, cst.While)) and child is not getattr(parent, "iter", None):
                loop, before = parent, parent
            elif isinstance(parent, _COMPREHENSIONS):
                loop, before = parent, None
            child, parent = parent, self._parents.get(parent)
        if loop is None:
            return
        self._in_loop.add(id(node))  # until the fallback is bound before the loop
        if before is None:  # the outermost loop is a comprehension: bind before its statement
            if not group.can_insert_before:
                return
            before = group.statement
        elif not isinstance(self._parents.get(before), (cst.IndentedBlock, cst.Module)):
            return  # `if c: for ...` on one line: nowhere to put a statement
        if not self._loop_keeps(loop, obj, site.access.attr):
            return
        key = (id(before), subject)
        if key not in self._hoisted:
            reused = self._earlier_binding(before, subject, obj, site.access.attr)
            if reused is not None:
                self._hoisted[key] = reused
        if key not in self._hoisted:
            name = self._free_name(node, f"{site.access.attr}_fallback")
            fallback = self._fallback(site, node, mode)
            indent = self._positions[before].start.column
            flat = f"{name} = {fallback} if {subject} is None else None"
            text = flat if indent + len(flat) <= self._limit else \
                f"{name} = ({self._nl}{self._unit}{fallback} if {subject} is None else None{self._nl})"
            self._before.setdefault(id(before), []).append(self._statement(text))
            self._touch(before)
            self._hoisted[key] = (name, before)
        self._hoisted_for[id(node)] = self._hoisted[key]
        self._in_loop.discard(id(node))

    def _earlier_binding(self, before: cst.CSTNode, subject: str, obj: str, attr: str) -> Optional[tuple]:
        """(name, statement it is bound before): the name bound for `subject` before an
        earlier statement of the same block, when nothing from there to `before` could
        make it stale: one host copy per function and read, not one per loop."""
        body = list(getattr(self._parents.get(before), "body", ()))
        if before not in body:
            return None
        for (_, bound), (name, statement) in self._hoisted.items():
            if bound == subject and statement in body and body.index(statement) < body.index(before) and \
                    all(self._loop_keeps(s, obj, attr) for s in body[body.index(statement):body.index(before)]):
                return name, statement
        return None

    def _loop_keeps(self, loop: cst.CSTNode, obj: str, attr: str) -> bool:
        """Whether nothing `loop` runs can make a copy taken from `obj` before it stale:
        nothing in it rebinds `obj` or a name or part it is made of (`batches[i]`'s
        `i`, `self.batches[self.idx]`'s `self.idx`), stores into it, deletes it, or
        updates `obj.<device>` / `obj.<attr>` in place; no call in it can store a new
        object into an attribute or index `obj` goes through (a method of its root);
        and no code elsewhere can rebind its names while the loop runs (a closure
        rebinding one through `nonlocal`, a function through `global`, `exec`)."""
        code = self._module.code_for_node
        watched = (f"{obj}.{self.device_attribute}", f"{obj}.{attr}")
        parts, names = _parts_of(obj)

        def related(target: cst.CSTNode) -> bool:
            text = _normalized(code(target).strip())
            return text in parts or text.startswith((obj + ".", obj + "[")) or \
                any(part.startswith((text + ".", text + "[")) for part in parts)

        finder = Targets()
        loop.visit(finder)
        if finder.binds_any_name or any(related(t) for t in finder.targets):
            return False
        if any(code(call.func.value).startswith(watched) and is_in_place(call.func.attr.value)
               for call in finder.calls):
            return False
        if parts != names and any(self._mentions(call, names) for call in finder.every_call):
            return False  # `self.advance()` may store a new batch into `self.batch`
        return not self._rebound_elsewhere(loop, names)

    def _mentions(self, call: cst.Call, names: set[str]) -> bool:
        """Whether the call's function or arguments use one of `names`."""
        finder = _NamesUsed()
        call.visit(finder)
        return not names.isdisjoint(finder.names)

    def _rebound_elsewhere(self, loop: cst.CSTNode, names: set[str]) -> bool:
        """Whether code outside `loop` that it may call can rebind one of `names` in the
        loop's scope: a `nonlocal` declaration of it anywhere in the module (a closure),
        a frame's `f_locals`, or, for a name the loop reads from its module (declared
        `global` where it runs, or not local there), a `global` declaration of it in
        any other function of the module or code that rebinds a module's names
        (`exec`, `globals()`, `setattr(sys.modules[...], ...)`). Any such function
        counts, called from the loop or not: it can be called through a callback."""
        if self._declarations is None:
            self._declarations = Declarations()
            self._module.visit(self._declarations)
        found = self._declarations
        if found.rebinds_frame_locals or not names.isdisjoint(found.nonlocal_names):
            return True
        function = self._function_of(loop)
        if function is None:
            global_here = names
        else:
            global_here = names & found.globals_of.get(id(function), set()) | names - self._locals_of(function)
        if not global_here:
            return False
        others = (declared for key, declared in found.globals_of.items() if function is None or key != id(function))
        return found.rebinds_module_names or any(not global_here.isdisjoint(declared) for declared in others)

    def _locals_of(self, function: cst.FunctionDef) -> set[str]:
        if id(function) not in self._locals:
            self._locals[id(function)] = local_names(function)
        return self._locals[id(function)]

    def _free_name(self, node: cst.CSTNode, wanted: str) -> str:
        """`wanted`, or `wanted_2`, ..., whichever its function (or module) does not use."""
        holder = self._function_of(node) or self._module
        text = self._module.code_for_node(holder) if holder is not self._module else self._module.code
        taken = self._names_taken.setdefault(id(holder), set())  # bound before another loop here
        used = set(re.findall(r"[A-Za-z_]\w*", text)) | taken
        name, n = wanted, 1
        while name in used:
            n += 1
            name = f"{wanted}_{n}"
        taken.add(name)
        return name

    def _function_of(self, node: cst.CSTNode) -> Optional[cst.FunctionDef]:
        holder = self._parents.get(node)
        while holder is not None and not isinstance(holder, (cst.FunctionDef, cst.Module)):
            holder = self._parents.get(holder)
        return holder if isinstance(holder, cst.FunctionDef) else None

    def _targets_of(self, function: cst.FunctionDef) -> Targets:
        """What `function` binds, assigns and calls, walked once per transform."""
        if id(function) not in self._targets:
            self._targets[id(function)] = finder = Targets()
            function.visit(finder)
        return self._targets[id(function)]

    def _plain_alias(self, site: ReadToGuard, node: cst.CSTNode) -> bool:
        """Whether the alias read is of a name bound once in its function, to the
        mirror itself (`seq_lens_cpu = self.seq_lens_cpu`), not to a slice of it."""
        function = self._function_of(node)
        if function is None:
            return False
        name = self._module.code_for_node(node)
        finder = self._targets_of(function)
        bound = [t for t in finder.targets if self._module.code_for_node(t).strip() == name]
        return len(bound) == 1 and any(
            isinstance(assign, cst.Assign) and len(assign.targets) == 1 and assign.targets[0].target is bound[0]
            and self._module.code_for_node(assign.value).strip() == site.access.alias_of
            for assign in finder.assigns)

    def _device_changed(self, site: ReadToGuard, node: cst.CSTNode) -> Optional[str]:
        """Why the object's device lengths may not be what its mirror held at this read:
        its function assigns `obj.<device>` (`forward_batch.seq_lens = buffers.seq_lens[:bs]`,
        a padded view), stores into it or updates it in place, above the read or in a
        loop around it. None when it does not."""
        function = self._function_of(node)
        if function is None:
            return None
        code = self._module.code_for_node
        source = site.access.alias_of or code(node)
        device = f"{source.rsplit('.', 1)[0]}.{self.device_attribute}"
        at = self._positions[node].start
        loops = [self._positions[p] for p in self._ancestors(node, function) if isinstance(p, (cst.For, cst.While))]
        finder = self._targets_of(function)
        changes = [t for t in finder.targets if code(t).strip() == device or code(t).strip().startswith(device + "[")]
        changes += [call for call in finder.calls
                    if code(call.func.value).strip() == device and is_in_place(call.func.attr.value)]
        for change in changes:
            span = self._positions.get(change)
            if span is None:
                continue
            if (span.start.line, span.start.column) < (at.line, at.column) or any(
                    loop.start.line <= span.start.line <= loop.end.line for loop in loops):
                return (f"`{device}` is changed at line {span.start.line}, before this read: it may no "
                        f"longer hold the lengths the mirror held (a padded view, an update in place), "
                        f"so it is no fallback; guard this read by hand")
        return None

    def _ancestors(self, node: cst.CSTNode, stop: cst.CSTNode):
        parent = self._parents.get(node)
        while parent is not None and parent is not stop:
            yield parent
            parent = self._parents.get(parent)

    def _reads_no_value(self, site: ReadToGuard, node: cst.CSTNode) -> bool:
        """Whether the read needs the host copy's shape only (`.shape`, `.size()`,
        `.numel()`, `.dim()`, `.ndim`, `len()`), or is copied into a device buffer
        (`buffers.seq_lens[:n].copy_(fb.seq_lens_cpu[:n])`): the device tensor serves
        as it is, with no host sync, opted-out backend or not."""
        if site.access.attr.endswith("_sum"):
            return False
        if site.access.alias_of is not None and not self._plain_alias(site, node):
            return False  # `lens = lens[idx]`: the alias is no longer the whole mirror
        parent = self._parents.get(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            if parent.attr.value in ("shape", "ndim"):
                return True
            call = self._parents.get(parent)
            return parent.attr.value in ("size", "numel", "dim") and isinstance(call, cst.Call) and call.func is parent
        if isinstance(parent, cst.Arg):
            call = self._parents.get(parent)
            return isinstance(call, cst.Call) and len(call.args) == 1 and call.args[0] is parent and \
                isinstance(call.func, cst.Name) and call.func.value == "len"
        # a slice of the read, copied into a tensor named for the device attribute
        source = node
        while isinstance(parent, cst.Subscript) and parent.value is source:
            source, parent = parent, self._parents.get(parent)
        if not isinstance(parent, cst.Arg) or parent.keyword is not None:
            return False
        call = self._parents.get(parent)
        if not (isinstance(call, cst.Call) and call.args and call.args[0] is parent
                and isinstance(call.func, cst.Attribute) and call.func.attr.value == "copy_"):
            return False
        target = call.func.value
        while isinstance(target, cst.Subscript):
            target = target.value
        return isinstance(target, cst.Attribute) and target.attr.value == self.device_attribute

    def _names_device(self, site: ReadToGuard, mode: str) -> bool:
        """Whether this site's fallback reads the object's device attribute."""
        if mode in ("device", "helper", "direct"):
            return True
        template = self.templates.get(site.access.attr, "") if mode == "template" else ""
        return "{device}" in template or f".{self.device_attribute}" in template

    def _nested(self, nodes) -> bool:
        """Whether one of these read nodes lies inside another (by the tree, not the text:
        `b.seq_lens_cpu` is no part of `fb.seq_lens_cpu`)."""
        nodes = list(nodes)
        ids = {id(n) for n in nodes}
        for node in nodes:
            parent = self._parents.get(node)
            while parent is not None:
                if id(parent) in ids:
                    return True
                parent = self._parents.get(parent)
        return False

    def _leave(self, group: _Group, why: str) -> None:
        for site, _, _ in group.sites:
            self.manual.append((site.access.line, why))

    # ---- site kinds --------------------------------------------------------------
    def _is_mirror_target(self, node: cst.CSTNode, subjects: set[str]) -> bool:
        if isinstance(node, cst.Subscript):
            node = node.value
        if isinstance(node, cst.Attribute) and node.attr.value in self.mirrors:
            return True
        return isinstance(node, cst.Name) and node.value in subjects

    def _is_maintenance(self, group: _Group) -> bool:
        small = group.small
        subjects = {self._module.code_for_node(node) for _, node, _ in group.sites}
        subjects |= {name for site, _, _ in group.sites for name, _ in site.aliases}
        if isinstance(small, cst.AugAssign):
            return self._is_mirror_target(small.target, subjects)
        if isinstance(small, (cst.Assign, cst.AnnAssign)):
            if isinstance(small, cst.AnnAssign) and small.value is None:
                return False
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
            return all(self._is_mirror_target(t, set()) or
                       (isinstance(t, cst.Subscript) and self._is_mirror_target(t, subjects)) for t in targets)
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            func = small.value.func
            return (isinstance(func, cst.Attribute) and is_in_place(func.attr.value)
                    and self._is_mirror_target(func.value, subjects))
        return False

    def _fed_buffer(self, group: _Group) -> Optional[str]:
        """Why a maintenance statement that writes into existing storage (`.copy_()`,
        an in-place method, a subscript store) from another object's mirror cannot be
        guarded, or None. Skipping it when that mirror is None would leave the storage
        (a CUDA-graph runner's persistent host buffer, say) holding the last step's
        lengths, replayed as if current; filling it from the device tensor instead is a
        host sync, the very one the mirror's absence removed."""
        small, code = group.small, self._module.code_for_node
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            written = small.value.func.value
        elif isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
            written = next((t for t in targets if isinstance(t, cst.Subscript)), None)
        else:
            written = None
        if not isinstance(written, cst.Subscript) and not (
                isinstance(small, cst.Expr) and isinstance(written, (cst.Attribute, cst.Name))):
            return None  # a whole attribute is replaced: the `else: ... = None` keeps it honest
        while isinstance(written, cst.Subscript):
            written = written.value
        if isinstance(written, cst.Attribute):
            storage = code(written)
        elif isinstance(written, cst.Name):  # an alias of the storage: `buf = self.seq_lens_cpu`
            # (lint no longer reports a buffer no store makes None: then the name is all there is)
            storage = next((site.access.alias_of for site, node, _ in group.sites
                            if site.access.alias_of and code(node) == written.value), None) or next(
                (key for site, _, _ in group.sites for name, key in site.aliases if name == written.value),
                written.value)
        else:
            return None
        holder = storage.rsplit(".", 1)[0]
        for site, node, _ in group.sites:
            expression = site.access.alias_of or code(node)
            source_holder = expression.rsplit(".", 1)[0] if "." in expression else expression
            if expression != storage and source_holder != holder and code(node) != code(written):
                return (f"fills the storage `{storage}` from `{expression}`: skipped when that is None, the storage "
                        f"would keep stale lengths (a persistent buffer is replayed as if current), and refilling "
                        f"it from `{self.device_attribute}` is a host sync; fill it on the device or keep the "
                        f"mirror for this code, by hand")
        return None

    def _subjects(self, entries) -> list[str]:
        return list(dict.fromkeys(self._module.code_for_node(e.node) for e in entries))

    def _plan_maintenance(self, group: _Group) -> None:
        if not group.can_wrap:
            self._leave(group, group.why_not)
            return
        line = group.statement
        subjects = self._subjects(group.sites)
        body = [line.with_changes(leading_lines=())]
        target = self._stored_mirror(group.small)
        orelse = None
        holder = target.rsplit(".", 1)[0] if target is not None else ""
        if target is not None and set(subjects) != {target} and not any(
                holder == s or holder.startswith((s + ".", s + "[")) for s in subjects):
            # The stored value mixes several mirrors: if any is absent, so is the result
            # (unless the target hangs on a guarded mirror: `None` has no attribute to set).
            orelse = cst.Else(body=self._block([self._statement(f"{target} = None")]))
        guard = cst.If(test=self._condition(subjects, "is not None", group), body=self._block(body),
                       orelse=orelse, leading_lines=line.leading_lines)
        self._replace_with(group, [guard])
        for site, _, _ in group.sites:
            self._record(site, MAINTENANCE, host_sync=False, fallback="")

    def _stored_mirror(self, small: cst.BaseSmallStatement) -> Optional[str]:
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
        elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
            targets = [small.target]
        else:
            return None
        names = [self._module.code_for_node(t) for t in targets
                 if isinstance(t, cst.Attribute) and t.attr.value in self.mirrors]
        return names[0] if len(names) == 1 and len(targets) == 1 else None

    def _fallback(self, site: ReadToGuard, node: cst.CSTNode, mode: str) -> str:
        a = site.access
        source = a.alias_of if a.alias_of is not None else self._module.code_for_node(node)
        obj = source.rsplit(".", 1)[0] if "." in source else None
        if obj is None:
            raise LookupError("no object to take the device lengths from")
        if mode == "direct":
            return f"{obj}.{self.device_attribute}"
        if id(node) in self._hoisted_for:
            return self._hoisted_for[id(node)][0]  # computed once before the loop
        if mode == "helper":
            helper = f"{HELPER_PREFIX}_sum" if a.attr.endswith("_sum") else HELPER_PREFIX
            self.imports.append((HELPER_MODULE, helper))
            return f"{helper}({self._module.code_for_node(node)}, {obj}.{self.device_attribute})"
        template = self.templates.get(a.attr)
        if template is None:
            # `.item()`, not `int(...)`: the same number, and a sync lint's SG004 sees, so
            # the fallback is reported wherever the same pull written by hand would be.
            template = "{obj}.{device}.sum().item()" if a.attr.endswith("_sum") else "{obj}.{device}.cpu()"
        return substituted(template.format(obj=obj, device=self.device_attribute))

    def _plan_block(self, group: _Group, modes) -> None:
        line = group.statement
        fallbacks = {}
        for site, node, _, mode in modes:
            try:
                fallbacks[id(node)] = (node, self._expression(self._fallback(site, node, mode)))
            except LookupError as e:
                self._plan_inline(group, modes, why=str(e))
                return
        other = line.with_changes(leading_lines=(), trailing_whitespace=cst.TrailingWhitespace(
            newline=line.trailing_whitespace.newline))
        # one pass for every read: `deep_replace` one node at a time rebuilds the others'
        # parents, and a later read would no longer be found by identity
        other = other.visit(ReplaceNodes({key: replacement for key, (_, replacement) in fallbacks.items()}))
        subjects = self._subjects(modes)
        guard = cst.If(test=self._condition(subjects, "is not None", group),
                       body=self._block([line.with_changes(leading_lines=())]),
                       orelse=cst.Else(body=self._block([other])), leading_lines=line.leading_lines)
        if self._too_long(guard, group):
            self._plan_inline(group, modes)  # the duplicated statement would not fit; guard the read itself
            return
        self._replace_with(group, [guard])
        for site, node, _, mode in modes:
            self._record(site, CONSUMER, host_sync=self._syncs(site, mode), fallback=mode, node=node)

    def _syncs(self, site: ReadToGuard, mode: str) -> bool:
        if mode == "template":
            return template_syncs(self.templates[site.access.attr])
        return mode in ("device", "helper")  # "direct" uses the device tensor as it is

    def _plan_inline(self, group: _Group, modes, why: str = "") -> None:
        for site, node, _, mode in modes:
            try:
                fallback = self._fallback(site, node, mode)
            except LookupError as e:
                self.manual.append((site.access.line, why or str(e)))
                continue
            subject = self._module.code_for_node(node)
            text = fallback if mode == "helper" else f"({subject} if {subject} is not None else {fallback})"
            line = self._lines[site.access.line - 1]
            column = len(line) - len(line.lstrip())
            u, nl = self._unit, self._nl
            if len(line) + len(text) - len(subject) > self._limit and mode != "helper":
                inner = f"{subject} if {subject} is not None else {fallback}"
                if column + len(u) + len(inner) <= self._limit:
                    text = f"({nl}{u}{inner}{nl})"
                else:
                    text = f"({nl}{u}{subject}{nl}{u}if {subject} is not None{nl}{u}else {fallback}{nl})"
            elif len(line) + len(text) - len(subject) > self._limit and text.startswith(HELPER_PREFIX):
                # `host_seq_lens(fb.seq_lens_cpu, fb.seq_lens)`: its arguments on their own lines
                name, _, arguments = text[:-1].partition("(")
                device = arguments[len(subject) + 2:]
                if column + len(u) + len(arguments) <= self._limit:
                    text = f"{name}({nl}{u}{arguments}{nl})"
                else:
                    text = f"{name}({nl}{u}{subject},{nl}{u}{device},{nl})"
            self._inline[id(node)] = self._expression(text)
            self._nodes[id(node)] = node
            self._touch(group.statement)
            self._record(site, CONSUMER, host_sync=self._syncs(site, mode), fallback=mode, node=node, inline=True)

    def _plan_raise(self, group: _Group, raising) -> None:
        statements = []
        for subject, entry in {self._module.code_for_node(e.node): e for e in raising}.items():
            site = entry.site
            if site.no_sync is not None:
                message = (f"{subject} is None: {site.no_sync}, and a host-sync fallback here would bring "
                           f"back the sync the opt-out avoids; compute this from `{self.device_attribute}` on the "
                           f"device, or declare {self.flag} = True")
            else:
                message = (f"{subject} is None: no active attention backend declares {self.flag} = True; "
                           f"set it on the backend that needs the host mirror")
            raise_text = self._raise_text(message, group, depth=1)
            statements.append(cst.If(test=self._condition([subject], "is None", group),
                                     body=self._block([self._statement(raise_text)])))
        for site, _, _, _ in raising:
            self._record(site, CONSUMER, host_sync=False, fallback="raise")
        key = id(group.statement)
        self._before.setdefault(key, []).extend(statements)
        self._touch(group.statement)

    # ---- building nodes ----------------------------------------------------------
    def _block(self, body: list) -> cst.IndentedBlock:
        return cst.IndentedBlock(indent=self._block_indent, body=body)

    def _expression(self, text: str) -> cst.BaseExpression:
        return cst.parse_expression(text, config=self._config)

    def _statement(self, text: str) -> cst.BaseStatement:
        return cst.parse_statement(text + self._nl, config=self._config)

    def _indent_of(self, group: _Group) -> int:
        return self._positions[group.statement].start.column

    def _condition(self, subjects: list[str], test: str, group: _Group) -> cst.BaseExpression:
        parts = [f"{s} {test}" for s in subjects]
        flat = " and ".join(parts)
        if self._indent_of(group) + len("if :") + len(flat) <= self._limit or len(parts) == 1:
            return self._expression(flat)
        joined = f"{self._nl}{self._unit}and ".join(parts)
        return self._expression(f"({self._nl}{self._unit}{joined}{self._nl})")

    def _raise_text(self, message: str, group: _Group, depth: int) -> str:
        indent = self._indent_of(group) + depth * len(self._unit)
        flat = f"raise RuntimeError({quote(message)})"
        if indent + len(flat) <= self._limit:
            return flat
        width = max(20, self._limit - indent - len(self._unit) - 3)
        chunks, current = [], ""
        for word in message.split(" "):
            candidate = f"{current} {word}" if current else word
            if current and len(quote(candidate + " ")) > width:
                chunks.append(current + " ")
                current = word
            else:
                current = candidate
        chunks.append(current)
        body = "".join(f"{self._unit}{quote(chunk)}{self._nl}" for chunk in chunks)
        return f"raise RuntimeError({self._nl}{body})"

    def _too_long(self, node: cst.CSTNode, group: _Group) -> bool:
        base = self._indent_of(group)
        return any(base + len(text) > self._limit
                   for text in split_lines(self._module.code_for_node(node)) if text.strip())

    def _replace_with(self, group: _Group, statements: list[cst.BaseStatement]) -> None:
        self._replace[id(group.statement)] = statements
        self._touch(group.statement)

    def _touch(self, statement: cst.CSTNode) -> None:
        self._touched.add(id(statement))
        self._nodes[id(statement)] = statement

    def _record(self, site: ReadToGuard, kind: str, host_sync: bool, fallback: str,
                node: Optional[cst.CSTNode] = None, inline: bool = False) -> None:
        a = site.access
        name, bound_before = self._hoisted_for.get(id(node), (None, None))
        self.guarded.append(GuardedRead(
            a.line, a.col + 1, kind, a.subject, host_sync, fallback,
            reason=site.no_sync if fallback == "raise" else None, hoisted_as=name,
            hoisted_at=None if bound_before is None else self._positions[bound_before].start.line,
            inline=inline, in_loop=host_sync and id(node) in self._in_loop))


def _normalized(expression: str) -> str:
    """`expression` as `ast.unparse` writes it (spacing and parentheses made uniform)."""
    try:
        return ast.unparse(ast.parse(expression, mode="eval"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return expression


def _parts_of(obj: str) -> tuple[set[str], set[str]]:
    """(every name, attribute and subscript `obj` is made of, itself included; its
    names): what rebinding which changes what `obj` is."""
    try:
        tree = ast.parse(obj, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {obj}, {obj}
    nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript))]
    return {ast.unparse(n) for n in nodes}, {n.id for n in nodes if isinstance(n, ast.Name)}


class _NamesUsed(cst.CSTVisitor):
    """The names an expression uses (not the attribute names after a dot)."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False
