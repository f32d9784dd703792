"""Lint speed on a large real tree, side by side with ruff in the same run.

Usage:
    pip download --no-deps sglang==0.5.23 -d sg && (cd sg && unzip -q -o sglang-*.whl)
    python benchmarks/bench_lint.py sg [--repeat 5]

Every time is wall clock of a fresh process (interpreter start included), median of
--repeat runs. The tree is copied to a scratch directory so the one-file edit never
touches the original.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def wall(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def median_of(repeat: int, run) -> float:
    return statistics.median(run() for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tree", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    seqguard = [sys.executable, "-m", "seqguard", "lint"]
    ruff = shutil.which("ruff")
    if ruff is None:
        sys.exit("ruff is not installed: pip install ruff")

    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "tree"
        shutil.copytree(args.tree, tree, ignore=shutil.ignore_patterns(".seqguard_cache", ".ruff_cache"))
        files = sum(1 for _ in tree.rglob("*.py"))
        lines = sum(p.read_bytes().count(b"\n") for p in tree.rglob("*.py"))
        # The cache lives in the user's cache directory; a private one keeps runs apart.
        cache = Path(scratch) / "cache"
        os.environ["SEQGUARD_CACHE_DIR"] = str(cache)

        def cold() -> float:
            shutil.rmtree(cache, ignore_errors=True)
            return wall([*seqguard, "."], tree)

        ruff_time = median_of(args.repeat, lambda: wall([ruff, "check", "--select", "E711", "--no-cache",
                                                         "--quiet", "--exit-zero", "."], tree))
        cold_time = median_of(args.repeat, cold)
        # what a project with `preset = "sglang"` runs: the engine model on top
        cold_model = median_of(args.repeat, lambda: (shutil.rmtree(cache, ignore_errors=True),
                                                    wall([*seqguard, "--preset", "sglang", "."], tree))[1])
        cold_one_core = median_of(args.repeat, lambda: (shutil.rmtree(cache, ignore_errors=True),
                                                       wall([*seqguard, "-j", "1", "."], tree))[1])
        wall([*seqguard, "."], tree)  # fill the cache
        warm_time = median_of(args.repeat, lambda: wall([*seqguard, "."], tree))

        # pre-commit mode: one file changed, only that file passed, whole-project index from
        # cache; the first file naming the mirror, and the one naming it most (the most
        # reads to judge, the biggest file to analyse)
        counter = [0]

        def one_changed(target: Path) -> float:
            counter[0] += 1
            with open(target, "a") as f:
                f.write(f"\n# edit {counter[0]}\n")
            return wall([*seqguard, target.relative_to(tree).as_posix()], tree)

        naming = [(p.read_bytes().count(b"seq_lens_cpu"), p) for p in sorted(tree.rglob("*.py"))]
        naming = [(count, p) for count, p in naming if count]
        first, most = naming[0][1], max(naming, key=lambda row: row[0])[1]
        one_time = median_of(args.repeat, lambda: one_changed(first))
        most_time = median_of(args.repeat, lambda: one_changed(most))
        # the interpreter's own start (with this machine's site-packages): every row pays it
        start_time = median_of(args.repeat, lambda: wall([sys.executable, "-c", "pass"], tree))

    print(f"tree: {args.tree} ({files} Python files, {lines:,} lines)")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print()
    print("| run | median wall (s) | vs ruff |")
    print("|---|---|---|")
    print(f"| ruff check --select E711 --no-cache (reference) | {ruff_time:.2f} | 1.00x |")
    print(f"| seqguard lint, cold (no cache), all cores | {cold_time:.2f} | {cold_time / ruff_time:.2f}x |")
    print(f"| seqguard lint --preset sglang, cold | {cold_model:.2f} | {cold_model / ruff_time:.2f}x |")
    print(f"| seqguard lint, cold, one core (-j 1) | {cold_one_core:.2f} | {cold_one_core / ruff_time:.2f}x |")
    print(f"| seqguard lint, warm (nothing changed) | {warm_time:.2f} | {warm_time / ruff_time:.2f}x |")
    print(f"| seqguard lint FILE, one file changed (pre-commit) | {one_time:.2f} | {one_time / ruff_time:.2f}x |")
    print(f"| seqguard lint FILE, the file naming the mirror most changed | {most_time:.2f} | "
          f"{most_time / ruff_time:.2f}x |")
    print(f"| python -c pass (interpreter start, in every row) | {start_time:.2f} | {start_time / ruff_time:.2f}x |")
    print()
    print(f"one file: {first.relative_to(tree).as_posix()}; "
          f"naming the mirror most: {most.relative_to(tree).as_posix()}")


if __name__ == "__main__":
    main()
