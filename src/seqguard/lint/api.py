"""`seqguard lint` as one call (Fixit's `api.py` is the model): the options in, the
findings rendered, the lines for stderr and the exit code out. The run is the
sequence a user asks for with the flags: lint, then `--fix` (and lint again), or
`--write-baseline`, or `--add-ignore` (and lint again), then the baseline's filter and
the report. The CLI parses the options, calls `run_lint` and prints what it returns;
a library or an editor integration calls the same function."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Optional, Sequence

from seqguard.config import Config
from seqguard.lint.discovery import exclusion_warnings
from seqguard.lint.runner import LintResult, lint_paths

if TYPE_CHECKING:
    from seqguard.lint.baseline import Written


@dataclasses.dataclass(frozen=True)
class LintOptions:
    output_format: str = "full"           # full | concise | json | sarif | github (formats.OUTPUT_FORMATS)
    show_reasons: bool = False            # full, concise, github: why each finding holds
    fix: bool = False
    diff: bool = False                    # print what --fix would write; write nothing
    write_baseline: Optional[Path] = None
    # (key, value, option): what this command line set that changes what a finding is
    # (the engine model, the project's files); --write-baseline records it in [tool.seqguard]
    record: tuple[tuple[str, object, str], ...] = ()
    add_ignore: bool = False
    force: bool = False                   # --fix / --add-ignore edit read-only files too
    statistics: bool = False
    exit_zero: bool = False
    use_cache: bool = True
    jobs: Optional[int] = None
    buffers: Mapping[Path, bytes] = dataclasses.field(default_factory=dict)  # path -> unsaved text
    # ("exclude" | "extend-exclude", pattern) -> the option that gave it, for the warnings
    named_by: Mapping[tuple[str, str], str] = dataclasses.field(default_factory=dict)
    # told what the run is doing ("checking 4,719 files"), for a progress line
    progress: Optional[Callable[[str], None]] = None

    def __post_init__(self) -> None:
        from seqguard.lint.formats import OUTPUT_FORMATS

        if self.output_format == "text":  # the name before Ruff's: the full format, for one more release
            object.__setattr__(self, "output_format", "full")
        if self.output_format not in OUTPUT_FORMATS:
            raise ValueError(f"output_format: expected one of {', '.join(OUTPUT_FORMATS)}, "
                             f"got {self.output_format!r}")


@dataclasses.dataclass
class LintRun:
    output: str                  # the report (or the diff), for stdout or --output-file
    problems: list[str]          # lines for stderr at once, each with its own `error:`/`warning:`
    warnings: list[str]          # lines for stderr, `warning: ` to be put before each
    notes: list[str]             # the summary lines for stderr
    exit_code: int


def _baselines():
    """The baseline module, imported for a run that uses one (tokenize, tomlkit)."""
    from seqguard.lint import baseline

    return baseline


def run_lint(paths: Sequence[Path], config: Config, options: LintOptions) -> LintRun:
    """Raises baseline.BaselineError or fileio.FileChangedError (one line each)."""
    buffers = dict(options.buffers)
    problems: list[str] = []
    notes: list[str] = []

    def reported(result: LintResult) -> list:
        """The findings the run reports: those the baseline does not hold (what --fix,
        --diff and --add-ignore act on, as a baseline promises to leave old code be)."""
        if config.baseline is None:
            return result.diagnostics
        return _baselines().filter_findings(result.diagnostics, result.targets, config.baseline, buffers,
                                            config.root, config=config).diagnostics

    result = lint_paths(paths, config, use_cache=options.use_cache, jobs=options.jobs, buffers=buffers,
                        progress=options.progress)
    warnings = exclusion_warnings(paths, config, [t.abspath for t in result.targets], named_by=options.named_by,
                                  buffered=buffers.keys())
    # fixes.py and suppress.py load libcst (0.17 s): imported only when they run
    if options.diff:
        from seqguard.lint.fixes import diff_fixes

        shown = diff_fixes(reported(result), result.targets)
        word = "fix" if shown.count == 1 else "fixes"
        return LintRun(shown.text, problems, warnings + shown.warnings + list(result.warnings),
                       [f"seqguard: {shown.count} {word} would be applied"], 1 if shown.count else 0)
    fixed = 0
    if options.fix:
        from seqguard.lint.fixes import apply_fixes

        applied = apply_fixes(reported(result), result.targets, force=options.force,
                              max_file_size=config.max_file_size)
        problems += [f"error: {error}" for error in applied.errors]
        fixed = applied.count
        if fixed:
            result = lint_paths(paths, config, use_cache=options.use_cache, jobs=options.jobs,
                                progress=options.progress)
    if options.write_baseline is not None:
        written = _baselines().write_for(result.diagnostics, result.targets, options.write_baseline, config,
                                         [_baselines().Setting(*s) for s in options.record])
        notes.append(baseline_written(written, options.write_baseline))
        return LintRun("", problems, warnings + list(result.warnings), notes, 0)
    if options.add_ignore:
        from seqguard.lint.suppress import add_ignores_to_files

        added = add_ignores_to_files(reported(result), result.targets, force=options.force)
        problems += [f"{level}: {problem}" for level, problem in added.problems]
        if added.count:
            result = lint_paths(paths, config, use_cache=options.use_cache, jobs=options.jobs,
                                progress=options.progress)
        notes.append(f"seqguard: added suppressions on {added.count} line(s)")
    diagnostics, baselined, moved = result.diagnostics, 0, 0
    lines_of: dict[str, list[str]] = {}  # each file's lines, read once for the baseline and SARIF
    if config.baseline is not None:
        kept = _baselines().filter_findings(result.diagnostics, result.targets, config.baseline, buffers, config.root,
                                            lines_of, config)
        diagnostics, baselined, moved = kept.diagnostics, kept.baselined, kept.moved
        warnings += kept.stale + ([kept.migrated] if kept.migrated else [])
    output = _render(diagnostics, result, config, options, lines_of)
    notes.append(summary(diagnostics, result.files_checked, fixed, baselined, moved))
    fails = any(d.severity.fails for d in diagnostics) and not options.exit_zero
    return LintRun(output, problems, warnings + list(result.warnings), notes, 1 if fails else 0)


def _render(diagnostics: list, result: LintResult, config: Config, options: LintOptions,
            lines_of: dict[str, list[str]]) -> str:
    from seqguard.lint import formats

    if options.statistics:
        return formats.render_statistics(diagnostics, options.output_format)
    if options.output_format == "full":
        return formats.render_full(diagnostics, formats.source_reader(result.targets, options.buffers,
                                                                      config.max_file_size), options.show_reasons)
    if options.output_format == "concise":
        return formats.render_concise(diagnostics, options.show_reasons)
    if options.output_format == "github":
        return formats.render_github(diagnostics, options.show_reasons)
    if options.output_format == "json":
        return formats.render_json(diagnostics)
    placements = None  # a buffer's fixes would be placed by the file on disk: none then
    if not options.buffers and any(d.fix is not None for d in diagnostics):
        from seqguard.lint.cache import PlacementCache
        from seqguard.lint.fixes import exact_placements

        placements = exact_placements(diagnostics, result.targets, PlacementCache(config.root, options.use_cache))
    context = formats.SarifContext(str(config.root), {t.display: t.relpath for t in result.targets},
                                   _baselines().fingerprints(diagnostics, result.targets, options.buffers, lines_of))
    return formats.render_sarif(diagnostics, placements, context)


def summary(diagnostics, files_checked: int, fixed: int, baselined: int = 0, moved: int = 0) -> str:
    counts = {s: 0 for s in ("error", "warning", "info")}
    for d in diagnostics:
        counts[d.severity.value] += 1
    fixable = sum(d.fixable for d in diagnostics)
    parts = [f"{counts['error']} error(s)", f"{counts['warning']} warning(s)", f"{counts['info']} info"]
    tail = f"; {fixable} fixable with --fix" if fixable else ""
    done = f"; fixed {fixed}" if fixed else ""
    done += f"; {baselined} in the baseline" if baselined else ""
    done += f" ({moved} finding{'' if moved == 1 else 's'} moved to another file)" if moved else ""
    word = "file" if files_checked == 1 else "files"
    return f"seqguard: {files_checked} {word} checked: {', '.join(parts)}{tail}{done}"


def baseline_written(written: "Written", path: Path) -> str:
    import os

    line = f"seqguard: wrote {written.count} finding{'' if written.count == 1 else 's'} to {path}"
    changed = [f"{r.line} {r.outcome}" for r in written.recorded if r.outcome != "unchanged"]
    if changed:
        shown = os.path.relpath(written.pyproject)  # paths relative to the current directory, as findings are
        line += f"; {', '.join(changed)} in [tool.seqguard] of {shown}"
    return line
