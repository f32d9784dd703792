"""Layer 2 of the contract: where a function is called, with each call's path facts.

A pure index over the project: `CallSites.sites(function, parameter)` is every resolved
call of a function, each with what it binds to the parameter that matters and the
facts on its path; None (and `unbounded(function)` says why) when the calls cannot all
be found. Nothing here decides whether a call is safe: the fixpoint (`fixpoint`) asks
the questions (`lint.questions`) that do.

Where callers can be: a module-level function or class is named only by its own module
and by files that import it or its module (the byte scan keeps every import word of
every file); a method also by its class hierarchy, and an override by the importers of
the bases that define the method (where only calls on an object of a known type
count). Those files are searched for the name and the functions that mention it are
walked, with the same walk lint uses. Calls made in test code (`test-paths`) are left
out: a harness builds its own batches. A function used other than by calls (passed as
a value, stored), a special method, a decorated one, a generator or a coroutine has no
bounded set of calls."""

from __future__ import annotations

import ast
import bisect
import dataclasses
import io
import re
import tokenize
import unicodedata
from typing import TYPE_CHECKING, Iterable, Optional

from seqguard.lint.analysis.names import bound_names, decorated_with, dotted
from seqguard.lint.analysis.skeleton import tree_without_bodies
from seqguard.lint.analysis.source import line_break_offsets, split_lines
from seqguard.lint.analysis.walk import CallRecord, call_sites, relevant_lines
from seqguard.lint.model import Callee, CalleeHead
from seqguard.lint.contract.types import UNKNOWN
from seqguard.lint.contract.word_files import WordFiles

if TYPE_CHECKING:
    from seqguard.lint.contract.point import EngineAtPoint

# A name mentioned by more files than this is too common to follow to its callers.
MAX_CALLER_FILES = 24
# Attribute words searched for one by one (on SGLang one search costs about a
# three-hundredth of their map, which a judge would build for itself)
_ATTRIBUTE_WORDS_SEARCHED = 300


_FROM_FUNCTOOLS_PARTIAL = re.compile(r"^\s*from\s+functools\s+import\s+[^\n]*\bpartial\b(?!\s+as\b)", re.M)


@dataclasses.dataclass(frozen=True)
class Function:
    relpath: str
    qualname: str          # `f`, or `Class.method` for a method of a module-level class

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    @property
    def owner(self) -> Optional[str]:
        return self.qualname.rsplit(".", 1)[0] if "." in self.qualname else None


@dataclasses.dataclass(frozen=True)
class CallSite:
    relpath: str
    record: CallRecord
    argument: Optional[str]       # what the call binds to the parameter that matters
    argument_types: tuple[str, ...]


class CallSites:
    """The calls of the project's functions, found on demand and kept for the run."""

    def __init__(self, point: "EngineAtPoint") -> None:
        """`point`: what holds at each call site (its path's conditions and modes, the
        types there, capture code, backends' flags, copies)."""
        self.point = point
        self.index = point.index
        self._sites: dict[Function, Optional[list[CallSite]]] = {}
        self._sources: dict[str, Optional[str]] = {}
        self._modules: dict[str, Optional[ast.Module]] = {}
        self._split: dict[str, list[str]] = {}
        self._words: dict[str, WordOffsets] = {}
        self._table_names: dict[str, dict[str, set[str]]] = {}   # see `_module_tables`
        self._tables_asked: dict[str, int] = {}
        self._creations: dict[str, Optional[list[tuple[str, CallRecord]]]] = {}
        self._imports = WordFiles(self.index.imported_words)
        # a method runs wherever an object of its class is reached, and a file can be
        # handed one (a factory's return, a parameter) without importing anything of it
        self._attributes = WordFiles(self.index.attribute_words, searched=_ATTRIBUTE_WORDS_SEARCHED)
        self._relevance: dict[tuple, tuple[list[int], list[int], list[int]]] = {}
        self._newlines: dict[str, list[int]] = {}
        self._gave_up: dict[Function, str] = {}   # why a function's calls cannot be bounded
        self._tests: dict[str, bool] = {}         # relpath -> is it test code (`test-paths`)
        self._bases: dict[str, list[tuple[str, str, str]]] = {}  # class id -> its project bases
        self._bindings: dict[Function, dict[str, int]] = {}  # how often each name is bound in a function
        self._delegating: dict[str, bool] = {}    # class id -> does it answer attributes it lacks
        self._walks: dict[tuple, tuple] = {}      # (file, function, names, last line) -> its calls, references

    # ---- one call -------------------------------------------------------------------
    def local_terms(self, site: CallSite) -> tuple[str, ...]:
        """What a local name passed at a call can hold, read from every assignment to it
        in the calling function (the walk that found the call walks only the lines that
        mention the callee, a mirror or a condition, so it saw none of them)."""
        argument = site.argument
        if argument is None or not argument.isidentifier():
            return ()
        caller = self.function_of(site)
        definition = self.definition(caller) if caller is not None else None
        if definition is None:
            return ()
        return self.point.types.local_terms(site.relpath, definition, caller.owner, argument)

    def closed_over(self, site: CallSite) -> Optional[Function]:
        """The function around the nested one making the call, when what the call
        passes is that function's parameter and nothing rebinds it."""
        argument = site.argument
        if argument is None or not argument.isidentifier():
            return None
        enclosing = self._enclosing_function(site)
        definition = self.definition(enclosing) if enclosing is not None else None
        if definition is None or argument not in self._parameters(enclosing) or \
                bound_names(definition, nested=True).get(argument, 0) != 1:
            return None
        return enclosing

    def _enclosing_function(self, site: CallSite) -> Optional[Function]:
        """The module-level function or method a nested function's scope is inside."""
        scope = site.record.scope
        known = self.index.function_names(site.relpath)
        while "." in scope:
            scope = scope.rsplit(".", 1)[0]
            if scope in known:
                return Function(site.relpath, scope)
        return None

    def path_at(self, site: CallSite) -> tuple[dict, tuple]:
        """(what the facts at the call imply is not None, the call's path facts with
        what they imply)."""
        record = site.record
        implied_known, implied = self.point.expand(record.path, site.relpath, record.class_qualname)
        return implied_known, (*record.path, *implied)

    def narrowed(self, site: CallSite, path: tuple, modes: Optional[frozenset[str]]) -> Optional[frozenset[str]]:
        """`modes` less those the call's path rules out (as they are without a mode model)."""
        if self.point.modes is None or modes is None:
            return modes
        return modes & self.point.possible_modes(path, site.relpath, site.record.class_qualname, site.record.scope)

    def caller_parameter(self, site: CallSite, caller: Function) -> Optional[str]:
        """The caller's parameter the call passes on as the read's object, if it is one
        and nothing in the caller binds that name again (`fb = spare; f(fb)` passes
        another object than the caller was given)."""
        argument = site.argument
        if argument is not None and "." not in argument and argument in self._parameters(caller):
            if self.unrebound(caller, argument):
                return argument
        return None

    def unrebound(self, function: Function, parameter: str) -> bool:
        """Whether `parameter` of `function` is bound once, as the parameter: nothing in
        the function (a nested function's names included: conservative) binds it again,
        so it holds what the caller passed wherever it is read."""
        counts = self._bindings.get(function)
        if counts is None:
            definition = self.definition(function)
            counts = self._bindings[function] = bound_names(definition, nested=True) if definition else {}
        return counts.get(parameter, 0) == 1

    def argument_types(self, site: CallSite) -> Optional[frozenset[str]]:
        """The types of what the call passes as the parameter that matters (from the
        call's own facts, else from the assignments to a local it passes); None when
        nothing says."""
        terms = site.argument_types or self.local_terms(site)
        return self.point.types.resolve(site.relpath, terms) if terms else None

    def function_at(self, relpath: str, scope: str) -> Optional[Function]:
        """The function (module-level, or a method of a module-level class) that `scope`
        names, when its calls can be followed; None for module level or a nested one."""
        return Function(relpath, scope) if scope in self.index.function_names(relpath) else None

    def holder(self, relpath: str, scope: str, receiver: str) -> tuple[Optional[Function], Optional[str]]:
        """The function holding a read in `scope`, and the parameter the read's object
        `receiver` is, if it is one (`self` included) that nothing in the function binds
        again (`fb = other` before the read: not the object the caller passed)."""
        function = self.function_at(relpath, scope)
        definition = self.definition(function) if function is not None else None
        if definition is None:
            return None, None
        return function, receiver if receiver in self._parameters(function) and self.unrebound(function, receiver) \
            else None

    def creations(self, cls) -> Optional[list[tuple[str, CallRecord]]]:
        """Every place the project creates or hands out `cls` or a subclass (a call of
        it, or the class named as a value: `return NGRAMWorker`), with its path facts;
        None when one cannot be judged (named at module level, in a file that cannot be
        read) or the class is used all over the project (a batch type)."""
        if cls.id not in self._creations:
            self._creations[cls.id] = self._find_creations(cls)
        return self._creations[cls.id]

    def _find_creations(self, cls) -> Optional[list[tuple[str, CallRecord]]]:
        classes = [cls, *self.index.descendants(cls)]
        ids = {c.id for c in classes}
        names = {c.name for c in classes}
        words = names | {self.index.module_of(c.relpath).rsplit(".", 1)[-1] for c in classes}
        files = {c.relpath for c in classes}
        for found in words:
            files |= self.importers_of(found)
        files = set(self._engine_files(files, keep={c.relpath for c in classes}))
        if len(files) > 4 * MAX_CALLER_FILES:
            return None  # imported all over the project (a batch type): no feature's alone
        records = []
        mentioning = []
        for relpath in sorted(files):
            source = self._source(relpath)
            if source is None:
                return None
            if any(name in source for name in names):
                mentioning.append((relpath, source))
        if len(mentioning) > MAX_CALLER_FILES:
            return None  # a class used all over the project (a batch type) is no feature's
        for relpath, source in mentioning:
            here = names | self._aliases_in(relpath, source, names)  # `from m import Splitter as S`
            lines = sorted(self._line_numbers(relpath, source, self._word_offsets(relpath, source, here)))
            walked: set[str] = set()
            for line in lines:
                holding = self.index.functions_holding(relpath, line)
                if holding:
                    walked.update(holding)
                elif not self._harmless_module_line(relpath, source, line, here):
                    return None
            if len(walked) > 2 * MAX_CALLER_FILES:
                return None
            for qualname in walked:
                caller, owner = self.index.functions_of(relpath).get(qualname, (None, None))
                if caller is None:
                    return None
                try:
                    calls, references = call_sites(caller, owner, here, self.point.mirrors,
                                                   self.point.device, self.point.config.condition_words,
                                                   self._relevant(relpath, source, here), flag=self.point.flag)
                except RecursionError:
                    return None
                module = self.index.module_of(relpath)
                for record in (*calls, *references):
                    head = record.callee.head
                    if head is CalleeHead.VALUE:
                        name = record.name
                    elif head is CalleeHead.NAME:
                        name = record.callee.name
                    else:
                        continue  # `self.m()`, `super().m()`: a method, not the class
                    local = self._locally_imported(relpath, record.scope, name)
                    resolved = self.index.resolve_absolute(local) if local else self.index.resolve_name(module, name)
                    if resolved in ids or (
                        head is CalleeHead.VALUE and self.index.resolve_name(module, record.name) in ids
                    ):
                        records.append((relpath, record))
        return records or None

    def _module(self, relpath: str, source: str) -> Optional[ast.Module]:
        if relpath not in self._modules:
            # what is said here is of module and class level lines: the functions'
            # bodies need not be built
            tree = tree_without_bodies(source, [])
            try:
                self._modules[relpath] = tree or ast.parse(source)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._modules[relpath] = None
        return self._modules[relpath]

    # ---- finding the calls ----------------------------------------------------------
    def sites(self, function: Function, parameter: Optional[str]) -> Optional[list[CallSite]]:
        """Every resolved call of `function`, with what each binds to `parameter`; None
        when the function is used other than by calls, or its callers cannot be bounded."""
        if function not in self._sites:
            self._sites[function] = self._find(function)
        found = self._sites[function]
        if found is None:
            return None
        target = self.definition(function)
        if target is None:
            return None
        return [self._bind(site, target, parameter) for site in found]

    def definition(self, function: Function) -> Optional[ast.FunctionDef]:
        return self.index.functions_of(function.relpath).get(function.qualname, (None, None))[0]

    def _parameters(self, function: Function) -> set[str]:
        definition = self.definition(function)
        if definition is None:
            return set()
        args = definition.args
        return {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}

    def function_of(self, site: CallSite) -> Optional[Function]:
        scope = site.record.scope
        if scope not in self.index.function_names(site.relpath):
            return None  # module-level code, or a nested function: nobody calls it by name
        return Function(site.relpath, scope)

    def _find(self, function: Function) -> Optional[list[tuple[str, CallRecord, int]]]:
        definition = self.definition(function)
        if definition is None:
            return self._give_up(function, f"the definition of `{function.name}` cannot be read")
        hidden = self._called_unseen(function, definition)
        if hidden is not None:
            return self._give_up(function, hidden)
        names = {function.name}
        tables = self._tables(function)
        if tables is None:
            return self._give_up(function, f"`{function.name}` is put in a table that is used other than by calls")
        names |= tables
        files = self._candidate_files(function, names)
        if files is None:
            return self._give_up(function, f"`{function.name}` may be named in more files than are followed "
                                           f"({MAX_CALLER_FILES})")
        found: list[tuple[str, CallRecord, int]] = []
        point = self.point
        mentioning = []
        engine_only = not self._is_test(function.relpath)  # a test's own helper: its callers are tests
        searched: set[str] = set()
        batch = files
        # the files that may call it; then, as long as one imports it under another name,
        # the files importing that name (`from .m import f as read_lens` in a package's
        # `__init__` hands `read_lens` to its importers)
        while batch:
            searched |= set(batch)
            aliases: set[str] = set()
            for relpath in sorted(self._engine_files(batch) if engine_only else batch):
                source = self._source(relpath)
                if source is None:
                    return self._give_up(function, f"{relpath}, which may call `{function.name}`, cannot be read")
                # `from m import f as read_lens`: the file calls it by the other name too.
                # A method is never imported by its name (a module binding one to a name,
                # `warmup = _runner.warmup`, uses it as a value there: given up on for that)
                here = names | self._aliases_in(relpath, source, names) if function.owner is None else names
                # `def forward_extend(` defines a method of that name, it calls nothing:
                # the other backends' overrides do not make the name common
                offsets = [o for o in self._word_offsets(relpath, source, here) if not _after_def(source, o)]
                if offsets:
                    mentioning.append((relpath, source, offsets, here))
                    aliases |= here - names
            names = names | aliases
            batch = set().union(*(self.importers_of(a) for a in aliases)) - searched
        if len(mentioning) > MAX_CALLER_FILES:  # too common a name to follow
            return self._give_up(function, f"`{function.name}` is named in {len(mentioning)} files, more than the "
                                           f"{MAX_CALLER_FILES} followed")
        for relpath, source, offsets, here in mentioning:
            lines = sorted(self._line_numbers(relpath, source, offsets))
            walked: dict[str, int] = {}   # function -> the last line that mentions the name
            for line in lines:
                holding = self.index.functions_holding(relpath, line)
                if not holding:
                    if relpath == function.relpath and self._is_definition_or_table(source, line, function, tables):
                        continue
                    if self._harmless_module_line(relpath, source, line, here):
                        continue
                    # used at module level: not a call we can judge
                    return self._give_up(function, f"`{function.name}` is used at module level ({relpath}:{line})")
                for qualname in holding:
                    walked[qualname] = max(walked.get(qualname, 0), line)
            for qualname, last_line in walked.items():
                hit = self.index.functions_of(relpath).get(qualname, (None, None))
                caller, owner = hit
                if caller is None:
                    return self._give_up(function, f"`{qualname}` ({relpath}), which names `{function.name}`, "
                                                   f"cannot be read")
                # the overrides of one method share their name, and so their callers'
                # walks: each caller function is walked once per name set
                walk_key = (relpath, qualname, frozenset(here), last_line)
                walked_calls = self._walks.get(walk_key)
                if walked_calls is None:
                    try:
                        walked_calls = call_sites(caller, owner, here, point.mirrors, point.device,
                                                  point.config.condition_words,
                                                  self._relevant(relpath, source, here), last_line,
                                                  flag=point.flag)
                    except RecursionError:
                        return self._give_up(function, f"`{qualname}` ({relpath}) is nested too deeply to read")
                    self._walks[walk_key] = walked_calls
                calls, references = walked_calls
                for record in calls:
                    skip = self._resolves_to(relpath, record, function, tables)
                    if skip is None:
                        return self._give_up(function, f"the call `{record.callee}(...)` at {relpath}:{record.line} "
                                                       f"may be of `{function.name}` (what it calls cannot be told)")
                    if skip is not False:
                        found.append((relpath, record, skip))
                for reference in references:
                    if not (relpath == function.relpath and reference.line == definition.lineno):
                        if self._escape_matters(relpath, reference, function, tables | here):
                            return self._give_up(function, f"`{function.name}` is used other than by a call "
                                                           f"({relpath}:{reference.line}: passed or stored as a "
                                                           f"value)")
        return found

    def _called_unseen(self, function: Function, definition: ast.FunctionDef) -> Optional[str]:
        """Why `function` may run from calls no search of its name can find, or None: a
        special method (Python calls it for `obj(...)`, operators, `with`, ...), a
        decorator that may register or wrap it, a generator (its body runs when the
        iterator is advanced, not where it is called), a public method of a class whose
        base outside the project may call it (`torch.nn.Module.__call__` runs `forward`)."""
        name = function.name
        if _called_by_python(name):
            return f"`{name}` is a special method: Python calls it itself (a call, an operator, a protocol)"
        for decorator in definition.decorator_list:
            written = dotted(decorator.func if isinstance(decorator, ast.Call) else decorator)
            # a name the project binds to a function of its own (`from deco import on_draft
            # as cache`, a local `def override(fn)`) is that function, whatever it is called
            if written not in TRANSPARENT_DECORATORS or \
                    self.index.callable_named(function.relpath, None, Callee(CalleeHead.NAME, written.split(".")[0])) \
                    is not None:
                return (f"`{name}` is decorated with `@{written or ast.unparse(decorator)}`, which may register, "
                        f"wrap or replace it")
        if isinstance(definition, ast.AsyncFunctionDef):
            return f"`{name}` is a coroutine function: its body runs when it is awaited, not where it is called"
        lines = self._lines(function.relpath)
        text = lines[definition.lineno - 1:definition.end_lineno or definition.lineno]
        if any("yield" in line for line in text) and _yields(definition):
            return f"`{name}` is a generator: its body runs when the iterator is advanced, not where it is called"
        if function.owner is not None and not name.startswith("_"):
            # a base outside the project calls what it defines for subclasses to fill in
            # (`forward`), public by convention; a `_helper` is the class's own
            owner = self.index.class_of(f"{self.index.module_of(function.relpath)}.{function.owner}")
            if owner is not None:
                base = self._external_base(owner)
                if base is not None:
                    return f"`{function.owner}` derives from `{base}`, outside the project, which may call `{name}`"
        return None

    def _external_base(self, owner) -> Optional[str]:
        """A base, outside the project, of the class, of one deriving from it, or of their
        project bases, that may call their methods (not `object`, `ABC`, `Generic`, ...)."""
        for cls in (owner, *self.index.descendants(owner)):
            if "" in cls.facts.bases:
                return "a base written as an expression"   # `class Attn(layer_base()):`
            for base in cls.bases:
                if self.index.locate_class(base) is None and base.rsplit(".", 1)[-1] not in _INERT_BASES:
                    return base
            for base_id, relpath, qualname in self._project_bases(cls):
                parsed = self.index.class_of(base_id)
                if parsed is not None:
                    bases = parsed.bases
                else:   # read by the byte scan: its base words, the dotted ones split
                    bases = [b for b in self.index.scanned_bases(relpath, qualname)
                             if b.rsplit(".", 1)[-1][:1].isupper()]
                for base in bases:
                    if self.index.locate_class(base) is None and base.rsplit(".", 1)[-1] not in _INERT_BASES:
                        return base
        return None

    def _engine_files(self, files: Iterable[str], keep: Iterable[str] = ()) -> list[str]:
        """`files` less the test code among them (`test-paths`), but for those in
        `keep`: a harness's calls and the objects it makes are not the engine's."""
        keep = set(keep)
        return [f for f in files if f in keep or not self._is_test(f)]

    def _is_test(self, relpath: str) -> bool:
        """`Config.is_test_path`, once per file: the same files are candidates for
        many functions' callers."""
        found = self._tests.get(relpath)
        if found is None:
            found = self._tests[relpath] = self.point.config.is_test_path(relpath)
        return found

    def unbounded(self, function: Function) -> str:
        """Why the calls of `function` cannot all be found (after `sites` gave None)."""
        return self._gave_up.get(function, f"the calls of `{function.name}` cannot all be found")

    def defers_by_functools(self, site: CallSite) -> bool:
        """Whether a deferred call (`functools.partial(f, a)`, `partial(f, a)`) is bound
        by functools (a bare `partial` must be imported from it: one of the project's
        own may call the function at once, or never)."""
        source = self._source(site.relpath) or ""
        return site.record.deferred != "partial" or bool(_FROM_FUNCTOOLS_PARTIAL.search(source))

    def _give_up(self, function: Function, why: str) -> None:
        """Record why the calls of `function` cannot be bounded (for `explain`); None."""
        self._gave_up[function] = why
        return None

    def _bind(self, found: tuple[str, CallRecord, int], definition: ast.FunctionDef,
              parameter: Optional[str]) -> CallSite:
        relpath, record, skip = found
        if parameter is None:
            return CallSite(relpath, record, None, ())
        if skip == 1 and decorated_with(definition, "staticmethod"):
            skip = 0  # `self.helper(x)` binds nothing to a static method's first parameter
        args = definition.args
        positional = [a.arg for a in (*args.posonlyargs, *args.args)]
        if skip == 1 and positional and positional[0] == parameter:
            return CallSite(relpath, record, record.receiver, record.receiver_types)
        bound = positional[skip:]
        if parameter in bound:
            index = bound.index(parameter)
            if index < len(record.args):
                return CallSite(relpath, record, record.args[index], record.arg_types[index])
        keywords = dict(record.keywords)
        if parameter in keywords:
            return CallSite(relpath, record, keywords[parameter], dict(record.keyword_types).get(parameter, ()))
        return CallSite(relpath, record, None, ())

    def _resolves_to(self, relpath: str, record: CallRecord, function: Function, tables: set[str]):
        """The number of leading parameters the call leaves out when it calls
        `function`; False when it calls something else; None when it cannot be told."""
        skip = self._resolution(relpath, record, function, tables)
        if skip == 1 and self._through_class_object(relpath, record):
            definition = self.definition(function)
            if definition is None or not decorated_with(definition, "classmethod"):
                return 0  # `type(self).m(self, fb)`, `cls.m(cls(), fb)`: the object is passed explicitly
        return skip

    def _resolution(self, relpath: str, record: CallRecord, function: Function, tables: set[str]):
        if record.table is not None:
            return 0 if record.table in tables else False
        if record.callee == Callee(CalleeHead.SELF, function.name) and \
                self._overrides(relpath, record.class_qualname, function):
            return 1  # `self.forward_extend(...)` in a base class dispatches to the override
        target = self.index.callable_named(relpath, record.class_qualname, record.callee)
        if target is None and record.receiver is None and record.callee.head is CalleeHead.NAME:
            local = self._locally_imported(relpath, record.scope, record.callee.name)
            if local is not None:  # `def step(fb): from m import f as read_lens; read_lens(fb)`
                target = self.index.callable_at(local)
                if target is None:
                    return None
        if target is not None:
            hit = (target[0], f"{target[2]}.{target[1].name}" if target[2] else target[1].name)
            return target[3] if hit == (function.relpath, function.qualname) else False
        if record.receiver is None or function.owner is None:
            return False  # a plain name that is not this function (a builtin, a local)
        types = self.point.types.resolve(relpath, record.receiver_types) if record.receiver_types \
            else frozenset({UNKNOWN})
        owner_id = f"{self.index.module_of(function.relpath)}.{function.owner}"
        owner = self.index.class_of(owner_id)
        related = self.point.nullability.related(owner_id) if owner is not None else {owner_id}
        if owner is not None:  # an object typed as any base may be one: bases only scanned too,
            # and those of the classes deriving from it (`self.hook()` in a sibling base)
            related = related | {base_id for cls in (owner, *self.index.descendants(owner))
                                 for base_id, _, _ in self._project_bases(cls)}
        # `type(x).m(x, fb)`: the object is an argument of the call, not its receiver
        explicit = self._through_class_object(relpath, record)
        if UNKNOWN not in types and not any(self._delegates_attributes(t) for t in types):
            # related as `related` sees it from the method's class down, or from the
            # object's own class up (a subclass the byte scan could not name)
            if not types & related and not any(owner_id in self.index.ancestor_ids(t) for t in types):
                return False
            # typed as a base: one of many overrides, those that can take the arguments
            return 1 if self._arguments_fit(record, function, explicit) else False
        # of unknown type, or of a class whose `__getattr__` hands out another object's
        # attributes (a wrapper of a backend): it may be any object with the method, an
        # instance of this class among them, wherever the file got it from (a factory's
        # return, a parameter: it need not import the class), so it is judged as a call
        # of it if the method can take its arguments
        if not self._arguments_fit(record, function, explicit):
            return False
        definition = self.definition(function)
        return 0 if definition is not None and decorated_with(definition, "staticmethod") else 1

    def _aliases_in(self, relpath: str, source: str, names: Iterable[str]) -> set[str]:
        """`_import_aliases` of a file, for the names its import statements hold (the
        byte scan keeps those words: most files import none of them, and are not searched)."""
        imported = [n for n in names if relpath in self.importers_of(n)]
        return _import_aliases(source, imported) if imported else set()

    def _locally_imported(self, relpath: str, scope: str, name: str) -> Optional[str]:
        """The absolute name `name` stands for where the function `scope` imports it
        itself (its head, for a dotted name); None when it does not."""
        caller = self.index.functions_of(relpath).get(scope, (None, None))[0]
        if caller is None:
            return None
        head, _, rest = name.partition(".")
        imported = self.point.types.local_imports(relpath, caller).get(head)
        return None if imported is None else (f"{imported}.{rest}" if rest else imported)

    def _through_class_object(self, relpath: str, record: CallRecord) -> bool:
        """Whether the call is made on a class, not an instance: `type(x).m(...)`,
        `x.__class__.m(...)`, or `cls.m(...)` in a classmethod."""
        receiver = record.receiver or ""
        if _names_a_class(receiver, None):
            return True
        caller = self.index.functions_of(relpath).get(record.scope, (None, None))[0]
        if caller is None:
            return False
        positional = [*caller.args.posonlyargs, *caller.args.args]
        cls_name = positional[0].arg if positional and decorated_with(caller, "classmethod") else None
        if record.callee.head is CalleeHead.SELF and cls_name is not None and receiver == cls_name:
            return True
        if positional and receiver == positional[0].arg:
            return False  # the method's own `self`
        # a local holding the class (`klass = type(self)`, `k = cls`)
        return receiver.isidentifier() and any(
            isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == receiver for t in node.targets)
            and _names_a_class(ast.unparse(node.value), cls_name) for node in ast.walk(caller))

    def _delegates_attributes(self, type_id: str) -> bool:
        """Whether objects of `type_id` answer attributes they do not define
        (`__getattr__`/`__getattribute__` in the class or a project base)."""
        if type_id in self._delegating:
            return self._delegating[type_id]
        self._delegating[type_id] = found = self._answers_any_attribute(type_id)
        return found

    def _answers_any_attribute(self, type_id: str) -> bool:
        cls = self.index.class_of(type_id)
        if cls is None:
            return False
        # read off the text (`__getattr__ = _delegate` binds one too), of the class, its
        # bases and the classes deriving from it (the object may be one)
        for owner in (cls, *self.index.ancestors(cls), *self.index.descendants(cls)):
            lines = self._lines(owner.relpath)
            if any("__getattr" in line for line in lines[owner.facts.line - 1:owner.facts.end_line or len(lines)]):
                return True
        return False

    def _arguments_fit(self, record: CallRecord, function: Function, through_class: bool = False) -> bool:
        """Whether the method can take the call's arguments: more positional ones than
        it has places for, a keyword it does not name (with no `*args`/`**kwargs` to
        take them), or, from a call without `*`/`**`, too few to fill the parameters
        without defaults, would be a TypeError, so such a call is of another method.
        `through_class`: made on the class object (`type(x).m(x, fb)`), which hands a
        plain method its object as the first argument."""
        definition = self.definition(function)
        if definition is None:
            return True
        args = definition.args
        static = decorated_with(definition, "staticmethod")
        every = [a.arg for a in (*args.posonlyargs, *args.args)]
        # `self`, or `cls`, comes with the object (a classmethod's `cls` with the class too)
        leading = 0 if static or (through_class and not decorated_with(definition, "classmethod")) else 1
        positional = every[leading:]
        if args.vararg is None and len(record.args) > len(positional):
            return False
        keywords = {keyword for keyword, _ in record.keywords}
        if args.kwarg is None:
            named = {a.arg for a in (*args.args, *args.kwonlyargs)}
            if any(keyword not in named for keyword in keywords):
                return False
        if record.splat:
            return True
        first_default = len(every) - len(args.defaults)
        for i, name in enumerate(positional):
            if i + leading < first_default and i >= len(record.args) and name not in keywords:
                return False   # a parameter without a default left unfilled
        return all(a.arg in keywords for a, default in zip(args.kwonlyargs, args.kw_defaults) if default is None)

    def _overrides(self, relpath: str, class_qualname: Optional[str], function: Function) -> bool:
        """Whether `function` is a method of a class deriving from `class_qualname`
        (so that class's `self.<name>()` can run it)."""
        if class_qualname is None or function.owner is None:
            return False
        caller = self.index.class_of(f"{self.index.module_of(relpath)}.{class_qualname}")
        owner = self.index.class_of(f"{self.index.module_of(function.relpath)}.{function.owner}")
        if caller is None or owner is None:
            return False
        if caller.id == owner.id or any(a.id == caller.id for a in self.index.ancestors(owner)):
            return True
        # `class Impl(Mixin, Base)`: `self.hook()` in Base runs Mixin's hook on an Impl
        return any(caller.id in {b for b, _, _ in self._project_bases(d)} for d in self.index.descendants(owner))

    def _escape_matters(self, relpath: str, reference: CallRecord, function: Function, names: set[str]) -> bool:
        """Whether a watched name used as a value (`f`, `obj.m`, `getattr(obj, "m")`) may
        hand out `function`, whose calls are then not seen: any such use of its name,
        whatever the object (telling `OtherClass.execute` from this method by the
        object's type would make every gap in the types a read cleared unseen); but a
        bare name is a method only in its own class's body."""
        if reference.name not in names:
            return False
        return function.owner is None or reference.receiver is not None or relpath == function.relpath

    def _tables(self, function: Function) -> Optional[set[str]]:
        """Module-level tables holding the function (`FUNCS = defaultdict(lambda: f)`):
        their subscripted calls are its calls."""
        if function.owner is not None:
            return set()
        source = self.index.source(function.relpath)
        if source is None:
            return None
        # a file asked about a few functions is searched for each (most are); one asked
        # about many, indexed once (a search of the file per function was quadratic)
        asked = self._tables_asked[function.relpath] = self._tables_asked.get(function.relpath, 0) + 1
        if asked <= _SEARCHES_BEFORE_INDEX:
            return _tables_naming(source, function.name)
        if function.relpath not in self._table_names:
            self._table_names[function.relpath] = _module_tables(source)
        return set(self._table_names[function.relpath].get(function.name, ()))

    def _harmless_module_line(self, relpath: str, source: str, line: int, names: Iterable[str] = ()) -> bool:
        """A mention outside any function that is not a use: an import, a comment, a
        docstring (told by the module's own statements, parsed only when needed)."""
        lines = self._lines(relpath, source)
        text = lines[line - 1].strip()
        if text.startswith("#") or re.match(r"(from\s+\S+\s+)?import\s", text) or _in_import_list(lines, line):
            return True
        if names and _only_in_comment(lines[line - 1], names):
            return True  # `PRE_REPLAY = 1  # After the init_forward_metadata_out_graph`
        # what else is harmless (an annotation in a class body, a class header) is told by
        # the statement: text alone takes `DECODE: f,` in a dict display for an annotation,
        # and `class Handlers: run = f` for a header
        tree = self._module(relpath, self.index.source(relpath) or "")
        if tree is None:
            return False
        for statement in _statements_at(tree.body, line):
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                return True
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
                    and isinstance(statement.value.value, str):
                return True  # a docstring
            if isinstance(statement, ast.AnnAssign) and (
                    statement.value is None or line < statement.value.lineno):
                return True  # `reporter: SchedulerMetricsReporter`: a type, not a use
            if isinstance(statement, ast.ClassDef) and statement.body and line < statement.body[0].lineno:
                # in a class header: its bases are classes, a subclass is searched as itself;
                # a keyword (`class Decode(Plugin, hook=f):`) hands a value to the metaclass
                return not any(k.value.lineno <= line <= (k.value.end_lineno or k.value.lineno)
                               for k in statement.keywords)
        # every statement on the line (`LABEL = "x"; TABLE = [f]` is two), walked whole
        on_line = [st for st in tree.body if st.lineno <= line <= (st.end_lineno or st.lineno)]
        return bool(on_line) and bool(names) and all(_only_in_text(st, line, set(names)) for st in on_line)

    def _lines(self, relpath: str, source: Optional[str] = None) -> list[str]:
        """The file's lines as written (not NFKC-normalised: a fullwidth quote is no
        quote to the tokenizer), numbered as `_line_numbers` and `ast` number them."""
        if relpath not in self._split:
            self._split[relpath] = split_lines(self.index.source(relpath) or "")
        return self._split[relpath]

    def _is_definition_or_table(self, source: str, line: int, function: Function, tables: set[str]) -> bool:
        text = self._lines(function.relpath, source)[line - 1]
        stripped = text.strip()
        if re.match(rf"(async\s+)?def\s+{re.escape(function.name)}\b", stripped):
            return True
        return any(re.match(rf"{re.escape(t)}\s*(?::[^=]*)?=", text) for t in tables)

    def _candidate_files(self, function: Function, names: set[str]) -> Optional[list[str]]:
        module = self.index.module_of(function.relpath)
        words = {function.name, module.rsplit(".", 1)[-1], *names}
        files = {function.relpath}
        base_words: set[str] = set()
        base_files: set[str] = set()
        if function.owner is not None:
            words.add(function.owner.split(".")[0])
            owner = self.index.class_of(f"{module}.{function.owner}")
            if owner is not None:
                # subclasses call it as `self.m()`; so do bases, dispatching to the override
                descendants = list(self.index.descendants(owner))
                files |= {d.relpath for d in descendants}
                files |= {a.relpath for a in self.index.ancestors(owner)}
                # an override runs where an object typed as a base defining the method
                # is called (`self.backend: Backend`, `self.backend.plan(fb)`): the
                # importers of those bases call it too
                for base_id, relpath in self._bases_defining(owner, function.name):
                    base_files.add(relpath)
                    base_words.add(base_id.rsplit(".", 1)[-1])
                    base_words.add(self.index.module_of(relpath).rsplit(".", 1)[-1])
                # and a mixin's method is called on instances of the classes that
                # inherit it, by files that import those classes, not the mixin, and
                # by the other bases of those classes (`self.hook()` in a sibling base)
                for d in descendants:
                    words.add(d.id.rsplit(".", 1)[-1])
                    words.add(d.module.rsplit(".", 1)[-1])
                    files |= {relpath for _, relpath, _ in self._project_bases(d)}
        for word in words | {"*"}:
            files |= self.importers_of(word)
        if function.owner is not None:
            for word in names:
                files |= self._attributes.files_holding(word)
        for word in base_words - words:
            base_files |= self.importers_of(word)
        return sorted(files | base_files)

    def _bases_defining(self, owner, method: str) -> list[tuple[str, str]]:
        """(class id, file) of each project base class of `owner`, parsed or only
        scanned, that defines `method` itself."""
        return [(base_id, relpath) for base_id, relpath, qualname in self._project_bases(owner)
                if f"{qualname}.{method}" in self.index.functions_of(relpath)]

    def _project_bases(self, owner) -> list[tuple[str, str, str]]:
        """(class id, file, qualname) of every project base class of `owner`,
        transitively, those the run parsed and those only the byte scan saw."""
        if owner.id not in self._bases:
            found: list[tuple[str, str, str]] = []
            seen: set[str] = set()
            stack = list(owner.bases)
            while stack:
                base_id = stack.pop()
                if base_id in seen:
                    continue
                seen.add(base_id)
                cls = self.index.class_of(base_id)
                if cls is not None:
                    relpath, qualname, bases = cls.relpath, cls.facts.qualname, cls.bases
                else:
                    located = self.index.locate_class(base_id)
                    if located is None:
                        continue  # not a project class (`torch.nn.Module`)
                    relpath, qualname = located
                    bases = self.index.scanned_bases(relpath, qualname)
                found.append((base_id, relpath, qualname))
                stack.extend(bases)
            self._bases[owner.id] = found
        return self._bases[owner.id]

    def importers_of(self, word: str) -> set[str]:
        """The files whose import statements hold `word`."""
        return self._imports.files_holding(word)

    def index_imports(self) -> None:
        """Import word -> the files holding it, for every word, before forked judges
        share the answers. (The attribute words are ten times as many: each judge
        searches them one method name at a time.)"""
        self._imports.index_all()

    def _relevant(self, relpath: str, source: str, names: set[str]) -> tuple[list[int], list[int], list[int]]:
        """The lines `call_sites` walks in a file: those of the file's mirrors and
        conditions (once per file), and those naming `names`."""
        if relpath not in self._relevance:
            point = self.point
            self._relevance[relpath] = relevant_lines(source, point.mirrors, point.device,
                                                      point.config.condition_words, point.flag)
        base, conditions, walrus = self._relevance[relpath]
        offsets = self._word_offsets(relpath, source, names)
        # `batch = self.next_batch(); batch.filter_batch()`: the lines binding the object
        # a call is made on tell its type (a line the walk skips leaves it unknown)
        receivers = {m.group(1) for o in offsets if (m := _RECEIVER.search(source, max(0, o - 80), o))} - _IMPLICIT
        if receivers:
            offsets = offsets + self._word_offsets(relpath, source, receivers)
        return sorted(set(base) | self._line_numbers(relpath, source, offsets)), conditions, walrus

    def _word_offsets(self, relpath: str, source: str, names: Iterable[str]) -> list[int]:
        """`word_offsets(source, names)`, from an index of the file's words once the file
        has been searched a few times (each function of a file searches it for its own
        callers: a search of the whole text each was quadratic in its functions)."""
        words = self._words.get(relpath)
        if words is None or words.source is not source:
            words = self._words[relpath] = WordOffsets(source)
        return words.find(names)

    def _line_numbers(self, relpath: str, source: str, offsets: Iterable[int]) -> set[int]:
        """The line of each offset of `source` (a table of the file's newlines, built
        once: counting them from the start for each offset was quadratic)."""
        newlines = self._newlines.get(relpath)
        if newlines is None:
            newlines = self._newlines[relpath] = line_break_offsets(source)
        return {bisect.bisect_left(newlines, offset) + 1 for offset in offsets}

    def _source(self, relpath: str) -> Optional[str]:
        """A file's text as Python reads its names: NFKC-normalised (`ｆirst(fb)` calls
        `first`), which keeps every line where it was."""
        if relpath not in self._sources:
            text = self.index.source(relpath)
            if text is not None and not text.isascii():
                text = unicodedata.normalize("NFKC", text)
            self._sources[relpath] = text
        return self._sources[relpath]


# Decorators that hand the function's calls through unchanged (or, for a cache, skip
# the body): the calls of the name are still its calls.
TRANSPARENT_DECORATORS = frozenset({
    "staticmethod", "classmethod", "abstractmethod", "abc.abstractmethod", "override", "typing.override",
    "typing_extensions.override", "overload", "typing.overload", "cache", "functools.cache", "lru_cache",
    "functools.lru_cache", "final", "typing.final",
})
# External bases that call no method of a class deriving from them but special ones.
_INERT_BASES = frozenset({
    "object", "ABC", "ABCMeta", "Generic", "Protocol", "NamedTuple", "TypedDict", "Enum", "IntEnum", "Flag",
    "IntFlag", "StrEnum", "Exception", "BaseException", "ValueError", "RuntimeError", "TypeError", "KeyError",
    "dict", "list", "set", "frozenset", "tuple", "str", "int", "float", "bytes", "bytearray", "complex",
    "defaultdict", "OrderedDict", "Counter", "deque",
})


def _called_by_python(name: str) -> bool:
    """A special method (`__call__`, `__getitem__`; not `__init__`, which a call of the
    class names) or a sunder one (`_missing_`): run by the language or a framework."""
    if name == "__init__" or len(name) < 3 or not name[0] == name[-1] == "_":
        return False
    dunder = name.startswith("__") and name.endswith("__")
    sunder = name[1] != "_" and name[-2] != "_"
    return dunder or sunder


def _names_a_class(text: str, cls_name: Optional[str]) -> bool:
    """Whether an expression, as written, is a class object: `type(x)`, `x.__class__`,
    or the classmethod's `cls`."""
    return text.startswith("type(") or text.endswith(".__class__") or text == "__class__" or \
        (cls_name is not None and text == cls_name)


def _yields(function: ast.FunctionDef) -> bool:
    """Whether the function itself (not a function, lambda or class nested in it) yields."""
    stack = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return False


def _import_aliases(source: str, names: Iterable[str]) -> set[str]:
    """The other names a file imports `names` as (`from m import f as read_lens`). One
    search per name that starts with its text (a regex that starts with a word boundary
    or an alternation tries every position of the file)."""
    names = [n for n in names if n in source]
    if not names or " as" not in source:
        return set()
    found = set()
    for name in names:
        # `f as g`, `f \\\n as g`, `(f  # the reader\n as g)`
        for m in re.finditer(rf"{re.escape(name)}(?:\s|\\\n|#[^\n]*)+as(?:\s|\\\n)+([^\W\d]\w*)", source):
            start = m.start()
            if start == 0 or not (source[start - 1].isalnum() or source[start - 1] == "_"):
                found.add(m.group(1))
    return found - set(names)


def depth_above(depth: int, site: CallSite, caller: Function) -> int:
    """The depth left above a call. A method handing the batch on to the same method of
    another object (`def forward_extend(...): return backend.forward_extend(...)`, a
    delegating backend) costs none: such delegations chain through every wrapper, and a
    cycle among them is caught by the judged set, not by the depth."""
    return depth if caller.name == site.record.name else depth - 1


def _statements_at(body: list[ast.stmt], line: int):
    """The statements holding `line`, outermost first, through class bodies and
    compound statements (not into functions: their lines are walked as functions)."""
    for statement in body:
        if statement.lineno <= line <= (statement.end_lineno or statement.lineno):
            yield statement
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return
            for field in ("body", "orelse", "finalbody", "handlers"):
                yield from _statements_at(getattr(statement, field, []) or [], line)
            return


def _only_in_text(statement: ast.stmt, line: int, names: set[str]) -> bool:
    """Whether every mention of `names` on `line` of `statement` is text inside a
    document: a string of several lines (`PATCHES = \"\"\"target: pkg.Backend.forward
    ...\"\"\"`, a help text) that is not itself a reference and writes no call. No name,
    attribute, keyword or import there; a one-line string naming it may be a reference
    by name (`getattr(obj, "forward")`, `"pkg.mod:forward"`, `exec("forward(x)")`)."""
    for node in ast.walk(statement):
        first = getattr(node, "lineno", None)
        if first is None or not first <= line <= (getattr(node, "end_lineno", None) or first):
            continue
        if isinstance(node, ast.Name) and node.id in names or isinstance(node, ast.Attribute) and node.attr in names:
            return False
        if isinstance(node, ast.keyword) and node.arg in names or isinstance(node, ast.arg) and node.arg in names:
            return False
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                _names_by_string(node.value, names, document=(node.end_lineno or first) > first):
            return False
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)) and \
                getattr(node, "name", None) in names:
            return False
    return True


def _names_by_string(text: str, names: set[str], document: bool) -> bool:
    """Whether a string mentioning one of `names` may refer to it: any string written on
    one line, and a document (a string over several lines) that is just a path to it
    (`pkg.mod.f`, `pkg.mod:f`) or that calls it."""
    if not document:
        return any(n in text for n in names)
    if re.split(r"[.:/\s]", text.strip())[-1] in names:
        return True
    return any(re.search(rf"(?<![\w.]){re.escape(n)}\s*\(", text) or re.search(rf"\.{re.escape(n)}\s*\(", text)
               for n in names)


def _only_in_comment(line: str, names: Iterable[str]) -> bool:
    """Whether `line` names one of `names` and every mention is in its trailing comment:
    no other token (a name, a string, an f-string's text on 3.12+) holds one, read by the
    tokenizer so a `#` in a string is no comment. A line that does not tokenize alone
    (inside a string spanning lines, an open bracket) is not told to be harmless."""
    words = set(names)
    if not any(w in line for w in words):
        return False
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline))
    except (tokenize.TokenError, SyntaxError):
        return False
    return not any(t.type != tokenize.COMMENT and any(w in t.string for w in words) for t in tokens)


# the name an attribute call is made on, right before the attribute (`batch.` of
# `batch.filter_batch`); `self` and `cls` are typed by their class already
_RECEIVER = re.compile(r"(?<![\w.])([^\W\d]\w*)[ \t]*\.[ \t]*$")
_IMPLICIT = frozenset({"self", "cls"})


# `HANDLERS = [f]` at column 0, also after `;` (`LABEL = 1; HANDLERS = [f]`): the name
# bound, and the text whose words it holds
_TABLE_ASSIGNMENT = re.compile(r"([A-Za-z_]\w*)[ \t]*(?::[^=;\n]*)?=(.*)", re.S)
_WORD = re.compile(r"\w+")


def _tables_naming(source: str, name: str) -> set[str]:
    """`_module_tables(source).get(name, set())`, by one search of the text."""
    pattern = re.compile(rf"^(?![ \t])(?:[^\n;]*;[ \t]*)*?([A-Za-z_]\w*)[ \t]*(?::[^=;\n]*)?="
                         rf"[^;\n]*\b{re.escape(name)}\b", re.M)
    return {m.group(1) for m in pattern.finditer(source) if m.group(1) != name}


def _module_tables(source: str) -> dict[str, set[str]]:
    """name -> the module-level names assigned a value that mentions it as a word, read
    once per file (a search of the file per function was quadratic in its functions).
    On a line, a name counts in the first assignment mentioning it, and not when that
    assignment binds the name itself (`f = wrap(f); T = [f]` names no table)."""
    tables: dict[str, set[str]] = {}
    for line in source.split("\n"):
        if not line or line[0] in " \t" or "=" not in line:
            continue
        seen: set[str] = set()
        for i, segment in enumerate(line.split(";")):
            match = _TABLE_ASSIGNMENT.match(segment if i == 0 else segment.lstrip(" \t"))
            if match is None:
                continue
            for word in _WORD.findall(match[2]):
                if word not in seen:
                    seen.add(word)
                    if match[1] != word:
                        tables.setdefault(word, set()).add(match[1])
    return tables


# how many questions a file is asked by searching its text before it is indexed: an
# index costs tens of searches of the text (a Python pass over its words or lines), so
# a file of the usual project, asked about a few names, is never indexed
_SEARCHES_BEFORE_INDEX = 32


class WordOffsets:
    """Where names occur as whole words in one text: searched with `word_offsets` for
    the first few questions (most files are asked about one or two names), then from an
    index of every word's offsets, built once (a file asked about many names, each
    function of a long one, would be searched whole for each)."""

    built = 0   # indexes built, for the scaling tests (tests/test_scaling.py)

    def __init__(self, source: str) -> None:
        self.source = source
        self._searches = 0
        self._index: Optional[dict[str, list[int]]] = None

    def find(self, names: Iterable[str]) -> list[int]:
        """The offsets, ascending, of each of `names` as a whole word."""
        if self._index is None:
            self._searches += 1
            if self._searches <= _SEARCHES_BEFORE_INDEX:
                return word_offsets(self.source, names)
            self._index = {}
            for match in _WORD.finditer(self.source):
                self._index.setdefault(match.group(), []).append(match.start())
            WordOffsets.built += 1
        out: list[int] = []
        for name in names:
            if _WORD.fullmatch(name):
                out += self._index.get(name, ())
            else:  # not one word (a dotted name): a word index cannot hold it
                out += word_offsets(self.source, [name])
        return sorted(out)


def word_offsets(source: str, names) -> list[int]:
    """Where each of `names` occurs in `source` as a whole word (a plain substring
    search: a regex with word boundaries cannot skip ahead and costs 10x). A word
    character is one `str.isalnum` takes, or `_`: what `\\w` matches."""
    out = []
    for name in names:
        start = source.find(name)
        while start != -1:
            end = start + len(name)
            if (start == 0 or not (source[start - 1].isalnum() or source[start - 1] == "_")) and \
                    (end == len(source) or not (source[end].isalnum() or source[end] == "_")):
                out.append(start)
            start = source.find(name, end)
    return sorted(out)


def _after_def(source: str, offset: int) -> bool:
    """Whether the name at `offset` is the one a `def` statement binds."""
    start = source.rfind("\n", 0, offset) + 1
    head = source[start:offset].strip()
    return head in ("def", "async def")


def _in_import_list(lines: list[str], line: int) -> bool:
    """Whether `line` continues a parenthesised import (`from m import (\n    f,\n)`)."""
    for index in range(line - 2, max(-1, line - 80), -1):
        text = lines[index].strip()
        if ")" in text:
            return False
        if re.match(r"from\s+\S+\s+import\s*\($", text):
            return True
    return False
