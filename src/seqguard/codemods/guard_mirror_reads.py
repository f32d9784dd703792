"""`GuardMirrorReads`: a LibCST codemod that guards every host-mirror read lint reports
(SG002/SG003) so it survives `None`, without changing behaviour when the mirror is there.

Three kinds of site:
- maintenance: the mirror is updated from itself and stored back. Wrapped in
  `if <mirror> is not None:` so an absent mirror stays absent (and, when the stored
  value mixes several mirrors, set to None if any is absent). No host sync.
- consumer: a value is computed from the mirror. Where the statement allows it the
  statement is written twice, `if <mirror> is not None: <as before> else: <from the
  device>`; elsewhere (a loop or `if` test, a lambda, one side of `and`/`or`) the read
  itself becomes `(m if m is not None else <fallback>)`. The device fallback is a
  host sync, reported; `--fallback raise` puts a clear error before the statement.
- pass-through: handed on unchanged; lint does not report it and nothing changes.

Where the mirror was dropped to avoid a sync (a backend whose flag is False or
conditional) a consumer never gets a host-sync fallback: it gets the error instead,
unless a configured template for that attribute computes on the device.

Run from the command line with `python -m libcst.tool codemod
guard_mirror_reads.GuardMirrorReads PATH` (with `seqguard.codemods` among the modules
of `.libcst.codemod.yaml`), from Python through `transform_module`, or project-wide
through `seqguard codemod`, which hands in the sites and opt-outs lint found across
the whole project.
The command is the applier: `plan.Planner` decides every change first (a frozen
`Plan`), the command applies it in one LibCST visit of the nodes on the way to a
change, and `safety` checks that nothing outside the guards moved. Templates
(`templates.py`), locating nodes (`locate.py`) and what a block binds (`bindings.py`)
stand apart."""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence, Union

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.metadata import MetadataWrapper

from seqguard.codemods.layout import configured_line_length
from seqguard.codemods.locate import locate
from seqguard.codemods.plan import HELPER_MODULE, GuardedRead, Layout, Plan, Planner
from seqguard.codemods.safety import Applied, check_same_outside_guards
from seqguard.codemods.sites import ReadToGuard, single_file_sites
from seqguard.codemods.templates import parse_templates
from seqguard.config import DEFAULT_DEVICE_ATTRIBUTE, DEFAULT_FLAG, DEFAULT_MIRRORS, Config, ConfigError, load_config
from seqguard.lint.analysis.source import split_lines

class GuardMirrorReads(VisitorBasedCodemodCommand):
    DESCRIPTION = ("Guard reads of seq_lens_cpu/seq_lens_sum (lint's SG002/SG003) so they survive None; "
                   "no host-sync fallback inside a backend that opted out of the mirror.")
    # No METADATA_DEPENDENCIES: Codemod.transform_module would copy the whole tree and
    # resolve parents everywhere; positions are resolved here once, and parents only
    # along the lines that hold sites (most files are large and have few sites).

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument("--fallback", choices=("device", "raise"), default="device",
                                help="device: compute the value from the device tensor (a host sync, never "
                                     "written in a backend that opted out); raise: a clear error instead.")
        arg_parser.add_argument("--style", choices=("inline", "helper"), default="inline",
                                help="inline: plain Python; helper: calls seqguard.runtime.fallback.")
        arg_parser.add_argument("--template", action="append", default=None, metavar="ATTR=EXPR",
                                help="Fallback for one mirror, e.g. 'seq_lens_sum={obj}.seq_lens.sum()'; "
                                     "{obj} is the object holding the mirror. Repeatable.")
        arg_parser.add_argument("--device-attribute", default=DEFAULT_DEVICE_ATTRIBUTE,
                                help="The device tensor the mirrors copy (default: seq_lens).")
        arg_parser.add_argument("--mirror", action="append", default=None, metavar="ATTR",
                                help="A host-mirror attribute (repeatable; default: seq_lens_cpu, seq_lens_sum).")
        arg_parser.add_argument("--line-length", type=int, default=None,
                                help="Wrap generated lines to this length (default: [tool.ruff] or [tool.black] "
                                     "line-length of the nearest pyproject.toml, else 88).")

    def __init__(self, context: CodemodContext, fallback: str = "device", style: str = "inline",
                 template: Union[None, Mapping[str, str], Iterable[str]] = None,
                 device_attribute: str = DEFAULT_DEVICE_ATTRIBUTE, mirror: Optional[Sequence[str]] = None,
                 line_length: Optional[int] = None, sites: Optional[Sequence[ReadToGuard]] = None,
                 fresh_parse: bool = False, source: Optional[str] = None, flag: Optional[str] = None) -> None:
        """`sites`: the reads to guard, with lint's whole-project judgement (`seqguard
        codemod` passes them); None finds them in the module alone. `fresh_parse`: the
        tree comes straight from `libcst.parse_module`, so no node object appears twice
        in it and the defensive copy metadata resolution makes can be skipped.
        `source`: the module's code when the caller has it (saves generating it).
        `flag`: what a backend declares to keep the mirror (None: the project's
        `flag-attribute`, or SGLang's name), which a raising guard's message names."""
        super().__init__(context)
        if fallback not in ("device", "raise"):
            raise ValueError(f"fallback: expected 'device' or 'raise', got {fallback!r}")
        if style not in ("inline", "helper"):
            raise ValueError(f"style: expected 'inline' or 'helper', got {style!r}")
        self.fallback = fallback
        self.style = style
        self.templates = parse_templates(template)
        self.device_attribute = device_attribute
        self.mirrors = tuple(mirror) if mirror else DEFAULT_MIRRORS
        self.line_length = line_length
        self.given_sites = sites
        self.fresh_parse = fresh_parse
        self.source = source
        self.flag = flag
        # What the last transform did, for reports.
        self.sites: list[GuardedRead] = []
        self.manual: list[tuple[int, str]] = []

    def transform_module(self, tree: cst.Module) -> cst.Module:
        """CodemodCommand.transform_module without its whole-tree metadata wrapper:
        the transform, then the import visitors CodemodCommand runs after it."""
        try:
            tree = self.transform_module_impl(tree)
        finally:
            self._warn_manual()
        for key, transform in ((AddImportsVisitor.CONTEXT_KEY, AddImportsVisitor),
                               (RemoveImportsVisitor.CONTEXT_KEY, RemoveImportsVisitor)):
            if key in self.context.scratch:
                tree = self._instantiate_and_run(transform, tree)
        # AddImportsVisitor puts a new import straight above a top-level `def`/`class`
        # with fewer than the two blank lines PEP 8 asks for; restore them.
        return _blank_lines_after_helper_import(tree)

    def _single_file_config(self) -> Config:
        """Run alone on a file: its project's [tool.seqguard] (the engine model's modes,
        conditions, counted classes), with the mirrors this command was given."""
        config = Config(root=Path("."))
        if self.context.filename:
            try:
                config = load_config([Path(self.context.filename)])
            except ConfigError:
                config = Config(root=Path("."))  # the tool reports what it can; lint reports the config
        overrides = {}
        if self.mirrors != DEFAULT_MIRRORS:
            overrides["mirror_attributes"] = self.mirrors
        if self.device_attribute != DEFAULT_DEVICE_ATTRIBUTE:
            overrides["device_attribute"] = self.device_attribute
        return dataclasses.replace(config, **overrides) if overrides else config

    # ---- plan, then apply ----------------------------------------------------------
    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self.sites, self.manual = [], []
        code = self.source if self.source is not None else tree.code
        self.source = None  # it describes this tree only
        sites = self.given_sites
        flag = self.flag or DEFAULT_FLAG
        if sites is None:
            config = self._single_file_config()
            flag = self.flag or config.flag_attribute
            name = "example.py"
            if self.context.filename:
                # named as in its project, so that the engine model's qualified names resolve
                name = os.path.relpath(os.path.abspath(self.context.filename), config.root).replace(os.sep, "/")
                if name.startswith(".."):
                    name = os.path.basename(self.context.filename)
            sites = single_file_sites(code, config, name)
        if not sites:
            return tree
        if not self.fresh_parse:
            tree = MetadataWrapper(tree).module  # a private copy: no node object appears twice
        lines = {s.access.line for s in sites} | {s.access.end_line for s in sites}
        positions, parents = locate(tree, code, lines)
        layout = self._layout(tree, code)
        planner = Planner(tree, layout, positions, parents, templates=self.templates, fallback=self.fallback,
                          style=self.style, device_attribute=self.device_attribute, mirrors=self.mirrors,
                          flag=flag)
        plan: Plan = planner.plan(sites)
        self._plan = plan
        self.sites, self.manual = list(plan.guarded), list(plan.manual)
        for module, name in plan.imports:
            AddImportsVisitor.add_needed_import(self.context, module, name)
        if not plan.touched:
            return tree
        # Visit only the nodes on the way to a change: the rest of the tree is kept as is.
        self._path: set[int] = set()
        for key in [*plan.touched, *plan.inline]:
            node = plan.nodes[key]
            while node is not None and id(node) not in self._path:
                self._path.add(id(node))
                node = planner.parents.get(node)
        self._new_path: set[int] = set()
        self._generated: dict[int, list[cst.CSTNode]] = {}
        new = tree.visit(self)
        check_same_outside_guards(tree, new, Applied(self._path, self._new_path, plan.touched, self._generated,
                                                     tree.code_for_node))
        return new

    def _layout(self, tree: cst.Module, code: str) -> Layout:
        """How generated code must be written to match the module: line length (the
        option, else the nearest pyproject.toml's), newline, indentation unit."""
        limit = self.line_length or configured_line_length(
            Path(self.context.filename).parent if self.context.filename else None)
        # A form feed may lead an indentation; it is no indentation unit of its own.
        nl, unit = tree.default_newline, tree.default_indent.lstrip("\x0c") or "    "
        return Layout(split_lines(code), limit, nl, unit, None if unit == tree.default_indent else unit,
                      cst.PartialParserConfig(default_newline=nl, default_indent=unit))

    def _warn_manual(self) -> None:
        # libcst.tool prints a command's warnings under the file's name.
        for line, why in self.manual:
            self.warn(f"line {line}: left for a manual fix: {why}")

    # ---- applying ----------------------------------------------------------------
    def on_visit(self, node: cst.CSTNode) -> bool:
        return id(node) in self._path and super().on_visit(node)

    def on_leave(self, original_node, updated_node):
        updated = super().on_leave(original_node, updated_node)
        key = id(original_node)
        if key not in self._path:
            return updated
        plan = self._plan
        if key in plan.inline:
            result = [plan.inline[key]]
        elif key in plan.touched:
            before = list(plan.before.get(key, ()))
            rest = list(plan.replace.get(key, [updated]))
            if before:
                before[0], rest[0] = _blank_lines_moved_up(before[0], rest[0])
            result = before + rest
            self._generated[key] = result
        else:
            result = [updated]
        self._new_path.update(id(node) for node in result)
        return result[0] if len(result) == 1 else cst.FlattenSentinel(result)

def _blank_lines_moved_up(first: cst.BaseStatement, statement: cst.BaseStatement):
    """(first, statement) for statements put before `statement`: the blank lines above
    it (up to its first comment) go above the first of them, so they still part it from
    what comes before (a nested `def` is followed by a blank line in Black's and ruff's
    style) and its comments stay on it."""
    leading = list(statement.leading_lines)
    blank = next((i for i, line in enumerate(leading) if line.comment is not None), len(leading))
    if not blank:
        return first, statement
    return (first.with_changes(leading_lines=[*leading[:blank], *first.leading_lines]),
            statement.with_changes(leading_lines=leading[blank:]))


def _blank_lines_after_helper_import(module: cst.Module) -> cst.Module:
    body = list(module.body)
    for index, statement in enumerate(body[:-1]):
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
                and isinstance(statement.body[0], cst.ImportFrom) and statement.body[0].module is not None
                and cst.Module([]).code_for_node(statement.body[0].module) == HELPER_MODULE):
            continue
        changed = False
        # ... and straight under the module docstring, where Black and ruff want one
        if index > 0 and _is_docstring(body[index - 1]) and not statement.leading_lines:
            body[index] = statement.with_changes(leading_lines=[cst.EmptyLine()])
            changed = True
        following = body[index + 1]
        if isinstance(following, (cst.FunctionDef, cst.ClassDef)):
            blank = sum(1 for line in following.leading_lines if line.comment is None)
            if blank < 2 and not any(line.comment for line in following.leading_lines):
                body[index + 1] = following.with_changes(leading_lines=[cst.EmptyLine()] * 2)
                changed = True
        return module.with_changes(body=body) if changed else module
    return module


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))
