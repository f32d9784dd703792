"""Runs the rules over a tree: discover, gather every file's facts (`phases`: scan
all, analyse the few that can hold a finding; cached by content hash, on every core),
resolve the backend hierarchy and the contract (`index`, `contract`), apply the rules
(`checking`). A whole unchanged tree answers from the result cache."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Optional, Sequence

from seqguard import __version__
from seqguard.config import Config, ConfigError
from seqguard.diagnostics import Diagnostic, unreadable
from seqguard.lint.cache import FactCache, ResultCache, StatKey, package_fingerprint, stat_of
from seqguard.lint.discovery import Discovery, Target, discover

# What a run that answers from the result cache never needs (the analyzer, the rules,
# the engine model, the process pool) is imported when a run analyses: an unchanged
# tree is answered in the time it takes to stat it.
if TYPE_CHECKING:
    from seqguard.lint.contract.model import Contract
    from seqguard.lint.index import ProjectIndex
    from seqguard.lint.model import DeepFacts
    from seqguard.lint.rule import FileContext, Rule
    from seqguard.workers import Pool


@dataclasses.dataclass
class LintResult:
    diagnostics: list[Diagnostic]
    files_checked: int
    warnings: list[str]
    index: Optional["ProjectIndex"] = None
    contract: Optional["Contract"] = None   # the engine model, built with the index
    facts: dict[str, "DeepFacts"] = dataclasses.field(default_factory=dict)
    targets: list[Target] = dataclasses.field(default_factory=list)
    # what the engine-model check warns of (a preset's name this release lacks), also
    # among `warnings`: for the commands that print no other warning of the run
    model_warnings: list[str] = dataclasses.field(default_factory=list)


def lint_paths(paths: Sequence[Path], config: Config, *, use_cache: bool = True,
               jobs: Optional[int] = None, rules: Optional[Iterable[type["Rule"]]] = None,
               need_index: bool = False, buffers: Optional[Mapping[Path, bytes]] = None,
               progress: Optional[Callable[[str], None]] = None) -> LintResult:
    """Lint `paths` with `rules` (every rule when None; only then is the whole-run
    result cache used). With `need_index`, the hierarchy and facts are always built
    (graphs and the codemod need them); otherwise an unchanged tree answers from
    cache (fixes included: they travel on each `Diagnostic`).

    `buffers` maps a path to bytes that replace the file on disk (an editor's unsaved
    buffer, `seqguard lint - --stdin-filename PATH`); the rest of the project is read as
    usual so the hierarchy is the project's. A buffered run never reads or writes the
    whole-run result cache, and a buffer's facts never enter the facts cache.

    Raises ConfigError when a name of the engine model the user gave names nothing of
    the project (`lint.contract.model_names`; a preset's is a warning).

    `progress` is told what the run is doing, in words ("checking 4,719 files"), for
    a progress line."""
    started_ns = time.time_ns()   # before any stat: the racy-timestamp rule compares to it
    buffers = dict(buffers or {})
    if progress is not None:
        progress("looking for files")
    discovery = discover([p for p in paths if p not in buffers], config, started_ns=started_ns)
    buffered = _add_buffers(discovery, buffers, config)
    if progress is not None:
        count = len(discovery.targets)
        progress(f"checking {count:,} file{'' if count == 1 else 's'}")
    every_rule = rules is None
    results = ResultCache(config.root, use_cache and every_rule and not buffers, started_ns)
    stats: dict[str, Optional[StatKey]] = {}
    key, newest_mtime = _tree_key(discovery, config, stats) if results.enabled else (b"", 0)
    if not need_index and results.enabled:
        cached = results.load(key, newest_mtime)
        if cached is not None:
            diagnostics, warnings = cached
            return LintResult(diagnostics, len(discovery.targets), warnings, targets=discovery.targets)
    from seqguard.lint.rules import RULES
    from seqguard.workers import Pool, collector_paused

    pool = Pool(jobs if jobs is not None else (os.cpu_count() or 1))
    # The run builds a project's facts and syntax trees, which hold no cycles, in one
    # growing heap: each burst of allocations had the cycle collector walk all of it
    # (a fifth of a one-core cold run on SGLang). What is cyclic is freed after the run.
    try:
        with collector_paused():
            facts = FactCache(config.root, config.analysis_fingerprint, use_cache, started_ns)
            result = _lint(discovery, config, facts, pool, [rule() for rule in (RULES if every_rule else rules)],
                           buffered, stats)
    finally:
        pool.close()
    if results.enabled:
        results.save(key, (result.diagnostics, result.warnings))
    return result


def _add_buffers(discovery: Discovery, buffers: Mapping[Path, bytes], config: Config) -> dict[str, bytes]:
    """Make each buffered path a target (even when no such file exists yet); relpath -> bytes."""
    buffered: dict[str, bytes] = {}
    for path, data in buffers.items():
        abspath = os.path.abspath(path)
        relpath = os.path.relpath(abspath, config.root).replace(os.sep, "/")
        if not config.is_path_included(relpath):
            continue
        discovery.project[relpath] = abspath
        discovery.targets = [t for t in discovery.targets if t.relpath != relpath]
        discovery.targets.append(Target(abspath, relpath, str(path), True))
        buffered[relpath] = data
    return buffered


def _tree_key(discovery: Discovery, config: Config, stats: dict[str, Optional[StatKey]]) -> tuple[bytes, int]:
    """What the whole-run result depends on, and the newest mtime in the tree. The
    seqguard version and package fingerprint are in it: a changed rule must not keep
    printing its old message. Fills `stats` (relpath -> stat key) for the run to reuse."""
    h = hashlib.blake2b(f"{__version__}\0{package_fingerprint()}\0{config!r}".encode(), digest_size=16)
    h.update(repr([(t.relpath, t.display, t.explicit) for t in discovery.targets]).encode())
    h.update(repr((discovery.problems, discovery.warnings)).encode())
    relpaths = list(discovery.project)
    keys = [stat_of(abspath) for abspath in discovery.project.values()]
    stats.update(zip(relpaths, keys))
    h.update(repr(list(zip(relpaths, keys))).encode())  # one repr in C, not a string per file
    return h.digest(), max((key[0] for key in keys if key is not None), default=0)


def _lint(discovery: Discovery, config: Config, cache: FactCache, pool: "Pool",
          rules: list["Rule"], buffered: Optional[Mapping[str, bytes]] = None,
          stats: Optional[Mapping[str, Optional[StatKey]]] = None) -> LintResult:
    from seqguard.lint.checking import check_files
    from seqguard.lint.contract.model import Contract
    from seqguard.lint.contract.model_names import check_model
    from seqguard.lint.index import ProjectIndex, candidate_backend_names, module_names
    from seqguard.lint.phases import explicit_empty, gather

    found = gather(discovery, config, cache, pool,
                   lambda scans: candidate_backend_names(scans, config.backend_bases, config.backend_classes),
                   buffered, stats)
    scans = found.scans
    index = ProjectIndex(dict(found.deep), module_names(discovery.project, config.src), config.backend_bases,
                         found.load, found.source, config.device_attribute, scans, config.backend_classes)
    contract = Contract(index, config)
    # the model's names against the project, before anything is judged by them (lint,
    # explain, codemod and graph all come through here; a warm lint replays the warnings)
    model = check_model(contract.point)
    if model.errors:
        cache.save()   # the files' facts do not depend on these keys: the next run reuses them
        raise ConfigError("\n".join(model.errors))
    diagnostics = [unreadable(display, message) for display, message in discovery.problems]
    diagnostics.extend(check_files(discovery.targets, found.deep, found.failures, index, contract, config, rules,
                                   pool.jobs, meanwhile=cache.save))
    warnings = [*model.warnings, *discovery.warnings, *explicit_empty(discovery.targets, found.sizes, buffered or {})]
    cache.save()
    return LintResult(sorted(diagnostics), len(discovery.targets), warnings, index, contract, found.deep,
                      discovery.targets, list(model.warnings))


def source_context(source: str, config: Optional[Config] = None, filename: str = "example.py",
                   whole_project: bool = True) -> "FileContext":
    """Analyse one in-memory module as a project of its own (no I/O). With
    `whole_project=False` the module is one file of a project not seen: what other files
    may store or call is unknown, so no read is cleared by its type or its callers."""
    from seqguard.lint.contract.model import Contract
    from seqguard.lint.facts import analyze, scan
    from seqguard.lint.index import ProjectIndex, module_names
    from seqguard.lint.phases import analysis_model, scan_words
    from seqguard.lint.rule import FileContext

    config = config or Config(root=Path("."))
    data = source.encode()
    facts = analyze(data, config.mirror_attributes, config.device_attribute, *analysis_model(config))
    scans = {filename: scan(data, config.mirror_attributes, scan_words(config), config.flag_attribute)}
    index = ProjectIndex({filename: facts}, module_names([filename]), config.backend_bases, lambda _: None,
                         {filename: source}.get, config.device_attribute, scans, config.backend_classes)
    contract = Contract(index, config, whole_project=whole_project)
    return FileContext.of(filename, facts, index, contract, config)


def lint_source(source: str, rules: Optional[Iterable[type["Rule"]]] = None, *, config: Optional[Config] = None,
                filename: str = "example.py") -> list[Diagnostic]:
    """Lint one in-memory module; the rule examples' test uses this."""
    from seqguard.lint.checking import check_file
    from seqguard.lint.rules import RULES

    config = config or Config(root=Path("."))
    ctx = source_context(source, config, filename)
    target = Target(filename, filename, filename, True)
    chosen = RULES if rules is None else rules
    return sorted(check_file(target, ctx.facts, None, ctx.index, ctx.contract, config, [r() for r in chosen]))


__all__ = ["LintResult", "lint_paths", "lint_source", "source_context"]
