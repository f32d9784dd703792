"""Codemod speed and invariants on a large real tree, next to what the `ast` filter buys.

Usage:
    pip download --no-deps --only-binary=:all: sglang==0.5.23 -d sg && (cd sg && unzip -q -o sglang-*.whl)
    git worktree add ../seqguard-789548d 789548d     # the text-edit codemod, for --reference-src
    python benchmarks/bench_codemod.py sg [--repeat 3] [--preset sglang] [--reference-src ../seqguard-789548d/src]

Every run works on its own copy of the tree (the original is never touched):
- `seqguard codemod --check` on the whole tree, cold (no cache, all cores,
  interpreter start included): lint's `ast` index finds the files with sites and only
  those are parsed by libcst;
- the stock `python -m libcst.tool codemod guard_mirror_reads.GuardMirrorReads` on the
  same tree (libcst parses every file; the command decides per file alone);
- with --reference-src, `seqguard codemod --check` from another checkout (the text-edit
  version before LibCST), for the ratio;
then a full write run and its invariants: lint finds no SG002/SG003 beyond the sites
listed for a manual fix, no new SG004, a second run changes nothing, every changed file
compiles, every written line fits 88 columns, no host sync is left inside a loop body
(a fallback a loop needs is bound once before it), no shape is read through `.cpu()`,
and every changed file `ruff format --check` accepted before is accepted after.
With --preset, every seqguard command runs with that engine model.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
YAML = ("generated_code_marker: '@generated'\nformatter: []\nblacklist_patterns: []\n"
        "modules:\n- 'seqguard.codemods'\nrepo_root: '.'\n")


def _env(src: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(src)}


def _copy(tree: Path, scratch: Path, name: str) -> Path:
    target = scratch / name
    shutil.copytree(tree, target, ignore=shutil.ignore_patterns(".seqguard_cache", "*.dist-info"))
    return target


def _timed(cmd: list[str], cwd: Path, env: dict) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    return time.perf_counter() - start, done


def _sg004(tree: Path, model: list[str]) -> list:
    done = subprocess.run([sys.executable, "-m", "seqguard", "lint", "--no-cache", *model, "--select", "SG004",
                           "--format", "json", "."], cwd=tree, capture_output=True, text=True, env=_env(SRC))
    return sorted((f["path"], f["message"]) for f in json.loads(done.stdout))


def _ruff_accepts(tree: Path, files: list[str]) -> set[str]:
    """The files among `files` that `ruff format --check` leaves as they are."""
    accepted = set()
    for start in range(0, len(files), 500):
        chunk = files[start:start + 500]
        done = subprocess.run(["ruff", "format", "--check", "--no-cache", *chunk], cwd=tree,
                              capture_output=True, text=True)
        would = {line.split("Would reformat: ", 1)[1].strip() for line in done.stdout.splitlines()
                 if line.startswith("Would reformat: ")}
        accepted |= {f for f in chunk if f not in would}
    return accepted


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tree", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--reference-src", type=Path, default=None,
                        help="src/ of another seqguard checkout to time the same --check with")
    parser.add_argument("--preset", default=None, help="engine model for every seqguard command (sglang)")
    args = parser.parse_args()
    model = ["--preset", args.preset] if args.preset else []
    seqguard = [sys.executable, "-m", "seqguard", "codemod", "--no-cache", *model]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        check_times, reference_times = [], []
        for i in range(args.repeat):
            tree = _copy(args.tree, scratch, f"check{i}")
            elapsed, done = _timed([*seqguard, "--check", "."], tree, _env(SRC))
            assert done.returncode in (0, 1), done.stderr[-2000:]
            check_times.append(elapsed)
            if args.reference_src is not None:
                elapsed, done = _timed([*seqguard, "--check", "."], tree, _env(args.reference_src))
                assert done.returncode in (0, 1), done.stderr[-2000:]
                reference_times.append(elapsed)
            shutil.rmtree(tree)
        ours = statistics.median(check_times)
        rows.append((f"`seqguard codemod --check`, whole tree, cold, median of {args.repeat} (s)", f"{ours:.2f}"))
        if reference_times:
            ref = statistics.median(reference_times)
            rows.append((f"the same from --reference-src (text edits, no LibCST), median of {args.repeat} (s)",
                         f"{ref:.2f}"))
            rows.append(("ratio LibCST / text edits", f"{ours / ref:.2f}"))

        stock = _copy(args.tree, scratch, "stock")
        (stock / ".libcst.codemod.yaml").write_text(YAML)
        elapsed, done = _timed([sys.executable, "-m", "libcst.tool", "codemod", "--no-format", "--hide-progress",
                                "guard_mirror_reads.GuardMirrorReads", "."], stock, _env(SRC))
        summary = [line.strip() for line in done.stderr.splitlines() if line.strip().startswith("- ")]
        rows.append(("stock `python -m libcst.tool codemod` with GuardMirrorReads, same tree, 1 run (s)",
                     f"{elapsed:.2f}"))
        rows.append(("stock run: " + "; ".join(s.lstrip("- ") for s in summary), "exit " + str(done.returncode)))
        rows.append(("what the `ast` filter buys (stock / `--check`)", f"{elapsed / ours:.1f}x"))
        shutil.rmtree(stock)

        tree = _copy(args.tree, scratch, "write")
        before = {p: p.read_bytes() for p in tree.rglob("*.py")}
        # the files with a site are the ones it may change: which of them ruff format accepts now
        formatted_before = None
        if shutil.which("ruff"):
            formatted_before = _ruff_accepts(tree, [p.relative_to(tree).as_posix() for p in before])
        sg004_before = _sg004(tree, model)
        done = subprocess.run([*seqguard, "--format", "json", "."], cwd=tree, capture_output=True, text=True,
                              env=_env(SRC))
        report = json.loads(done.stdout)
        lint = subprocess.run(
            [
                sys.executable,
                "-m",
                "seqguard",
                "lint",
                "--no-cache",
                *model,
                "--select",
                "SG002,SG003",
                "--format",
                "json",
                ".",
            ],
            cwd=tree,
            capture_output=True,
            text=True,
            env=_env(SRC),
        )
        left = json.loads(lint.stdout)
        again = subprocess.run([*seqguard, "--check", "."], cwd=tree, capture_output=True, text=True, env=_env(SRC))
        changed = [f["path"] for f in report["files"] if f["status"] == "changed"]
        written = []
        for rel in changed:
            new = (tree / rel).read_bytes()
            compile(new, rel, "exec")
            written += [line for line in set(new.decode().splitlines())
                        - set(before[tree / rel].decode().splitlines())]
        sg004_after = _sg004(tree, model)
        rejected = None
        if formatted_before is not None:
            kept = [rel for rel in changed if rel in formatted_before]
            rejected = (len(kept) - len(_ruff_accepts(tree, kept)), len(kept))
    sites = [site for f in report["files"] for site in f["sites"]]
    shape_copies = [line for line in written
                    if re.search(r"\.cpu\(\)\.(shape|size\(|numel\(|dim\(|ndim)|len\([^()]*\.cpu\(\)\)", line)]
    s = report["summary"]
    rows += [
        ("files changed / skipped", f"{s['files_changed']} / {s['files_skipped']}"),
        ("maintenance / consumer sites guarded", f"{s['maintenance_sites']} / {s['consumer_sites']}"),
        ("host-sync fallbacks reported", f"{s['host_sync_fallbacks']}"),
        ("opted-out sites given a RuntimeError instead of a host sync", f"{s['no_sync_errors']}"),
        ("sites left for a manual fix (with reason)", f"{s['manual_sites']}"),
        ("SG002/SG003 left after the run (= the manual ones)", f"{len(left)}"),
        ("SG004 before / after", f"{len(sg004_before)} / {len(sg004_after)}"),
        ("host-sync fallbacks bound once before their loop / left inside a loop body",
         f"{len({(s_['hoisted_as'], s_['hoisted_line']) for s_ in sites if s_['hoisted_as']})} / "
         f"{sum(s_['in_loop'] for s_ in sites)}"),
        ("shapes read from the device tensor, no copy / through `.cpu()`",
         f"{sum(s_['fallback'] == 'direct' for s_ in sites)} / {len(shape_copies)}"),
        ("changed files ruff format accepted before and rejects after",
         "ruff not installed" if rejected is None else f"{rejected[0]} of {rejected[1]}"),
        ("written lines over 88 columns", f"{sum(len(line) > 88 for line in written)} of {len(written)}"),
        ("second run: would change", "nothing" if again.returncode == 0 else "SOMETHING"),
        ("changed files that compile", f"{len(changed)}/{len(changed)}"),
    ]
    print(f"tree: {args.tree.name}; machine: {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")
    print()
    print("| measure | value |")
    print("|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
