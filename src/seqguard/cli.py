"""The `seqguard` command line. All terminal I/O lives here."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Optional, Sequence

import click

from seqguard import __version__
from seqguard.config import ConfigError, load_config

FORMATS = ("text", "json", "sarif", "github")


def _split_codes(values: Sequence[str]) -> Optional[tuple[str, ...]]:
    codes = tuple(c.strip() for v in values for c in v.split(",") if c.strip())
    return codes or None


@contextlib.contextmanager
def _internal_errors(debug: bool):
    """The last line of defence: an unexpected error is one line and exit 2, or the
    traceback with --debug. Expected problems are handled (and worded) before this."""
    try:
        yield
    except (KeyboardInterrupt, SystemExit, click.exceptions.Exit):
        raise
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
    codemod  rewrite reads so they survive a None mirror
    graph    draw the attention-backend hierarchy and where each flag comes from
    bench    measure a speculative serving loop with and without the host mirror
    rules    explain every rule
    """


def analysis_options(function):
    """Options lint and codemod share: configuration and what to analyse."""
    options = [
        click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False),
                     help="pyproject.toml to read [tool.seqguard] from (default: nearest one)."),
        click.option("--backend-base", "backend_bases", multiple=True, metavar="NAME",
                     help="Attention-backend base class, plain or qualified (pkg.mod.Class); repeatable."),
        click.option("--mirror-attribute", "mirror_attributes", multiple=True, metavar="NAME",
                     help="Host-mirror attribute name (default seq_lens_cpu, seq_lens_sum); repeatable."),
        click.option("--device-attribute", metavar="NAME", help="Device-side sibling (default seq_lens)."),
        click.option("--no-cache", is_flag=True, help="Neither read nor write .seqguard_cache."),
        click.option("--jobs", "-j", type=click.IntRange(min=1), help="Worker processes (default: all cores)."),
        click.option("--debug", is_flag=True, help="Show tracebacks for internal errors."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _analysis_overrides(backend_bases, mirror_attributes, device_attribute) -> dict:
    """The [tool.seqguard] keys that `analysis_options` override (None keeps the file's)."""
    return {"backend_bases": tuple(backend_bases) or None, "mirror_attributes": tuple(mirror_attributes) or None,
            "device_attribute": device_attribute}


def _load(paths: Sequence[Path], config_file, overrides: dict):
    from seqguard.config import QUALIFIED_IDENTIFIER, IDENTIFIER
    for name in overrides.get("backend_bases") or ():
        if not QUALIFIED_IDENTIFIER.match(name):
            raise click.BadParameter(f"expected a class name like AttentionBackend or pkg.mod.Class, got {name!r}",
                                     param_hint="--backend-base")
    for name in overrides.get("mirror_attributes") or ():
        if not IDENTIFIER.match(name):
            raise click.BadParameter(f"expected an attribute name, got {name!r}", param_hint="--mirror-attribute")
    try:
        return load_config(paths, config_file, overrides)
    except ConfigError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(2)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--select", multiple=True, metavar="CODES", help="Only these codes or prefixes (comma-separated).")
@click.option("--ignore", multiple=True, metavar="CODES", help="Skip these codes or prefixes (comma-separated).")
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("--fix", is_flag=True, help="Apply fixes (SG001: write the inherited flag explicitly).")
@click.option("--baseline", "baseline_file", type=click.Path(path_type=Path, dir_okay=False),
              help="Report only findings not recorded in this baseline (also `baseline` in [tool.seqguard]).")
@click.option("--write-baseline", "write_baseline", type=click.Path(path_type=Path, dir_okay=False),
              help="Record today's findings in FILE (pruning entries no longer found) and exit 0.")
@click.option("--add-ignore", is_flag=True, help="Append `# seqguard: ignore[CODE]` to every flagged line.")
@analysis_options
def lint(paths, select, ignore, output_format, fix, baseline_file, write_baseline, add_ignore, config_file,
         backend_bases, mirror_attributes, device_attribute, no_cache, jobs, debug) -> None:
    """Report broken host-mirror contracts in PATHS (default: the current directory)."""
    from seqguard.lint import baseline as baselines
    from seqguard.lint.runner import lint_paths

    paths = list(paths) or [Path(".")]
    overrides = {"select": _split_codes(select), "ignore": _split_codes(ignore),
                 **_analysis_overrides(backend_bases, mirror_attributes, device_attribute),
                 "baseline": baseline_file.resolve() if baseline_file else None}
    config = _load(paths, config_file, overrides)
    with _internal_errors(debug):
        try:
            result = lint_paths(paths, config, use_cache=not no_cache, jobs=jobs, need_index=fix)
            fixed = 0
            if fix:
                fixed = _apply_fixes(result)
                if fixed:
                    result = lint_paths(paths, config, use_cache=not no_cache, jobs=jobs)
            if write_baseline is not None:
                written = _write_baseline(result, write_baseline)
                click.echo(f"seqguard: wrote {written} baseline entr{'y' if written == 1 else 'ies'} to "
                           f"{write_baseline}", err=True)
                sys.exit(0)
            if add_ignore:
                added = _add_ignores(result)
                if added:
                    result = lint_paths(paths, config, use_cache=not no_cache, jobs=jobs)
                click.echo(f"seqguard: added suppressions on {added} line(s)", err=True)
            diagnostics, baselined = result.diagnostics, 0
            if config.baseline is not None and write_baseline is None:
                diagnostics, baselined = _apply_baseline(result, config.baseline)
        except baselines.BaselineError as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(2)
    from seqguard.formats import RENDERERS

    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(RENDERERS[output_format](diagnostics), nl=False)
    _summarise(diagnostics, result.files_checked, fixed, baselined)
    sys.exit(1 if any(d.severity.fails for d in diagnostics) else 0)


def _keyed(result):
    """(diagnostic, baseline key) for every finding that belongs to a checked file."""
    from seqguard.lint import baseline as baselines

    targets = {t.display: t for t in result.targets}
    lines_cache: dict = {}
    keyed, loose = [], []
    for diagnostic in result.diagnostics:
        target = targets.get(diagnostic.path)
        if target is None:
            loose.append(diagnostic)
            continue
        if target.abspath not in lines_cache:
            lines_cache[target.abspath] = baselines.read_lines(target.abspath)
        keyed.append((diagnostic, baselines.key_of(diagnostic, target.relpath, lines_cache[target.abspath])))
    return keyed, loose


def _write_baseline(result, path: Path) -> int:
    from seqguard.lint import baseline as baselines

    keyed, _ = _keyed(result)
    keys = [key for _, key in keyed]
    checked = {t.relpath for t in result.targets}
    if path.exists():
        # A partial run (a few files) keeps the other files' entries.
        kept = baselines.load(path)
        keys += [k for k, n in kept.items() if k.path not in checked for _ in range(n)]
    return baselines.write(path, keys)


def _apply_baseline(result, path: Path):
    from seqguard.lint import baseline as baselines

    keyed, loose = _keyed(result)
    applied = baselines.apply(baselines.load(path), keyed, {t.relpath for t in result.targets})
    for key, count in applied.stale:
        times = f" (x{count})" if count > 1 else ""
        click.echo(f"warning: stale baseline entry{times}: {key.path}: {key.code} in {key.scope}: "
                   f"`{key.source}` is no longer found; prune it with --write-baseline", err=True)
    return sorted(applied.new + loose), applied.baselined


def _add_ignores(result) -> int:
    from seqguard.fileio import FileChangedError, atomic_write
    from seqguard.lint.suppress import add_ignores

    targets = {t.display: t for t in result.targets}
    per_file: dict = {}
    for d in result.diagnostics:
        if d.code in ("SG000", "SG007") or d.path not in targets:
            continue
        per_file.setdefault(targets[d.path].abspath, {}).setdefault(d.line, set()).add(d.code)
    added = 0
    for abspath, codes in sorted(per_file.items()):
        try:
            with open(abspath, "rb") as f:
                original = f.read()
            new, skipped = add_ignores(original, codes)
            for line, why in skipped:
                click.echo(f"warning: {abspath}:{line}: no suppression added: {why}", err=True)
            if new != original:
                compile(new, abspath, "exec")  # never write a file that stops parsing
                atomic_write(abspath, new, expected=original)
                added += len(codes) - len(skipped)
        except (OSError, FileChangedError, SyntaxError, UnicodeDecodeError) as e:
            click.echo(f"error: {abspath}: suppressions not added: {e}", err=True)
    return added


def _apply_fixes(result) -> int:
    from seqguard.fileio import FileChangedError, atomic_write
    from seqguard.lint.apply_fixes import insert_statements
    from seqguard.lint.runner import fixes_for

    applied = 0
    for abspath, edits in fixes_for(result).items():
        try:
            with open(abspath, "rb") as f:
                original = f.read()
            atomic_write(abspath, insert_statements(original, edits), expected=original)
            applied += len(edits)
        except (OSError, FileChangedError, UnicodeDecodeError, SyntaxError) as e:
            click.echo(f"error: {abspath}: fix not applied: {e}", err=True)
    return applied


def _summarise(diagnostics, files_checked: int, fixed: int, baselined: int = 0) -> None:
    counts = {s: 0 for s in ("error", "warning", "info")}
    for d in diagnostics:
        counts[d.severity.value] += 1
    fixable = sum(d.fixable for d in diagnostics)
    parts = [f"{counts['error']} error(s)", f"{counts['warning']} warning(s)", f"{counts['info']} info"]
    tail = f"; {fixable} fixable with --fix" if fixable else ""
    done = f"; fixed {fixed}" if fixed else ""
    done += f"; {baselined} in the baseline" if baselined else ""
    word = "file" if files_checked == 1 else "files"
    click.echo(f"seqguard: {files_checked} {word} checked: {', '.join(parts)}{tail}{done}", err=True)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--diff", "show_diff", is_flag=True,
              help="Print a unified diff (to stderr with --report json); write nothing.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if any file would change (for CI).")
@click.option("--style", type=click.Choice(["inline", "helper"]), default="inline", show_default=True,
              help="inline: plain Python; helper: calls seqguard.runtime.fallback (counts and logs host pulls).")
@click.option("--fallback", type=click.Choice(["device", "raise"]), default="device", show_default=True,
              help="device: compute the value from the device tensor; raise: a clear error instead.")
@click.option("--report", "report_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@analysis_options
def codemod(paths, show_diff, check, style, fallback, report_format, config_file, backend_bases,
            mirror_attributes, device_attribute, no_cache, jobs, debug) -> None:
    """Guard every host-mirror read in PATHS so it survives None (in place)."""
    from seqguard.codemods.runner import codemod_options, run_codemod

    config = _load(paths, config_file, _analysis_overrides(backend_bases, mirror_attributes, device_attribute))
    write = not (show_diff or check)
    with _internal_errors(debug):
        report = run_codemod(paths, config, codemod_options(config, style, fallback), write=write,
                             use_cache=not no_cache, jobs=jobs, progress=_progress)
    from seqguard.codemods.report import render_diff, render_json_report, render_text_summary

    if show_diff:
        # With --report json, stdout carries the JSON alone and the diff goes to stderr.
        click.echo(render_diff(report), nl=False, err=report_format == "json")
    if report_format == "json":
        click.echo(render_json_report(report, written=write))
    click.echo(render_text_summary(report, written=write), err=True, nl=False)
    failed = report.count("skipped") > 0
    would_change = report.count("changed") > 0
    sys.exit(1 if failed or (check and would_change) else 0)


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
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the table.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def bench(device, preset, layers, heads, kv_heads, head_dim, max_running, requests, draft_steps, prep_work_ms,
          host_work_ms, max_steps, cuda_graphs, seed, as_json, debug) -> None:
    """Run one speculative workload with the host mirror forced on and with the
    aggregator's decision; compare step time, throughput and syncs per step."""
    import dataclasses
    import json
    import os

    try:
        import torch
    except ImportError:
        click.echo("error: seqguard bench needs torch and triton; install the runtime extra: "
                   "pip install torch==2.13.0 && pip install 'seqguard[runtime]'", err=True)
        sys.exit(2)
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        click.echo("error: --device cuda: no CUDA device is visible; use --device cpu", err=True)
        sys.exit(2)
    if device == "cpu":
        # Triton picks the interpreter when kernels are defined: set it before importing them.
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from seqguard.runtime.serving.bench import PRESETS, render_table, run_bench

    workload = PRESETS[preset or ("tiny" if device == "cpu" else "gpu-bound")]
    model_changes = {k: v for k, v in (("num_layers", layers), ("num_q_heads", heads), ("num_kv_heads", kv_heads),
                                       ("head_dim", head_dim)) if v is not None}
    changes = {k: v for k, v in (("max_running", max_running), ("requests", requests),
                                 ("draft_steps", draft_steps), ("prep_work_ms", prep_work_ms),
                                 ("host_work_ms", host_work_ms),
                                 ("max_steps", max_steps), ("cuda_graphs", cuda_graphs), ("seed", seed))
               if v is not None}
    with _internal_errors(debug):
        try:
            model = dataclasses.replace(workload.model, **model_changes)
            model.check()
            workload = dataclasses.replace(workload, model=model, **changes)
            report = run_bench(workload, torch.device(device))
        except ValueError as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(2)
    click.echo(json.dumps(report, indent=2) if as_json else render_table(report))
    sys.exit(0 if report["identical_tokens"] else 1)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--format", "output_format", type=click.Choice(["tree", "mermaid", "dot"]), default="tree",
              show_default=True)
@analysis_options
def graph(paths, output_format, config_file, backend_bases, mirror_attributes, device_attribute, no_cache, jobs,
          debug) -> None:
    """Show the attention-backend hierarchy: bases, where each flag comes from, and
    which backends keep the host sync alive."""
    from seqguard.lint.graph import RENDERERS as GRAPHS
    from seqguard.lint.runner import lint_paths

    paths = list(paths) or [Path(".")]
    config = _load(paths, config_file, _analysis_overrides(backend_bases, mirror_attributes, device_attribute))
    with _internal_errors(debug):
        result = lint_paths(paths, config, use_cache=not no_cache, jobs=jobs, need_index=True)
    click.echo(GRAPHS[output_format](result.index), nl=False)


@main.command()
@click.argument("code", required=False)
def rules(code: Optional[str]) -> None:
    """List the rules, or explain CODE (what, why, example, fix)."""
    from seqguard.lint.rules import RULES, RULES_BY_CODE

    if code is None:
        for rule in RULES:
            click.echo(f"{rule.CODE}  {rule.NAME:<26} {rule.SEVERITY.value:<8} {rule.describe().splitlines()[0]}")
        return
    rule = RULES_BY_CODE.get(code.upper())
    if rule is None:
        click.echo(f"error: unknown rule {code!r}; valid codes: {', '.join(RULES_BY_CODE)}", err=True)
        sys.exit(2)
    click.echo(f"{rule.CODE} {rule.NAME} ({rule.SEVERITY.value}{', fixable' if rule.FIXABLE else ''})\n")
    click.echo(rule.describe())
    if rule.INVALID:
        click.echo("\nExample (flagged):\n")
        click.echo("    " + rule.INVALID[0].code.rstrip().replace("\n", "\n    "))
    if rule.VALID:
        click.echo("\nExample (fine):\n")
        click.echo("    " + rule.VALID[0].code.rstrip().replace("\n", "\n    "))
