"""Lint speed on a large real tree, side by side with ruff in the same run.

Usage:
    pip download --no-deps sglang==0.5.23 -d sg && (cd sg && unzip -q -o sglang-*.whl)
    python benchmarks/bench_lint.py sg [--repeat 5] [--reference-src ../before/src]

Every time is wall clock of a fresh process (interpreter start included), median of
--repeat runs. The tree is copied to a scratch directory so the one-file edit never
touches the original. With `--reference-src`, every seqguard row is also timed with
the package at that path (another checkout's `src`), each run of it right after the
same run of this one, so a change of the code is compared in the same minutes.
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
from typing import Callable, Optional


def wall(cmd: list[str], cwd: Path, env: Optional[dict] = None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def median_of(repeat: int, run) -> float:
    return statistics.median(run() for _ in range(repeat))


class Checkout:
    """One version of seqguard to time: this one (`src` None) or another checkout's,
    each with a cache directory of its own."""

    def __init__(self, src: Optional[Path], cache: Path) -> None:
        self.cache = cache
        self.env = {**os.environ, "SEQGUARD_CACHE_DIR": str(cache)}
        if src is not None:
            self.env["PYTHONPATH"] = str(src.resolve())

    def lint(self, tree: Path, *args: str) -> float:
        return wall([sys.executable, "-m", "seqguard", "lint", *args], tree, self.env)

    def cold(self, tree: Path, *args: str) -> float:
        shutil.rmtree(self.cache, ignore_errors=True)
        return self.lint(tree, *args)


def paired(repeat: int, checkouts: list[Checkout], run: Callable[[Checkout], float]) -> list[float]:
    """The median of `run` for each checkout, their runs alternating."""
    times: list[list[float]] = [[] for _ in checkouts]
    for _ in range(repeat):
        for i, checkout in enumerate(checkouts):
            times[i].append(run(checkout))
    return [statistics.median(t) for t in times]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tree", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--reference-src", type=Path, default=None,
                        help="another checkout's src folder, timed beside this one in the same run")
    args = parser.parse_args()
    ruff = shutil.which("ruff")
    if ruff is None:
        sys.exit("ruff is not installed: pip install ruff")
    if args.reference_src is not None and not (args.reference_src / "seqguard" / "__init__.py").is_file():
        sys.exit(f"{args.reference_src}: not a src folder holding seqguard (give ../before/src)")

    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "tree"
        shutil.copytree(args.tree, tree, ignore=shutil.ignore_patterns(".seqguard_cache", ".ruff_cache"))
        files = sum(1 for _ in tree.rglob("*.py"))
        lines = sum(p.read_bytes().count(b"\n") for p in tree.rglob("*.py"))
        # The cache lives in the user's cache directory; a private one per checkout keeps runs apart.
        checkouts = [Checkout(None, Path(scratch) / "cache")]
        if args.reference_src is not None:
            checkouts.append(Checkout(args.reference_src, Path(scratch) / "cache-reference"))

        ruff_time = median_of(args.repeat, lambda: wall([ruff, "check", "--select", "E711", "--no-cache",
                                                         "--quiet", "--exit-zero", "."], tree))
        rows: list[tuple[str, list[float]]] = []
        rows.append(("seqguard lint, cold (no cache), all cores", paired(args.repeat, checkouts,
                                                                         lambda c: c.cold(tree, "."))))
        # what a project with `preset = "sglang"` runs: the engine model on top
        rows.append(("seqguard lint --preset sglang, cold", paired(args.repeat, checkouts,
                                                                   lambda c: c.cold(tree, "--preset", "sglang", "."))))
        rows.append(("seqguard lint, cold, one core (-j 1)", paired(args.repeat, checkouts,
                                                                    lambda c: c.cold(tree, "-j", "1", "."))))
        for checkout in checkouts:
            checkout.lint(tree, ".")  # fill the cache
        rows.append(("seqguard lint, warm (nothing changed)", paired(args.repeat, checkouts,
                                                                     lambda c: c.lint(tree, "."))))

        # pre-commit mode: one file changed, only that file passed, whole-project index from
        # cache; the first file naming the mirror, and the one naming it most (the most
        # reads to judge, the biggest file to analyse)
        counter = [0]

        def one_changed(checkout: Checkout, target: Path) -> float:
            counter[0] += 1
            with open(target, "a") as f:
                f.write(f"\n# edit {counter[0]}\n")
            return checkout.lint(tree, target.relative_to(tree).as_posix())

        naming = [(p.read_bytes().count(b"seq_lens_cpu"), p) for p in sorted(tree.rglob("*.py"))]
        naming = [(count, p) for count, p in naming if count]
        first, most = naming[0][1], max(naming, key=lambda row: row[0])[1]
        rows.append(("seqguard lint FILE, one file changed (pre-commit)",
                     paired(args.repeat, checkouts, lambda c: one_changed(c, first))))
        rows.append(("seqguard lint FILE, the file naming the mirror most changed",
                     paired(args.repeat, checkouts, lambda c: one_changed(c, most))))
        # the interpreter's own start (with this machine's site-packages): every row pays it
        start_time = median_of(args.repeat, lambda: wall([sys.executable, "-c", "pass"], tree))

    print(f"tree: {args.tree} ({files} Python files, {lines:,} lines)")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print()
    reference = args.reference_src is not None
    print("| run | median wall (s) | vs ruff |" + (" reference (s) | this / reference |" if reference else ""))
    print("|---|---|---|" + ("---|---|" if reference else ""))
    blank = " | |" if reference else ""
    print(f"| ruff check --select E711 --no-cache (reference) | {ruff_time:.2f} | 1.00x |{blank}")
    for name, times in rows:
        line = f"| {name} | {times[0]:.2f} | {times[0] / ruff_time:.2f}x |"
        if reference:
            line += f" {times[1]:.2f} | {times[0] / times[1]:.2f} |"
        print(line)
    print(f"| python -c pass (interpreter start, in every row) | {start_time:.2f} | {start_time / ruff_time:.2f}x |"
          f"{blank}")
    print()
    print(f"one file: {first.relative_to(tree).as_posix()}; "
          f"naming the mirror most: {most.relative_to(tree).as_posix()}")


if __name__ == "__main__":
    main()
