"""Runs the rules over a tree: discover, scan every file, parse only the files that
can hold a finding, resolve the backend hierarchy, report. Per-file work runs on
every core and is cached by content hash."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import os
import stat
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

from seqguard import __version__
from seqguard.config import Config
from seqguard.diagnostics import Diagnostic, unreadable
from seqguard.lint.cache import Entry, FactCache, ResultCache, StatKey, digest, package_fingerprint, stat_key
from seqguard.lint.discovery import Discovery, Target, discover
from seqguard.lint.analysis.source import decode_source, is_suppressed
from seqguard.lint.facts import analyze, scan
from seqguard.lint.contract.judge import Contract
from seqguard.lint.index import ProjectIndex, candidate_backend_names, module_names
from seqguard.lint.model import DeepFacts, ScanFacts, Usage
from seqguard.workers import can_fork, process_pool
from seqguard.lint.rule import FileContext, Finding, Rule
from seqguard.lint.rules import RULES, UnusedSuppression
from seqguard.lint.rules.unused_suppression import unused_suppressions

_ALL_RULES = [rule() for rule in RULES]

# Below these counts a process pool costs more than it saves (fork + pickling).
POOL_MIN_SCANS = 256
POOL_MIN_ANALYSES = 24
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


@dataclasses.dataclass
class LintResult:
    diagnostics: list[Diagnostic]
    files_checked: int
    warnings: list[str]
    index: Optional[ProjectIndex] = None
    facts: dict[str, DeepFacts] = dataclasses.field(default_factory=dict)
    targets: list[Target] = dataclasses.field(default_factory=list)


def _read(abspath: str, limit: int) -> tuple[Optional[bytes], Optional[StatKey], Optional[str]]:
    """(bytes, stat key, None) for a regular file of at most `limit` bytes, else
    (None, None, why). Stat comes first (opening a device can have side effects), and
    the open cannot block: discovery already skips FIFOs and devices, but a file can be
    swapped for one in between, which the fstat of the open file catches."""
    try:
        if not stat.S_ISREG(os.stat(abspath).st_mode):
            return None, None, "not a regular file; skipped"
        fd = os.open(abspath, os.O_RDONLY | _NONBLOCK)
    except FileNotFoundError:
        return None, None, "file vanished during the run"
    except IsADirectoryError:
        return None, None, "is a directory"
    except OSError as e:
        return None, None, f"cannot read: {e.strerror or e}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, None, "not a regular file; skipped"
        if st.st_size > limit:
            return None, None, (f"too large ({st.st_size:,} bytes, max-file-size is {limit:,}); "
                                "raise max-file-size in [tool.seqguard] or exclude it")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
        if len(data) > limit:  # grew while we read
            return None, None, (f"too large (over max-file-size {limit:,} bytes); "
                                "raise max-file-size in [tool.seqguard] or exclude it")
        return data, stat_key(st), None
    except OSError as e:
        return None, None, f"cannot read: {e.strerror or e}"
    finally:
        os.close(fd)


def _scan_job(batch: list[tuple[str, str, Optional[bytes]]], mirrors: tuple[str, ...], limit: int,
              device: str, model: tuple = ((), ())) -> list[tuple]:
    """Scan each file, and analyse the ones whose scan says they can hold a finding (a
    mirror, the flag or a marker in them) while their bytes are in memory: the second
    phase then reads only the files it needs for the hierarchy."""
    out = []
    with _collector_paused():
        for relpath, abspath, old_digest in batch:
            data, stat_now, error = _read(abspath, limit)
            if data is None:
                out.append((relpath, None, None, None, None, error))
                continue
            new_digest = digest(data)
            facts = None if new_digest == old_digest else scan(data, mirrors)
            deep = None
            if facts is not None and (
                    facts.mentions_mirror or facts.mentions_flag or facts.mentions_suppression):
                deep = analyze(data, mirrors, device, *model)
            out.append((relpath, stat_now, new_digest, facts, deep, None))
    return out


def _analyze_job(batch: list[tuple[str, str]], mirrors: tuple[str, ...], device: str, limit: int,
                 model: tuple = ((), ())) -> list[tuple]:
    out = []
    with _collector_paused():
        for relpath, abspath in batch:
            data, stat_now, error = _read(abspath, limit)
            if data is None:
                out.append((relpath, None, None, None, error))
                continue
            out.append((relpath, stat_now, digest(data), analyze(data, mirrors, device, *model), None))
    return out


@contextlib.contextmanager
def _collector_paused():
    """Parsing allocates millions of nodes, and each burst of allocations makes the
    cycle collector walk every live object (10-15% of parse time). Syntax trees hold
    no cycles, so reference counting frees them without it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def analysis_model(config: Config) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What of the engine model the per-file walk needs: the words whose tests it records
    as path facts, and the device length attributes besides the device one."""
    return tuple(config.condition_words), tuple(config.device_lengths)


def _stat(abspath: str) -> Optional[StatKey]:
    try:
        return stat_key(os.stat(abspath))
    except OSError:
        return None


def _chunks(items: list, pieces: int) -> list[list]:
    size = max(1, -(-len(items) // pieces))
    return [items[i:i + size] for i in range(0, len(items), size)]


class _Pool:
    """A process pool made on first need and shared by both phases."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self._executor: Optional[ProcessPoolExecutor] = None

    def map(self, fn, batch: list, threshold: int, *args, chunk_size: Optional[int] = None) -> list:
        """`fn(chunk, *args)` over chunks of `batch`; small chunks balance uneven work
        (callers put the largest items first)."""
        if self.jobs <= 1 or len(batch) < threshold:
            return fn(batch, *args)
        if self._executor is None:
            self._executor = process_pool(self.jobs)
        chunks = (_chunks(batch, self.jobs * 4) if chunk_size is None
                  else [batch[i:i + chunk_size] for i in range(0, len(batch), chunk_size)])
        futures = [self._executor.submit(fn, chunk, *args) for chunk in chunks]
        return [row for future in futures for row in future.result()]

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown()


def lint_paths(paths: Sequence[Path], config: Config, *, use_cache: bool = True,
               jobs: Optional[int] = None, rules: Iterable[type[Rule]] = RULES,
               need_index: bool = False, buffers: Optional[Mapping[Path, bytes]] = None) -> LintResult:
    """Lint `paths`. With `need_index`, the hierarchy and facts are always built
    (graphs and the codemod need them); otherwise an unchanged tree answers from
    cache (fixes included: they travel on each `Diagnostic`).

    `buffers` maps a path to bytes that replace the file on disk (an editor's unsaved
    buffer, `seqguard lint - --stdin-filename PATH`); the rest of the project is read as
    usual so the hierarchy is the project's. A buffered run never reads or writes the
    whole-run result cache, and a buffer's facts never enter the facts cache."""
    started_ns = time.time_ns()   # before any stat: the racy-timestamp rule compares to it
    buffers = dict(buffers or {})
    discovery = discover([p for p in paths if p not in buffers], config, started_ns=started_ns)
    buffered = _add_buffers(discovery, buffers, config)
    rules = list(rules)
    results = ResultCache(config.root, use_cache and rules == list(RULES) and not buffers, started_ns)
    stats: dict[str, Optional[StatKey]] = {}
    key, newest_mtime = _tree_key(discovery, config, stats) if results.enabled else (b"", 0)
    if not need_index and results.enabled:
        cached = results.load(key, newest_mtime)
        if cached is not None:
            diagnostics, warnings = cached
            return LintResult(diagnostics, len(discovery.targets), warnings, targets=discovery.targets)
    pool = _Pool(jobs if jobs is not None else (os.cpu_count() or 1))
    try:
        facts = FactCache(config.root, config.analysis_fingerprint, use_cache, started_ns)
        result = _lint(discovery, config, facts, pool, [rule() for rule in rules], buffered, stats)
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
    keys = [_stat(abspath) for abspath in discovery.project.values()]
    stats.update(zip(relpaths, keys))
    h.update(repr(list(zip(relpaths, keys))).encode())  # one repr in C, not a string per file
    return h.digest(), max((key[0] for key in keys if key is not None), default=0)


def _lint(discovery: Discovery, config: Config, cache: FactCache, pool: _Pool,
          rules: list[Rule], buffered: Optional[Mapping[str, bytes]] = None,
          stats: Optional[Mapping[str, Optional[StatKey]]] = None) -> LintResult:
    mirrors, device = tuple(config.mirror_attributes), config.device_attribute
    model = analysis_model(config)
    limit = config.max_file_size
    scans: dict[str, ScanFacts] = {}
    deep: dict[str, DeepFacts] = {}
    failures: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for relpath, data in (buffered or {}).items():  # in memory, never cached
        scans[relpath] = scan(data, mirrors)
        deep[relpath] = analyze(data, mirrors, device, *model)

    to_scan = []
    for relpath, abspath in discovery.project.items():
        if relpath in scans:
            continue
        stat_now = stats[relpath] if stats and relpath in stats else _stat(abspath)
        if stat_now is not None:
            sizes[relpath] = stat_now[2]
        entry = cache.fresh(relpath, stat_now)
        if entry is not None and entry.scan is not None:
            scans[relpath] = entry.scan
            if entry.deep is not None:
                deep[relpath] = entry.deep
        else:
            old = cache.get(relpath)
            to_scan.append((relpath, abspath, old.digest if old is not None and old.scan is not None else None))
    # Largest first, in small tasks: the files a task analyses as well as scans cost
    # 100x the others, and a big one left for last keeps one core busy alone.
    to_scan.sort(key=lambda row: -sizes.get(row[0], 0))
    for relpath, stat_now, new_digest, facts, deep_facts, error in pool.map(
            _scan_job, to_scan, POOL_MIN_SCANS, mirrors, limit, device, model, chunk_size=96):
        if error is not None:
            failures[relpath] = error
            continue
        entry = cache.get(relpath)
        if facts is None and entry is not None:  # same bytes, new stat: keep the facts
            cache.put(relpath, Entry(stat_now, new_digest, entry.scan, entry.deep))
            scans[relpath] = entry.scan
            if entry.deep is not None:
                deep[relpath] = entry.deep
        else:
            cache.put(relpath, Entry(stat_now, new_digest, facts, deep_facts))
            scans[relpath] = facts
            if deep_facts is not None:
                deep[relpath] = deep_facts

    candidates = candidate_backend_names(scans, config.backend_bases, config.backend_classes)
    explicit = {t.relpath for t in discovery.targets if t.explicit}
    wanted = [
        relpath for relpath, facts in scans.items()
        if relpath not in deep and (
            relpath in explicit or facts.mentions_mirror or facts.mentions_flag or facts.mentions_suppression
            or any(name in candidates for name, _ in facts.classes))
    ]
    # Largest files first, a few per task: parse times differ by 100x between files.
    wanted.sort(key=lambda r: -sizes.get(r, 0))
    for relpath, stat_now, new_digest, facts, error in pool.map(
            _analyze_job, [(r, discovery.project[r]) for r in wanted], POOL_MIN_ANALYSES, mirrors, device,
            limit, model, chunk_size=4):
        _store_deep(cache, scans, deep, failures, relpath, stat_now, new_digest, facts, error)

    def load_on_demand(relpath: str) -> Optional[DeepFacts]:
        if relpath not in discovery.project:
            return None
        for row in _analyze_job([(relpath, discovery.project[relpath])], mirrors, device, limit, model):
            _store_deep(cache, scans, deep, failures, *row)
        return deep.get(relpath)

    def source_of(relpath: str) -> Optional[str]:
        if buffered and relpath in buffered:
            data = buffered[relpath]
        else:
            data = _read(discovery.project[relpath], limit)[0] if relpath in discovery.project else None
        try:
            return decode_source(data) if data is not None else None
        except (UnicodeDecodeError, SyntaxError, LookupError):
            return None

    index = ProjectIndex(dict(deep), module_names(discovery.project, config.src), config.backend_bases,
                         load_on_demand, source_of, device,
                         {rel: frozenset(name for name, _ in facts.classes) for rel, facts in scans.items()
                          if facts is not None and facts.classes}, config.backend_classes,
                         {rel: frozenset(facts.imported) for rel, facts in scans.items() if facts is not None})
    index.contract = Contract(index, config)
    diagnostics = [unreadable(display, message) for display, message in discovery.problems]
    diagnostics.extend(_check_files(discovery.targets, deep, failures, index, config, rules, pool.jobs))
    warnings = list(discovery.warnings)
    for target in discovery.targets:
        if target.explicit and target.relpath not in (buffered or {}) and sizes.get(target.relpath, -1) == 0:
            warnings.append(f"{target.display}: empty file, nothing to check")
    cache.save()
    return LintResult(sorted(diagnostics), len(discovery.targets), warnings, index, deep, discovery.targets)


# Below this many files with reads to judge, forking judges costs more than it saves.
POOL_MIN_JUDGED = 8


def _check_files(targets: list[Target], deep: dict, failures: dict, index: ProjectIndex, config: Config,
                 rules: list[Rule], jobs: int) -> list[Diagnostic]:
    """Every target's findings. Judging a read can follow its callers through the project
    (a tenth of a second for some), so the files that have reads to judge are spread
    over forked workers, each reading the index the parent built (fork shares it); the
    state every judgement needs is built once, before the fork."""
    def work(target: Target) -> int:
        facts = deep.get(target.relpath)
        if facts is None or facts.error is not None:
            return 0
        pulls = sum(len(c.facts.host_pulls) for c in index.classes_in(target.relpath).values())
        return pulls + sum(1 for a in facts.accesses if not a.guarded and a.usage != Usage.GUARD)

    costs = [work(t) for t in targets]
    heavy = sorted((i for i, c in enumerate(costs) if c), key=lambda i: -costs[i])
    results: dict[int, list[Diagnostic]] = {}
    if jobs > 1 and can_fork() and len(heavy) >= POOL_MIN_JUDGED and index.contract is not None:
        index.contract.prepare()
        state = (targets, deep, failures, index, config, rules)
        with process_pool(min(jobs, len(heavy)), _become_judge, (state,)) as executor:
            # one file per task, dearest first: a file whose reads send the judge up
            # its callers can cost 100x its neighbour, and the count of reads cannot
            # tell which (each worker keeps what it learnt about callers across tasks)
            futures = [executor.submit(_judge_job, [i]) for i in heavy]
            for future in futures:
                results.update(future.result())
    for i, target in enumerate(targets):
        if i not in results:
            results[i] = _check_file(target, deep.get(target.relpath), failures.get(target.relpath),
                                     index, config, rules)
    return [d for i in range(len(targets)) for d in results[i]]


_JUDGE_STATE: Optional[tuple] = None  # in a forked judge only: what `_check_files` shared with it


def _become_judge(state: tuple) -> None:
    global _JUDGE_STATE
    _JUDGE_STATE = state


def _judge_job(indices: list[int]) -> dict[int, list[Diagnostic]]:
    targets, deep, failures, index, config, rules = _JUDGE_STATE
    with _collector_paused():
        return {i: _check_file(targets[i], deep.get(targets[i].relpath), failures.get(targets[i].relpath),
                               index, config, rules) for i in indices}


def _store_deep(cache: FactCache, scans: dict, deep: dict, failures: dict, relpath: str,
                stat_now, new_digest, facts, error) -> None:
    if error is not None:
        failures[relpath] = error
        return
    deep[relpath] = facts
    entry = cache.get(relpath)
    scan_facts = scans.get(relpath) or (entry.scan if entry else None)
    if entry is not None and entry.digest != new_digest:
        scan_facts = None  # the file changed between the two phases; rescan next run
    if scan_facts is not None:
        cache.put(relpath, Entry(stat_now, new_digest, scan_facts, facts))


def _check_file(target: Target, facts: Optional[DeepFacts], failure: Optional[str], index: ProjectIndex,
                config: Config, rules: list[Rule]) -> list[Diagnostic]:
    if failure is not None:
        return [unreadable(target.display, failure)]
    if facts is None:
        return []  # scanned, and nothing in it can match a rule
    if facts.error is not None:
        line, col, message = facts.error
        return [unreadable(target.display, message, line, col)]
    suppressed = dict(facts.suppressions)
    ctx = FileContext(target.relpath, facts, index, config.device_attribute)
    wanted = {rule.CODE for rule in rules}
    found, fired = [], {}
    # Every rule runs, selected or not, so a marker for a deselected code is not "unused".
    for rule in _ALL_RULES:
        for finding in rule.check(ctx):
            fired.setdefault(finding.line, set()).add(rule.CODE)
            if rule.CODE not in wanted or not config.is_code_enabled(rule.CODE, target.relpath):
                continue
            if is_suppressed(suppressed, finding.line, rule.CODE):
                continue
            found.append(_diagnostic(target, rule, finding, config))
    unused = UnusedSuppression
    if unused.CODE in wanted and config.is_code_enabled(unused.CODE, target.relpath):
        found.extend(_diagnostic(target, unused, f) for f in unused_suppressions(suppressed, fired))
    return found


def _diagnostic(target: Target, rule, finding: Finding, config: Optional[Config] = None) -> Diagnostic:
    return Diagnostic(target.display, finding.line, finding.col + 1, rule.CODE, rule.NAME, finding.message,
                      rule.SEVERITY, finding.scope, finding.fix if rule.FIXABLE else None,
                      tuple((_shown(step.relpath, target, config), step.line, step.col + 1, step.message)
                            for step in finding.steps))


def _shown(relpath: str, target: Target, config: Optional[Config]) -> str:
    """A root-relative path as the finding's own path is shown (relative to the
    current directory, as given on the command line)."""
    if relpath == target.relpath:
        return target.display
    if config is None:
        return relpath
    return os.path.relpath(os.path.join(str(config.root), relpath)).replace(os.sep, "/")


def source_context(source: str, config: Optional[Config] = None, filename: str = "example.py",
                   whole_project: bool = True) -> FileContext:
    """Analyse one in-memory module as a project of its own (no I/O). With
    `whole_project=False` the module is one file of a project not seen: what other files
    may store or call is unknown, so no read is cleared by its type or its callers."""
    config = config or Config(root=Path("."))
    facts = analyze(source.encode(), config.mirror_attributes, config.device_attribute, *analysis_model(config))
    index = ProjectIndex({filename: facts}, module_names([filename]), config.backend_bases, lambda _: None,
                         {filename: source}.get, config.device_attribute, backend_classes=config.backend_classes)
    index.contract = Contract(index, config, whole_project=whole_project)
    return FileContext(filename, facts, index, config.device_attribute)


def lint_source(source: str, rules: Iterable[type[Rule]] = RULES, *, config: Optional[Config] = None,
                filename: str = "example.py") -> list[Diagnostic]:
    """Lint one in-memory module; the rule examples' test uses this."""
    config = config or Config(root=Path("."))
    ctx = source_context(source, config, filename)
    target = Target(filename, filename, filename, True)
    return sorted(_check_file(target, ctx.facts, None, ctx.index, config, [r() for r in rules]))


__all__ = ["LintResult", "lint_paths", "lint_source", "source_context"]
