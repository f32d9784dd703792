"""Codemod speed and invariants on a large real tree.

Usage:
    pip download --no-deps sglang==0.5.23 -d /tmp/sg && (cd /tmp/sg && unzip -q -o sglang-*.whl)
    python benchmarks/bench_codemod.py /tmp/sg [--repeat 3]

Copies the tree to a scratch directory for every run (the original is never touched),
times a cold full `seqguard codemod` (no cache, all cores, interpreter start included),
then checks the invariants: lint finds no SG002/SG003 left, a second run changes
nothing, every changed file compiles.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tree", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    seqguard = [sys.executable, "-m", "seqguard"]
    times, report = [], None
    with tempfile.TemporaryDirectory() as scratch:
        for i in range(args.repeat):
            tree = Path(scratch) / f"tree{i}"
            shutil.copytree(args.tree, tree, ignore=shutil.ignore_patterns(".seqguard_cache"))
            start = time.perf_counter()
            done = subprocess.run([*seqguard, "codemod", "--no-cache", "--report", "json", "."], cwd=tree,
                                  capture_output=True, text=True)
            times.append(time.perf_counter() - start)
            report = json.loads(done.stdout)
        lint = subprocess.run([*seqguard, "lint", "--no-cache", "--select", "SG002,SG003", "--format", "json", "."],
                              cwd=tree, capture_output=True, text=True)
        left = json.loads(lint.stdout)
        again = subprocess.run([*seqguard, "codemod", "--no-cache", "--check", "."], cwd=tree,
                               capture_output=True, text=True)
        changed = [f["path"] for f in report["files"] if f["status"] == "changed"]
        for rel in changed:
            compile((tree / rel).read_bytes(), rel, "exec")
    s = report["summary"]
    print(f"tree: {args.tree}; machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print()
    print("| measure | value |")
    print("|---|---|")
    print(f"| full codemod, cold, median of {args.repeat} (s) | {statistics.median(times):.2f} |")
    print(f"| files changed / skipped | {s['files_changed']} / {s['files_skipped']} |")
    print(f"| maintenance / consumer sites guarded | {s['maintenance_sites']} / {s['consumer_sites']} |")
    print(f"| host-sync fallbacks reported | {s['host_sync_fallbacks']} |")
    print(f"| sites left for a manual fix (with reason) | {s['manual_sites']} |")
    print(f"| SG002/SG003 left after the run | {len(left)} |")
    print(f"| second run: would change | {'nothing' if again.returncode == 0 else 'SOMETHING'} |")
    print(f"| changed files that compile | {len(changed)}/{len(changed)} |")


if __name__ == "__main__":
    main()
