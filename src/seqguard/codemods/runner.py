"""Runs `GuardMirrorReads` over a tree, fed with lint's whole-project facts: lint finds
the sites (SG002/SG003) and which backends opted out; only the files with sites are
parsed with libcst; each is rewritten in memory, checked, and written atomically."""

from __future__ import annotations

import dataclasses
import enum
import os
import warnings
from pathlib import Path
from typing import Callable, NamedTuple, Optional, Sequence

import libcst as cst
from libcst.codemod import CodemodContext

from seqguard.codemods.formatting import Formatter, format_edits, project_formatter
from seqguard.codemods.guard_mirror_reads import GuardMirrorReads
from seqguard.codemods.plan import GuardedRead
from seqguard.codemods.safety import GuardRefused
from seqguard.codemods.layout import configured_line_length
from seqguard.diagnostics import UNREADABLE_CODE
from seqguard.lint.analysis.source import decode_source
from seqguard.codemods.owners import Owners
from seqguard.codemods.sites import FIXED_CODES, project_sites
from seqguard.config import DEFAULT_DEVICE_ATTRIBUTE, DEFAULT_FLAG, DEFAULT_MIRRORS, Config
from seqguard.fileio import FileChangedError, WriteRefused, atomic_write, read_file
from seqguard.lint.facts import analyze
from seqguard.lint.cst_edits import failure_reason, module_bytes
from seqguard.lint.fixes import growth_problem
from seqguard.lint.rule import FileContext
from seqguard.lint.rules import OptOutReadsMirror, UnguardedMirrorRead
from seqguard.lint.phases import analysis_model
from seqguard.lint.runner import lint_paths
from seqguard.workers import process_pool


# what one file's failure asks of its user
_BY_HAND = "guard its reads by hand, or split the expression"
# Below this many files to rewrite, starting worker processes costs more than it saves.
POOL_MIN_FILES = 8


@dataclasses.dataclass(frozen=True)
class CodemodOptions:
    style: str = "inline"               # inline | helper
    fallback: str = "device"            # device | raise
    device_attribute: str = DEFAULT_DEVICE_ATTRIBUTE
    mirrors: tuple[str, ...] = DEFAULT_MIRRORS
    flag: str = DEFAULT_FLAG            # what a backend declares (the raise messages name it)
    templates: tuple[tuple[str, str], ...] = ()   # attr -> "expression using {obj}"
    line_length: Optional[int] = None   # None: the project's formatter setting, else 88
    formatter: str = "none"             # auto | ruff | black | none: what formats the edited lines


class Status(str, enum.Enum):
    """What happened to one file. str-valued: JSON reports and comparisons with the
    plain words (`"changed"`) stay as they were."""
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    SKIPPED = "skipped"   # left alone on purpose: read-only without --force, a link leading out
    FAILED = "failed"     # could not be done: unreadable, unparsable, refused by a safety check

    __str__ = str.__str__   # f"{status}" is the word on every Python (3.12 changed Enum.__format__)


@dataclasses.dataclass
class FileOutcome:
    status: Status
    new_data: Optional[bytes] = None
    sites: list[GuardedRead] = dataclasses.field(default_factory=list)
    manual: list[tuple[int, str]] = dataclasses.field(default_factory=list)  # (line, why) left as is
    reason: Optional[str] = None
    note: Optional[str] = None   # written, but: why its edits were not formatted


@dataclasses.dataclass
class FileReport:
    path: str                     # as shown: relative to the current directory
    abspath: str
    outcome: FileOutcome
    original: Optional[bytes] = None
    relpath: Optional[str] = None  # relative to the project root (diff headers: `git apply` there)


@dataclasses.dataclass
class CodemodReport:
    files: list[FileReport]
    files_seen: int
    formatter: Optional[str] = None          # what formatted the edits (ruff, black), if anything
    formatter_problem: Optional[str] = None  # why no formatter ran on the edits (none found, or not installed)
    model_warnings: list[str] = dataclasses.field(default_factory=list)  # the engine model's (a preset's name)

    def count(self, status: Status) -> int:
        return sum(f.outcome.status == status for f in self.files)


def codemod_options(config: Config, style: str, fallback: str, formatter: Optional[str] = None) -> CodemodOptions:
    return CodemodOptions(style=style, fallback=fallback, device_attribute=config.device_attribute,
                          mirrors=tuple(config.mirror_attributes), flag=config.flag_attribute,
                          templates=config.fallbacks,
                          line_length=configured_line_length(config.root), formatter=formatter or config.formatter)


def guard_source(data: bytes, sites, options: CodemodOptions, filename: Optional[str] = None) -> FileOutcome:
    """Guard `sites` (None: find them in this file alone) in one module's bytes."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = cst.parse_module(data)
    except cst.ParserSyntaxError as e:
        return FileOutcome(Status.FAILED, reason=f"cannot parse: {e.message} (line {e.raw_line})")
    except (UnicodeDecodeError, LookupError, SyntaxError) as e:
        return FileOutcome(Status.FAILED, reason=f"cannot decode: {e}")
    except Exception as e:  # RecursionError, MemoryError, libcst's own: this file alone fails
        return FileOutcome(Status.FAILED, reason=failure_reason(e, _BY_HAND))
    try:
        source = decode_source(data)
    except (UnicodeDecodeError, LookupError, SyntaxError):
        source = None
    command = GuardMirrorReads(CodemodContext(filename=filename), fallback=options.fallback, style=options.style,
                               fresh_parse=True, source=source,
                               template=dict(options.templates), device_attribute=options.device_attribute,
                               mirror=options.mirrors, line_length=options.line_length, sites=sites,
                               flag=options.flag)
    try:
        new = command.transform_module(module)
        new_data = module_bytes(new, data)
    except GuardRefused as e:
        return FileOutcome(Status.FAILED, reason=str(e), manual=command.manual)
    except Exception as e:  # a KeyError from libcst unwinding a RecursionError, say: this file alone fails
        return FileOutcome(Status.FAILED, reason=failure_reason(e, _BY_HAND), manual=command.manual)
    if new_data == data:
        return FileOutcome(Status.UNCHANGED, manual=command.manual)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(new_data, filename or "<seqguard>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:  # never write code that does not compile
        return FileOutcome(Status.FAILED, reason=f"the guarded file would not compile ({e}); not written",
                           manual=command.manual)
    return FileOutcome(Status.CHANGED, new_data, command.sites, command.manual)


def run_codemod(paths: Sequence[Path], config: Config, options: CodemodOptions, *, write: bool,
                use_cache: bool = True, jobs: Optional[int] = None,
                progress: Optional[Callable[[list], object]] = None,
                codes: Sequence[str] = FIXED_CODES, force: bool = False) -> CodemodReport:
    """`codes`: the subset of FIXED_CODES whose sites to rewrite (`codemod --select/--ignore`).
    `force`: rewrite read-only files too (`codemod --force`)."""
    lint_config = dataclasses.replace(config, select=tuple(codes), ignore=())
    result = lint_paths(paths, lint_config, use_cache=use_cache, jobs=jobs, need_index=True,
                        rules=[UnguardedMirrorRead, OptOutReadsMirror])
    by_display = {t.display: t for t in result.targets}
    wanted: dict[str, set[tuple[int, int]]] = {}
    reports: list[FileReport] = []
    for diagnostic in result.diagnostics:
        if diagnostic.code == UNREADABLE_CODE:
            reports.append(FileReport(diagnostic.path, diagnostic.path,
                                      FileOutcome(Status.FAILED, reason=diagnostic.message)))
        elif diagnostic.code in FIXED_CODES:
            wanted.setdefault(diagnostic.path, set()).add((diagnostic.line, diagnostic.column - 1))
    tasks: list[FileTask] = []
    first_name: dict[tuple[int, int], str] = {}
    owners = Owners(result.index)
    for display, positions in sorted(wanted.items(), key=lambda item: (_is_link(by_display[item[0]].abspath),
                                                                      item[0])):
        target = by_display[display]
        inode = _inode(target.abspath)
        if inode is not None and inode in first_name:
            # Two names of one file (hard links, or a symlink beside its target): edit it
            # once, through the first name; a second edit would find it changed.
            reports.append(
                FileReport(
                    display,
                    target.abspath,
                    FileOutcome(
                        Status.UNCHANGED,
                        reason=f"the same file as {first_name[inode]} (a link); rewritten through that name",
                    ),
                )
            )
            continue
        if inode is not None:
            first_name[inode] = display
        facts = result.facts.get(target.relpath)
        sites = None if facts is None else project_sites(
            FileContext.of(target.relpath, facts, result.index, result.contract, config), positions, owners)
        tasks.append(FileTask(display, target.abspath, None if facts is None else facts.accesses, sites))
    root = str(config.root)
    formatter, formatter_problem = project_formatter(config.root, options.formatter)
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    arguments = (config, options, write, force, root, formatter)
    if workers > 1 and len(tasks) >= POOL_MIN_FILES:
        # libcst parses at a few thousand lines a second: spread the files over the cores.
        lost: list[FileTask] = []   # a worker died (a crash in native code, the OOM killer)
        with process_pool(min(workers, len(tasks))) as pool:
            futures = {pool.submit(_one_file_safely, task, *arguments): task for task in tasks}
            for future in _shown(progress, list(futures)):
                try:
                    reports.append(future.result())
                except Exception:  # BrokenProcessPool: every file still queued lost its worker too
                    lost.append(futures[future])
        # each in a process of its own: the file that killed the worker fails alone
        reports.extend(_in_own_process(task, arguments) for task in lost)
    else:
        for task in _shown(progress, tasks):
            reports.append(_one_file_safely(task, *arguments))
    for r in reports:
        r.relpath = by_display[r.path].relpath if r.path in by_display else r.path
    reports.sort(key=lambda r: r.path)
    # a named path that does not exist is a skipped file too, not one fewer unchanged
    missing = sum(1 for d in result.diagnostics if d.code == UNREADABLE_CODE and d.path not in by_display)
    # why nothing formatted the edits matters only where there were edits
    edited = any(r.outcome.status is Status.CHANGED for r in reports)
    return CodemodReport(reports, result.files_checked + missing,
                         formatter.name if formatter is not None else None, formatter_problem if edited else None,
                         result.model_warnings)


def _inode(path: str) -> Optional[tuple[int, int]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _is_link(path: str) -> bool:
    return os.path.islink(path)


def _shown(progress, items: list):
    """`items`, through the progress display when there is one (click's bar must be
    entered before it is iterated)."""
    shown = progress(items) if progress is not None else items
    if hasattr(shown, "__enter__"):
        with shown as bar:
            yield from bar
    else:
        yield from shown


class FileTask(NamedTuple):
    """One file for a codemod worker: where it is, the reads lint found in it (to tell
    whether it changed since), and the sites to guard (None: nothing to do)."""
    display: str
    abspath: str
    accesses: Optional[tuple]
    sites: Optional[list]


def _in_own_process(task: FileTask, arguments: tuple) -> FileReport:
    try:
        with process_pool(1) as pool:
            return pool.submit(_one_file_safely, task, *arguments).result()
    except Exception as e:
        return FileReport(task.display, task.abspath, FileOutcome(
            Status.FAILED, reason=f"the process rewriting it died ({type(e).__name__}); not written, {_BY_HAND}"))


def _one_file_safely(task: FileTask, *arguments) -> FileReport:
    """`_one_file`, with whatever goes wrong in it one failed file: the run goes on."""
    try:
        return _one_file(task, *arguments)
    except Exception as e:
        return FileReport(task.display, task.abspath, FileOutcome(Status.FAILED, reason=failure_reason(e, _BY_HAND)))


def _one_file(task: FileTask, config: Config, options: CodemodOptions, write: bool, force: bool = False,
              root: Optional[str] = None, formatter: Optional[Formatter] = None) -> FileReport:
    display, abspath, accesses, sites = task
    read = read_file(abspath)
    if read.data is None:
        return FileReport(display, abspath, FileOutcome(Status.FAILED, reason=read.error))
    data = read.data
    current = analyze(data, config.mirror_attributes, config.device_attribute, *analysis_model(config))
    if sites is None or current.accesses != accesses:
        return FileReport(display, abspath, FileOutcome(Status.FAILED, reason="changed on disk during the run; rerun"))
    outcome = guard_source(data, sites, options, abspath)
    if outcome.status is Status.CHANGED and formatter is not None:
        formatted, note = format_edits(data, outcome.new_data, abspath, root, formatter)
        outcome = dataclasses.replace(outcome, new_data=formatted, note=note)
    if outcome.status is Status.CHANGED:
        problem = growth_problem(outcome.new_data, config.max_file_size)
        if problem:
            outcome = dataclasses.replace(outcome, status=Status.FAILED, new_data=None, sites=[], reason=problem)
    report = FileReport(display, abspath, outcome, data)
    if write and outcome.status is Status.CHANGED:
        try:
            atomic_write(abspath, outcome.new_data, expected=data, force=force, root=root)
        except WriteRefused as e:
            # read-only without --force (by its mode bits, whoever runs this: root's own W_OK
            # says yes to a 0444 file), a link leading outside, an owner we cannot keep
            report.outcome = dataclasses.replace(outcome, status=Status.SKIPPED, reason=e.strerror)
        except FileChangedError:
            report.outcome = dataclasses.replace(outcome, status=Status.FAILED,
                                                 reason="changed on disk during the run; not written, rerun")
        except FileNotFoundError:
            report.outcome = dataclasses.replace(outcome, status=Status.FAILED, reason="file vanished during the run")
        except OSError as e:
            report.outcome = dataclasses.replace(outcome, status=Status.FAILED, reason=f"cannot write: {e.strerror}")
    return report
