"""The `seqguard` command line. All terminal I/O lives here. Each command parses its
options, calls one function (`lint.api.run_lint`, `codemods.runner.run_codemod`,
`lint.explain.explain_locations`, `bench`'s runner) and prints what it returns; its
length is the options' declarations and help."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import sys
import textwrap
from pathlib import Path
from typing import NoReturn, Optional, Sequence

import click

from seqguard import __version__
from seqguard.config import Config, ConfigError, load_config

# `lint --output-format`'s values, the default first (lint.formats.OUTPUT_FORMATS; listed
# here so that parsing the command line imports no renderer).
OUTPUT_FORMATS = ("full", "concise", "json", "sarif", "github")
# `--format`, the option's name before Ruff's, kept for one release: its `text` (the
# default it had) is the new default, `full`.
LEGACY_FORMATS = {"text": "full", "json": "json", "sarif": "sarif", "github": "github"}


def _split(values: Sequence[str]) -> tuple[str, ...]:
    """Repeatable options that also take comma-separated lists (Ruff's habit)."""
    return tuple(c.strip() for v in values for c in v.split(",") if c.strip())


def _split_codes(values: Sequence[str], option: str) -> Optional[tuple[str, ...]]:
    """Validated, upper-cased codes or prefixes; an unknown one is exit 2, naming it."""
    from seqguard.config import parse_codes, unknown_codes_message

    codes, unknown = parse_codes(_split(values))
    if unknown:
        _fail(f"{option}: {unknown_codes_message(unknown)}")
    return codes or None


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


@contextlib.contextmanager
def _internal_errors(debug: bool):
    """The last line of defence: an unexpected error is one line and exit 2, or the
    traceback with --debug. Expected problems are handled (and worded) before this."""
    try:
        yield
    except (KeyboardInterrupt, SystemExit, click.exceptions.Exit):
        raise
    except ConfigError as error:   # the engine model checked against the project, once indexed
        _fail(str(error))
    except Exception as error:  # noqa: BLE001
        if debug:
            raise
        click.echo(f"error: internal error: {type(error).__name__}: {error}; rerun with --debug and report it",
                   err=True)
        sys.exit(2)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="seqguard")
def main() -> None:
    """Keep the optional host mirror of sequence lengths honest.

    \b
    lint     find backends without `needs_cpu_seq_lens` and unguarded mirror reads
    explain  say why a line is reported, or why it is not
    codemod  rewrite reads so they survive a None mirror
    graph    draw the attention-backend hierarchy and where each flag comes from
    bench    measure a speculative serving loop with and without the host mirror
    rules    explain every rule
    """


_SHORT_LIVED = {"lint", "explain", "codemod", "graph", "rules"}  # commands that end with their one run


def entry_point() -> NoReturn:
    """The `seqguard` console script and `python -m seqguard`: run the command, then
    leave without collecting the heap it built. Python's own exit ends with a cycle
    collection over every object the run made (a lint of SGLang holds millions, in
    cycles): 0.3 s that a pre-commit hook would pay on every commit, for nothing. So
    the heap is frozen (`gc.freeze`: the collector never visits frozen objects again)
    and the interpreter then exits as usual: threads are joined, every exit handler
    runs (a killed write's temp file is removed by one, a host tool's may be
    anything), output is flushed and the status is the command's. Leaving with
    `os._exit` instead would save 4 ms more and skip all of that. Called in-process
    (tests, an embedding tool), `main` exits as usual.

    For the same reason an analysis runs with the cycle collector off: the process
    ends when the command does, and the collector would walk the whole growing heap
    on each burst of allocations for cycles that are never worth freeing before then.
    `bench` serves for minutes and keeps it on."""
    import gc

    if len(sys.argv) > 1 and sys.argv[1] in _SHORT_LIVED:
        gc.disable()
    try:
        main(prog_name="seqguard")
    finally:
        for stream in (sys.stdout, sys.stderr):
            _flush_or_drop(stream)
        gc.freeze()
    sys.exit(0)  # not reached: click's standalone mode always ends in SystemExit


def _flush_or_drop(stream) -> None:
    """Flush `stream` now; if its reader went away (`| head`), drop what is left so that
    the interpreter's own flush at exit has nothing to fail on and the status stays the
    command's."""
    if stream is None:  # `>&-`: Python runs with no stream at all
        return
    try:
        stream.flush()
    except ValueError:
        pass  # closed: nothing left to flush, and the interpreter will not try
    except OSError:
        from seqguard.fileio import point_at_devnull

        point_at_devnull(stream)


@dataclasses.dataclass(frozen=True)
class AnalysisArgs:
    """The options lint, explain, codemod and graph share (`analysis_options`): where
    the configuration is, what replaces its engine model and file selection, and how
    to run. `load` turns them into the run's Config, the same way for every command."""
    config_file: Optional[Path] = None
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    preset: Optional[str] = None
    backend_bases: tuple[str, ...] = ()
    mirror_attributes: tuple[str, ...] = ()
    device_attribute: Optional[str] = None
    flag_attribute: Optional[str] = None
    no_cache: bool = False
    jobs: Optional[int] = None
    debug: bool = False

    def overrides(self) -> dict:
        """The [tool.seqguard] keys these options replace (None keeps the file's)."""
        return {"backend_bases": tuple(self.backend_bases) or None,
                "mirror_attributes": tuple(self.mirror_attributes) or None,
                "device_attribute": self.device_attribute, "flag_attribute": self.flag_attribute,
                "exclude": _split(self.exclude) or None, "preset": self.preset}

    def load(self, paths: Sequence[Path], **more) -> Config:
        """The configuration of the project `paths` are in, these options (and `more`
        [tool.seqguard] fields, lint's) applied; a problem is one line and exit 2."""
        try:
            config = load_config(paths, self.config_file, {**self.overrides(), **more})
        except ConfigError as e:
            _fail(str(e))
        if self.extend_exclude:
            config = dataclasses.replace(config, extend_exclude=config.extend_exclude + _split(self.extend_exclude))
        return config

    def named_by(self) -> dict[tuple[str, str], str]:
        """So that a skipped path's warning names the option, not the file, for the
        patterns given on the command line."""
        return {**{("exclude", p): "--exclude" for p in _split(self.exclude)},
                **{("extend-exclude", p): "--extend-exclude" for p in _split(self.extend_exclude)}}

    def settings_to_record(self, config: Config) -> tuple:
        """(key, value, option) for each option of this command line that changes what
        a finding is: the engine model (--preset, --backend-base, ...) and which files
        make up the project (--exclude, --extend-exclude: the index of classes and
        callers is built from them). `--write-baseline` records them, so the next plain
        run finds what the baseline holds. Paths, --select and --ignore only choose which
        findings to look at: a baseline written under them keeps the entries they leave
        out, and they are not recorded."""
        from seqguard.config import KEYS, OPTION_KEYS, SECTION_FILES

        overrides = self.overrides()
        given = [(field, key, option) for field, (key, option) in OPTION_KEYS.items()
                 if overrides.get(field) is not None]
        if self.preset is not None:
            given.append(("preset", "preset", "--preset"))
        if _split(self.extend_exclude):
            given.append(("extend_exclude", "extend-exclude", "--extend-exclude"))
        # the engine model first, then which files are read; each in the order --help lists them
        given.sort(key=lambda g: (KEYS[g[1]].section == SECTION_FILES, _ANALYSIS_FIELDS.index(g[0])))
        chosen = []
        for field, key, option in given:
            value = getattr(config, field)
            chosen.append((key, list(value) if isinstance(value, tuple) else value, option))
        return tuple(chosen)


_ANALYSIS_FIELDS = tuple(f.name for f in dataclasses.fields(AnalysisArgs))


def analysis_options(function):
    """Options lint, codemod, explain and graph share: configuration and what to
    analyse. The command receives them as one value, `analysis` (an AnalysisArgs)."""
    options = [
        click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False),
                     help="pyproject.toml to read [tool.seqguard] from (default: nearest one)."),
        click.option("--exclude", "exclude", multiple=True, metavar="PATTERNS",
                     help="Globs (root-relative, comma-separated, repeatable) to skip; replaces `exclude` "
                          "in [tool.seqguard]."),
        click.option("--extend-exclude", "extend_exclude", multiple=True, metavar="PATTERNS",
                     help="Globs to skip in addition to `exclude` and `extend-exclude`."),
        click.option("--preset", metavar="NAME|PATH",
                     help="Engine model: one bundled with seqguard (sglang), or the path of a TOML model file with "
                          "the same keys; [tool.seqguard] keys override it."),
        click.option("--backend-base", "backend_bases", multiple=True, metavar="NAME",
                     help="Attention-backend base class, plain or qualified (pkg.mod.Class); repeatable."),
        click.option("--mirror-attribute", "mirror_attributes", multiple=True, metavar="NAME",
                     help="Host-mirror attribute name (default seq_lens_cpu, seq_lens_sum); repeatable."),
        click.option("--device-attribute", metavar="NAME", help="Device-side sibling (default seq_lens)."),
        click.option("--flag-attribute", metavar="NAME",
                     help="What a backend declares to keep the mirror (default needs_cpu_seq_lens)."),
        click.option("--no-cache", is_flag=True,
                     help="Neither read nor write the cache (in the user cache directory)."),
        click.option("--jobs", "-j", type=click.IntRange(min=1), help="Worker processes (default: all cores)."),
        click.option("--debug", is_flag=True, help="Show tracebacks for internal errors."),
    ]

    @functools.wraps(function)
    def command(**params):
        analysis = AnalysisArgs(**{name: params.pop(name) for name in _ANALYSIS_FIELDS})
        return function(**params, analysis=analysis)

    for option in reversed(options):
        command = option(command)
    return command


def as_one_value(cls):
    """Hands a command its whole parsed command line as one frozen `cls` value (its
    fields named as the parameters click passes) instead of a parameter per option."""
    def decorate(function):
        @functools.wraps(function)
        def command(**params):
            return function(cls(**params))
        return command
    return decorate


def _use_cache(no_cache: bool, quiet: bool = False) -> bool:
    """Whether to use the cache: not with --no-cache, nor (one warning line) when
    $SEQGUARD_CACHE_DIR is relative."""
    if no_cache:
        return False
    from seqguard.lint.cache import cache_dir_problem

    problem = cache_dir_problem()
    if problem is not None and not quiet:
        click.echo(f"warning: {problem}", err=True)
    return problem is None


def _exclusion_warnings(paths: Sequence[Path], config, checked: Optional[Sequence[str]] = None,
                        folders: bool = True, named_by: Optional[dict] = None) -> list[str]:
    from seqguard.lint.discovery import exclusion_warnings

    return exclusion_warnings(paths, config, checked, folders, named_by=named_by)


def _existing(paths: list) -> list:
    """`paths`, or one line and exit 2 when one is not there: a path that is not there
    is a mistyped command, not a file to skip (every command says it the same way)."""
    from seqguard.lint.discovery import missing_paths

    problem = missing_paths(paths)
    if problem is not None:
        _fail(problem)
    return paths


def _stdin_mode(paths: tuple, stdin_filename: Optional[Path]) -> bool:
    if paths == (Path("-"),) or (stdin_filename is not None and not paths):
        return True
    if Path("-") in paths:
        _fail("`-` (read stdin) must be the only path; name the file with --stdin-filename")
    if stdin_filename is not None:
        _fail("--stdin-filename: expected `-` as the only path (the buffer is read from stdin)")
    return False


@dataclasses.dataclass(frozen=True)
class LintArgs:
    """`lint`'s command line, as parsed (the options are declared above `lint`)."""
    paths: tuple[Path, ...]
    select: tuple[str, ...]
    ignore: tuple[str, ...]
    output_format: Optional[str]
    legacy_format: Optional[str]
    show_reasons: bool
    fix: bool
    show_diff: bool
    baseline_file: Optional[Path]
    write_baseline: Optional[Path]
    add_ignore: bool
    force: bool
    statistics: bool
    exit_zero: bool
    output_file: Optional[Path]
    quiet: bool
    stdin_filename: Optional[Path]
    analysis: AnalysisArgs


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--select", multiple=True, metavar="CODES",
              help="Only these codes or prefixes (comma-separated, case-insensitive; ALL for every code).")
@click.option("--ignore", multiple=True, metavar="CODES", help="Skip these codes or prefixes (comma-separated).")
@click.option("--output-format", "output_format", type=click.Choice(OUTPUT_FORMATS), default=None,
              help="full (default): each finding with its source line; concise: one line each; json; sarif; "
                   "github (workflow annotations).")
@click.option("--format", "legacy_format", type=click.Choice(list(LEGACY_FORMATS)), default=None, hidden=True,
              help="Deprecated: use --output-format (text is full).")
@click.option("--show-reasons", is_flag=True,
              help="Say why each finding holds (always in json and sarif); `seqguard explain PATH:LINE` says more.")
@click.option("--fix", is_flag=True, help="Apply fixes (SG001: write the inherited flag explicitly).")
@click.option("--diff", "show_diff", is_flag=True,
              help="Print the fixes as a unified diff and write nothing (implies --fix); exit 1 if any would apply.")
@click.option("--baseline", "baseline_file", type=click.Path(path_type=Path, dir_okay=False),
              help="Report only findings not recorded in this baseline (also `baseline` in [tool.seqguard]).")
@click.option("--write-baseline", "write_baseline", type=click.Path(path_type=Path, dir_okay=False),
              help="Record today's findings in FILE (pruning entries no longer found), set `baseline = FILE` "
                   "and the engine-model and exclude options given here in [tool.seqguard], exit 0.")
@click.option("--add-ignore", is_flag=True, help="Append `# seqguard: ignore[CODE]` to every flagged line.")
@click.option("--force", is_flag=True,
              help="With --fix or --add-ignore: also edit read-only files (their mode is kept).")
@click.option("--statistics", is_flag=True, help="Count findings per code instead of listing them.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings (2 still means an error).")
@click.option("-o", "--output-file", type=click.Path(path_type=Path, dir_okay=False),
              help="Write findings (or statistics, or the diff) to this file instead of stdout.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only: no summary, no warnings.")
@click.option("--stdin-filename", type=click.Path(path_type=Path, dir_okay=False),
              help="With `-` as the path: the file the stdin buffer stands for (it replaces that file; the rest "
                   "of its project is read from disk).")
@analysis_options
@as_one_value(LintArgs)
def lint(args: LintArgs) -> None:
    """Report broken host-mirror contracts in PATHS (default: the current directory;
    `-` reads one file from stdin)."""
    deprecated = []
    output_format = args.output_format
    if args.legacy_format is not None:
        if output_format is not None:
            _fail("--format: cannot be combined with --output-format; use --output-format alone")
        output_format = LEGACY_FORMATS[args.legacy_format]
        deprecated.append(f"--format is deprecated and goes in the next release; use --output-format {output_format}"
                          + (" (or concise, one line per finding)" if args.legacy_format == "text" else ""))
    output_format = output_format or "full"
    buffers = {}
    if _stdin_mode(args.paths, args.stdin_filename):
        for flag, used in (("--fix", args.fix), ("--diff", args.show_diff), ("--add-ignore", args.add_ignore),
                           ("--write-baseline", args.write_baseline is not None)):
            if used:
                _fail(f"{flag}: cannot be used on stdin; run it on the file")
        name = args.stdin_filename or Path("-")
        buffers = {name: sys.stdin.buffer.read()}
        paths = [name]
        config_paths = [name if name.exists() else name.parent]
    else:
        paths = _existing(list(args.paths) or [Path(".")])
        config_paths = paths
    analysis = args.analysis
    config = analysis.load(config_paths, select=_split_codes(args.select, "--select"),
                           ignore=_split_codes(args.ignore, "--ignore"),
                           # absolute, not resolved: a link in a loop is the baseline's error to name, not a traceback
                           baseline=Path(os.path.abspath(args.baseline_file)) if args.baseline_file else None)
    from seqguard.fileio import FileChangedError
    from seqguard.lint.api import LintOptions, run_lint

    progress = _progress_line(args.quiet)
    options = LintOptions(output_format=output_format, show_reasons=args.show_reasons, fix=args.fix,
                          diff=args.show_diff, write_baseline=args.write_baseline,
                          record=analysis.settings_to_record(config), add_ignore=args.add_ignore, force=args.force,
                          statistics=args.statistics, exit_zero=args.exit_zero,
                          use_cache=_use_cache(analysis.no_cache, args.quiet), jobs=analysis.jobs, buffers=buffers,
                          named_by=analysis.named_by(), progress=progress and progress.update)
    with _internal_errors(analysis.debug):
        try:
            with progress or contextlib.nullcontext():
                run = run_lint(paths, config, options)
        except FileChangedError as error:
            _fail(str(error))
        except Exception as error:
            # the baseline module loads only for a run that uses one; so does its error
            from seqguard.lint.baseline import BaselineError

            if not isinstance(error, BaselineError):
                raise
            _fail(str(error))
    for problem in run.problems:
        click.echo(problem, err=True)
    if run.output or args.write_baseline is None:
        _write_output(run.output, args.output_file)
    _echo_stderr(deprecated + run.warnings, run.notes, args.quiet)
    sys.exit(run.exit_code)


class ProgressLine:
    """A line on stderr saying what a long run is doing (`seqguard: checking 4,719
    files... 6 s`): drawn once the run has taken `delay` seconds, redrawn in place every
    `interval`, erased when the run ends, so that what follows starts on a clean line.
    A thread draws it, since one step of a run (a parse, a pool's batch) can take
    seconds with no call to report from; the run only sets `text`."""

    def __init__(self, stream, delay: float = 2.0, interval: float = 0.5, clock=None) -> None:
        import threading
        import time

        self.stream = stream
        self.delay, self.interval = delay, interval
        self.clock = clock or time.monotonic
        self.text = "working"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="seqguard-progress")
        self._drawn = 0   # columns on the terminal now

    def update(self, text: str) -> None:
        self.text = text

    def __enter__(self) -> "ProgressLine":
        self._started = self.clock()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        if self._drawn:
            self._write("\r" + " " * self._drawn + "\r")

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        shown = ""
        while not self._stop.is_set():
            line = f"seqguard: {self.text}... {int(self.clock() - self._started)} s"[:self._columns() - 1]
            if line != shown:
                self._write("\r" + line + " " * max(0, self._drawn - len(line)))
                self._drawn, shown = len(line), line
            self._stop.wait(self.interval)

    def _columns(self) -> int:
        try:
            return os.get_terminal_size(self.stream.fileno()).columns or 80
        except (AttributeError, ValueError, OSError):
            return 80

    def _write(self, text: str) -> None:
        # under the lock a fork takes first: a worker forked mid-write would inherit
        # stderr's buffer locked, and hang on its first write to it
        with _writing_lock():
            try:
                self.stream.write(text)
                self.stream.flush()
            except (OSError, ValueError):
                pass  # a terminal that went away: the run goes on without its progress


_WRITING = []  # the lock, made on first use (a run with no progress line imports no threading)


def _writing_lock():
    if not _WRITING:
        import threading

        lock = threading.Lock()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(before=lock.acquire, after_in_parent=lock.release, after_in_child=lock.release)
        _WRITING.append(lock)
    return _WRITING[0]


def _progress_line(quiet: bool) -> Optional[ProgressLine]:
    """A progress line for a run on a terminal; none with -q or when stderr is a pipe
    or a file (CI logs, pre-commit's captured output): no thread, no cost."""
    stream = sys.stderr
    if quiet or stream is None or not stream.isatty():
        return None
    return ProgressLine(stream)


def _echo_stderr(warnings: Sequence[str], notes: Sequence[str], quiet: bool) -> None:
    if quiet:
        return
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    for note in notes:
        click.echo(note, err=True)


def _write_output(text: str, output_file: Optional[Path], option: str = "--output-file") -> None:
    # a diff holds a non-UTF-8 file's bytes as surrogates (seqguard.patch): written back as those bytes
    data = text.encode("utf-8", "surrogateescape")
    if output_file is None:
        click.echo(data, nl=False)
        return
    try:
        output_file.parent.mkdir(parents=True, exist_ok=True)
        output_file.write_bytes(data)
    except OSError as e:
        _fail(f"{option} {output_file}: cannot write: {e.strerror or e}; pick a writable path")


@dataclasses.dataclass(frozen=True)
class CodemodArgs:
    """`codemod`'s command line, as parsed (the options are declared above `codemod`)."""
    paths: tuple[Path, ...]
    show_diff: bool
    check: bool
    select: tuple[str, ...]
    ignore: tuple[str, ...]
    style: str
    fallback: str
    report_format: str
    force: bool
    formatter: Optional[str]
    exit_zero: bool
    output_file: Optional[Path]
    quiet: bool
    analysis: AnalysisArgs


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--diff", "show_diff", is_flag=True,
              help="Print a unified diff (to stderr with --format json); write nothing.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if any file would change (for CI).")
@click.option("--select", multiple=True, metavar="CODES",
              help="Rewrite only the sites of these codes or prefixes (of SG002, SG003; comma-separated).")
@click.option("--ignore", multiple=True, metavar="CODES", help="Leave the sites of these codes alone.")
@click.option("--style", type=click.Choice(["inline", "helper"]), default="inline", show_default=True,
              help="inline: plain Python; helper: calls seqguard.runtime.fallback (counts and logs host pulls).")
@click.option("--fallback", type=click.Choice(["device", "raise"]), default="device", show_default=True,
              help="device: compute the value from the device tensor; raise: a clear error instead.")
@click.option("--format", "--report", "report_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="text: a summary on stderr; json: the report on stdout (--report: the old name).")
@click.option("--force", is_flag=True,
              help="Also rewrite read-only files (their mode is kept); by default they are skipped.")
@click.option("--formatter", type=click.Choice(["auto", "ruff", "black", "none"]), default=None,
              help="What formats the edited lines (default: `formatter` in [tool.seqguard], else auto: the one the "
                   "project configures, else ruff or Black if installed).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when files were skipped or --check would change them "
                                                "(2 still means an error).")
@click.option("-o", "--output-file", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the diff (with --diff) or the JSON report to this file instead of stdout.")
@click.option("-q", "--quiet", is_flag=True, help="No summary and no warnings on stderr.")
@analysis_options
@as_one_value(CodemodArgs)
def codemod(args: CodemodArgs) -> None:
    """Guard every host-mirror read in PATHS (default: the current directory) so it
    survives None (in place)."""
    from seqguard.codemods.runner import FIXED_CODES, Status, codemod_options, run_codemod
    from seqguard.config import matches_code

    paths = _existing(list(args.paths) or [Path(".")])
    chosen, skipped = _split_codes(args.select, "--select"), _split_codes(args.ignore, "--ignore") or ()
    codes = tuple(c for c in FIXED_CODES if (not chosen or matches_code(c, chosen)) and not matches_code(c, skipped))
    if not codes:
        _fail(f"--select/--ignore: expected to leave at least one of the codes codemod rewrites "
              f"({', '.join(FIXED_CODES)}), got none")
    analysis = args.analysis
    config = analysis.load(paths)
    write = not (args.show_diff or args.check)
    with _internal_errors(analysis.debug):
        report = run_codemod(paths, config, codemod_options(config, args.style, args.fallback, args.formatter),
                             write=write, use_cache=_use_cache(analysis.no_cache, args.quiet), jobs=analysis.jobs,
                             progress=_progress, codes=codes, force=args.force)
    # The report lists changed files only: walk a folder again only when nothing was seen.
    warnings = _exclusion_warnings(paths, config, folders=report.files_seen == 0, named_by=analysis.named_by())
    warnings[:0] = report.model_warnings
    if report.formatter_problem:
        warnings.append(report.formatter_problem)
    from seqguard.codemods.report import render_diff, render_json_report, render_text_summary

    # stdout (or --output-file) carries one document: the JSON report when asked for,
    # else the diff; the other goes to stderr
    if args.report_format == "json":
        if args.show_diff and not args.quiet:
            click.echo(render_diff(report), nl=False, err=True)
        _write_output(render_json_report(report, written=write) + "\n", args.output_file)
    elif args.show_diff:
        _write_output(render_diff(report), args.output_file)
    _echo_stderr(warnings, [render_text_summary(report, written=write).rstrip("\n")], args.quiet)
    failed = report.count(Status.SKIPPED) + report.count(Status.FAILED) > 0
    would_change = report.count(Status.CHANGED) > 0
    sys.exit(0 if args.exit_zero else 1 if failed or (args.check and would_change) else 0)


def _progress(items: list):
    if len(items) < 20 or not sys.stderr.isatty():
        return items
    return click.progressbar(items, label="guarding", file=sys.stderr)


@main.command()
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default=None,
              help="Where to run (default: the GPU when there is one). On the CPU kernels run in Triton's interpreter.")
@click.option("--preset", type=click.Choice(["tiny", "cpu-bound", "gpu-bound"]), default=None,
              help="Workload size (default: tiny on the CPU, gpu-bound on a GPU).")
@click.option("--layers", type=click.IntRange(min=1), help="Target layers.")
@click.option("--heads", type=click.IntRange(min=1), help="Query heads.")
@click.option("--kv-heads", type=click.IntRange(min=1), help="KV heads.")
@click.option("--head-dim", type=click.IntRange(min=8), help="Head dimension.")
@click.option("--batch", "max_running", type=click.IntRange(min=1), help="Most requests running at once.")
@click.option("--requests", type=click.IntRange(min=1), help="Requests in the workload.")
@click.option("--draft-steps", type=click.IntRange(min=1), help="Draft tokens proposed per step.")
@click.option("--prep-work-ms", type=click.FloatRange(min=0),
              help="Host work per step before its launch (scheduling that needs the lengths).")
@click.option("--host-work-ms", type=click.FloatRange(min=0),
              help="Host work per step after its launch (detokenizing the previous step).")
@click.option("--steps", "max_steps", type=click.IntRange(min=1), help="Most scheduler steps.")
@click.option("--cuda-graphs/--no-cuda-graphs", default=None,
              help="Replay decode steps from CUDA graphs (default on; CUDA only).")
@click.option("--seed", type=int, help="Seed for weights and prompts.")
@click.option("--repeats", type=click.IntRange(min=1), default=None,
              help="Run the mirror/decided pair N times and report the spread (default 3 on the CPU, 1 on CUDA).")
@click.option("--tp", type=click.IntRange(min=1), default=1, show_default=True,
              help="Tensor-parallel ranks: spawned here, or joined when torchrun's WORLD_SIZE is set.")
@click.option("--force-mirror-rank", type=click.IntRange(min=0), default=None, metavar="R",
              help="Give rank R a backend that needs the host mirror; every rank must then copy it.")
@click.option("--tp-timeout", type=click.FloatRange(min=1), default=300.0, show_default=True, metavar="S",
              help="Seconds any collective may wait for a rank before every rank stops with an error.")
@click.option("--inject-fault", default=None, metavar="R:raise|hang",
              help="Testing the no-hang path: rank R fails inside the decision (raise) or never reaches it (hang).")
@click.option("--tokens-out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write every request's tokens (JSON) to FILE, to compare runs (e.g. --tp 1 and --tp 2).")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: the table; json: one JSON object.")
@click.option("--json", "as_json", is_flag=True, help="The same as --format json (the old name).")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@click.pass_context
def bench(ctx, device, preset, layers, heads, kv_heads, head_dim, max_running, requests, draft_steps, prep_work_ms,
          host_work_ms, max_steps, cuda_graphs, seed, repeats, tp, force_mirror_rank, tp_timeout, inject_fault,
          tokens_out, output_format, as_json, debug) -> None:
    """Run one speculative workload with the host mirror forced on and with the
    aggregator's decision; compare step time, throughput and syncs per step."""
    import json

    from seqguard.bench.command import BenchOptions, run_command

    model_changes = tuple((k, v) for k, v in (("num_layers", layers), ("num_q_heads", heads),
                                              ("num_kv_heads", kv_heads), ("head_dim", head_dim)) if v is not None)
    workload_changes = tuple((k, v) for k, v in (("max_running", max_running), ("requests", requests),
                                                 ("draft_steps", draft_steps), ("prep_work_ms", prep_work_ms),
                                                 ("host_work_ms", host_work_ms), ("max_steps", max_steps),
                                                 ("cuda_graphs", cuda_graphs), ("seed", seed)) if v is not None)
    options = BenchOptions(device, preset, model_changes, workload_changes, repeats, tp, force_mirror_rank,
                           tp_timeout, inject_fault, _bench_argv(ctx))
    with _internal_errors(debug):
        outcome = run_command(options)
    if outcome.passthrough:
        click.echo(outcome.passthrough, nl=False)
    if outcome.error:
        click.echo(f"error: {outcome.error}", err=True)
    if outcome.abort:
        # at once, with the failure still held by `outcome.cause`: no destructor runs
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(outcome.exit_code)
    if outcome.report is not None:
        from seqguard.bench.runner import render_table

        report = dict(outcome.report)
        outputs = report.pop("outputs")
        if tokens_out is not None:
            _write_output(json.dumps(outputs) + "\n", tokens_out, "--tokens-out")
        click.echo(json.dumps(report, indent=2) if as_json or output_format == "json" else render_table(report))
    sys.exit(outcome.exit_code)


def _bench_argv(ctx: click.Context) -> list[str]:
    """This `bench` command line's options but `--device`, rebuilt from their parsed
    values, for the ranks the `--tp` launcher starts (they run the same command and
    join through torchrun's variables)."""
    argv = []
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name == "device":
            continue
        value = ctx.params.get(param.name)
        if value is None or value is False and not param.secondary_opts:
            continue
        if param.is_flag:
            argv.append(param.opts[0] if value else param.secondary_opts[0])
        else:
            argv += [param.opts[0], str(value)]
    return argv


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--format", "output_format", type=click.Choice(["tree", "mermaid", "dot"]), default="tree",
              show_default=True)
@analysis_options
def graph(paths, output_format, analysis: AnalysisArgs) -> None:
    """Show the attention-backend hierarchy: bases, where each flag comes from, and
    which backends keep the host sync alive. Paths are relative to the current
    directory, as lint prints them."""
    from seqguard.lint.discovery import shown_from_root
    from seqguard.lint.graph import RENDERERS as GRAPHS
    from seqguard.lint.runner import lint_paths

    paths = _existing(list(paths) or [Path(".")])
    config = analysis.load(paths)
    progress = _progress_line(quiet=False)
    with _internal_errors(analysis.debug), progress or contextlib.nullcontext():
        result = lint_paths(paths, config, use_cache=_use_cache(analysis.no_cache), jobs=analysis.jobs,
                            need_index=True, progress=progress and progress.update)
    for warning in [*result.model_warnings,
                    *_exclusion_warnings(paths, config, [t.abspath for t in result.targets],
                                         named_by=analysis.named_by())]:
        click.echo(f"warning: {warning}", err=True)
    click.echo(GRAPHS[output_format](result.index, lambda relpath: shown_from_root(relpath, config.root),
                                     config.flag_attribute), nl=False)


@main.command()
@click.argument("locations", nargs=-1, required=True, metavar="PATH:LINE[:COL]...")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@analysis_options
def explain(locations, output_format, analysis: AnalysisArgs) -> None:
    """Say why each host-mirror read or host pull on LINE of PATH (the one at COL, when
    given, as lint prints it) is reported, or why it is not: the store that makes it
    None and the copies that carry it there, or the test, type, flag or callers that
    clear it."""
    import json

    from seqguard.lint.explain import LocationError, explain_locations, parse_locations

    try:
        wanted = parse_locations(locations)
    except LocationError as error:
        _fail(str(error))
    config = analysis.load(list(dict.fromkeys(w.path for w in wanted)))
    with _internal_errors(analysis.debug):
        try:
            explained = explain_locations(wanted, config, use_cache=_use_cache(analysis.no_cache), jobs=analysis.jobs)
        except LocationError as error:
            _fail(str(error))
    documents, unreadable = explained.documents, explained.unreadable
    click.echo(json.dumps(documents, indent=2) if output_format == "json" else explained.text,
               nl=output_format == "json")
    for warning in explained.warnings:
        click.echo(f"warning: {warning}", err=True)
    for problem in unreadable:
        click.echo(f"error: {problem}", err=True)
    if unreadable:
        sys.exit(2)


@main.command()
@click.argument("code", required=False)
def rules(code: Optional[str]) -> None:
    """List every code (SG000 included), or explain CODE (what, why, example, fix)."""
    from seqguard.lint.formats import rule_catalogue

    catalogue = {info.code: info for info in rule_catalogue()}
    if code is None:
        width = max(len(info.name) for info in catalogue.values())
        for info in catalogue.values():
            click.echo(f"{info.code}  {info.name:<{width}} {info.severity.value:<8} {info.summary}")
        return
    info = catalogue.get(code.upper())
    if info is None:
        _fail(f"unknown rule {code!r}; valid codes: {', '.join(catalogue)}")
    click.echo(f"{info.code} {info.name} ({info.severity.value}{', fixable' if info.fixable else ''})\n")
    click.echo(info.doc)
    for title, example in (("Example (flagged)", info.flagged), ("Example (fine)", info.fine)):
        if example:
            click.echo(f"\n{title}:\n")
            click.echo(textwrap.indent(textwrap.dedent(example).strip("\n"), "    "))
