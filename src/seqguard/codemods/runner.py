"""Runs `guard_mirror_reads` over a tree: lint finds the sites (SG002/SG003, the same
matcher), each file is rewritten in memory, checked, and written atomically."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Callable, Optional, Sequence

from seqguard.codemods.guard_mirror_reads import CodemodOptions, FileOutcome, guard_mirror_reads
from seqguard.config import Config
from seqguard.fileio import FileChangedError, atomic_write
from seqguard.lint.facts import analyze
from seqguard.lint.rules import OptOutReadsMirror, UnguardedMirrorRead
from seqguard.lint.runner import lint_paths

FIXED_CODES = (UnguardedMirrorRead.CODE, OptOutReadsMirror.CODE)


@dataclasses.dataclass
class FileReport:
    path: str
    abspath: str
    outcome: FileOutcome
    original: Optional[bytes] = None


@dataclasses.dataclass
class CodemodReport:
    files: list[FileReport]
    files_seen: int

    def count(self, status: str) -> int:
        return sum(f.outcome.status == status for f in self.files)


def codemod_options(config: Config, style: str, fallback: str) -> CodemodOptions:
    return CodemodOptions(style=style, fallback=fallback, device_attribute=config.device_attribute,
                          mirrors=tuple(config.mirror_attributes), templates=config.fallbacks)


def run_codemod(paths: Sequence[Path], config: Config, options: CodemodOptions, *, write: bool,
                use_cache: bool = True, jobs: Optional[int] = None,
                progress: Optional[Callable[[list], object]] = None,
                codes: Sequence[str] = FIXED_CODES) -> CodemodReport:
    """`codes`: the subset of FIXED_CODES whose sites to rewrite (`codemod --select/--ignore`)."""
    lint_config = dataclasses.replace(config, select=tuple(codes), ignore=())
    result = lint_paths(paths, lint_config, use_cache=use_cache, jobs=jobs, need_index=True,
                        rules=[UnguardedMirrorRead, OptOutReadsMirror])
    by_display = {t.display: t for t in result.targets}
    wanted: dict[str, set[tuple[int, int]]] = {}
    reports: list[FileReport] = []
    for diagnostic in result.diagnostics:
        if diagnostic.code == "SG000":
            reports.append(FileReport(diagnostic.path, diagnostic.path,
                                      FileOutcome("skipped", reason=diagnostic.message)))
        elif diagnostic.code in FIXED_CODES:
            wanted.setdefault(diagnostic.path, set()).add((diagnostic.line, diagnostic.column - 1))
    items = sorted(wanted.items())
    iterator = progress(items) if progress is not None else items
    for display, positions in iterator:
        target = by_display[display]
        reports.append(_one_file(target.display, target.abspath, positions, result.facts.get(target.relpath),
                                 config, options, write))
    reports.sort(key=lambda r: r.path)
    return CodemodReport(reports, result.files_checked)


def _one_file(display: str, abspath: str, positions: set[tuple[int, int]], facts, config: Config,
              options: CodemodOptions, write: bool) -> FileReport:
    try:
        with open(abspath, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return FileReport(display, abspath, FileOutcome("skipped", reason="file vanished during the run"))
    except OSError as e:
        return FileReport(display, abspath, FileOutcome("skipped", reason=f"cannot read: {e.strerror}"))
    current = analyze(data, config.mirror_attributes, config.device_attribute)
    if facts is None or current.accesses != facts.accesses:
        return FileReport(display, abspath, FileOutcome("skipped", reason="changed on disk during the run; rerun"))
    reads = [a for a in current.accesses if (a.line, a.col) in positions]
    outcome = guard_mirror_reads(data, reads, options)
    report = FileReport(display, abspath, outcome, data)
    if write and outcome.status == "changed":
        if not os.access(abspath, os.W_OK):
            report.outcome = dataclasses.replace(outcome, status="skipped", reason="read-only file; not written")
            return report
        try:
            atomic_write(abspath, outcome.new_data, expected=data)
        except FileChangedError:
            report.outcome = dataclasses.replace(outcome, status="skipped",
                                                 reason="changed on disk during the run; not written, rerun")
        except FileNotFoundError:
            report.outcome = dataclasses.replace(outcome, status="skipped", reason="file vanished during the run")
        except OSError as e:
            report.outcome = dataclasses.replace(outcome, status="skipped", reason=f"cannot write: {e.strerror}")
    return report
