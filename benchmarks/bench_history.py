"""SGLang's history through seqguard's eyes: what a team that adopted seqguard with a
baseline on one release would have been shown on each next one.

Usage:
    python benchmarks/bench_history.py [--versions 0.5.12.post1,...,0.5.23] [--cache DIR]
                                       [--format text|json]

For each release (downloaded once with `pip download --no-deps sglang==V` into the
cache and unzipped there; never committed), `seqguard lint --preset sglang` writes a
baseline of everything it reports; on the next release, lint runs against that baseline
and the table says, per release: findings per code, how many are new since the previous
release, how many moved to another file (the baseline followed them), and how many
entries disappeared while their function remained (the read was fixed or guarded) or
went with their function. Below each row, the new findings themselves (file:line code
and the line), so a defect can be traced to the release that introduced it.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
DEFAULT_VERSIONS = ("0.5.12.post1,0.5.13,0.5.13.post1,0.5.14,0.5.15,0.5.15.post1,0.5.16,0.5.17,"
                    "0.5.18,0.5.19,0.5.20,0.5.21,0.5.22,0.5.23")
CODES = ("SG001", "SG002", "SG003", "SG004", "SG005", "SG006", "SG007", "SG008", "SG009", "SG010")
STALE = re.compile(r"^warning: stale baseline entry(?: \(x(\d+)\))?: (.+?): (SG\d{3}) in (.+?)(?: \(inherits .*\))?: `")
MOVED = re.compile(r"\((\d+) findings? moved to another file\)")


def release(version: str, cache: Path) -> Path:
    """The unzipped wheel of `version` (downloaded into `cache` the first time)."""
    tree = cache / f"sglang-{version}"
    if (tree / "sglang").is_dir():
        return tree
    wheels = cache / "wheels" / version
    wheels.mkdir(parents=True, exist_ok=True)
    if not list(wheels.glob("sglang-*.whl")):
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q",
                        f"sglang=={version}", "-d", str(wheels)], check=True)
    [wheel] = list(wheels.glob("sglang-*.whl"))
    partial = cache / f".sglang-{version}.partial"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(partial)
    partial.rename(tree)  # whole or not at all: a killed unzip is redone next time
    return tree


def lint(tree: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seqguard", "lint", "--no-cache", "--preset", "sglang", *args, "."],
                          cwd=tree, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(SRC)})


def write_baseline(tree: Path, path: Path) -> collections.Counter:
    """Record every finding of `tree` in `path`; per-code counts. `--write-baseline` also
    points a pyproject.toml at it: the release has none, so it is removed again."""
    pyproject = tree / "pyproject.toml"
    had = pyproject.exists()
    try:
        done = lint(tree, "--write-baseline", str(path))
        if done.returncode != 0:
            raise SystemExit(f"{tree}: lint --write-baseline failed:\n{done.stderr[-2000:]}")
    finally:
        if not had and pyproject.exists():
            pyproject.unlink()
    counts: collections.Counter = collections.Counter()
    for entry in json.loads(path.read_text())["findings"]:
        counts[entry["code"]] += entry["count"]
    return counts


def qualnames(path: Path) -> set[str]:
    """`Class.method`, `function` and `<module>` of a file (nothing when it is gone)."""
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return set()
    names = {"<module>"}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                names.add(name)
                walk(child, name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return names


def compare(tree: Path, previous: Path) -> dict:
    """Lint `tree` against the baseline of the release before it."""
    done = lint(tree, "--format", "json", "--baseline", str(previous))
    if done.returncode not in (0, 1):
        raise SystemExit(f"{tree}: lint --baseline failed:\n{done.stderr[-2000:]}")
    new = json.loads(done.stdout)
    moved = MOVED.search(done.stderr)
    fixed, removed = 0, 0
    names: dict[str, set[str]] = {}
    for line in done.stderr.splitlines():
        stale = STALE.match(line)
        if stale is None:
            continue
        times, path, _, scope = int(stale.group(1) or 1), stale.group(2), stale.group(3), stale.group(4)
        if path not in names:
            names[path] = qualnames(tree / path)
        if scope in names[path]:
            fixed += times
        else:
            removed += times
    lines: dict[str, list[str]] = {}
    for finding in new:
        if finding["path"] not in lines:
            lines[finding["path"]] = (tree / finding["path"]).read_text(encoding="utf-8", errors="replace").splitlines()
        text = lines[finding["path"]]
        finding["source"] = text[finding["line"] - 1].strip() if 0 < finding["line"] <= len(text) else ""
    return {"new": new, "moved": int(moved.group(1)) if moved else 0, "fixed": fixed, "removed": removed}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--versions", default=DEFAULT_VERSIONS, help="comma-separated SGLang releases, in order")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "seqguard-sglang-releases")
    parser.add_argument("--format", choices=["text", "json"], default="text")
    args = parser.parse_args()
    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    args.cache.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        previous = None
        for version in versions:
            tree = release(version, args.cache)
            start = time.perf_counter()
            row = {"release": version, "compared": None}
            if previous is not None:
                row["compared"] = compare(tree, previous)
            baseline = Path(scratch) / f"{version}.json"
            row["counts"] = dict(write_baseline(tree, baseline))
            row["seconds"] = round(time.perf_counter() - start, 1)
            rows.append(row)
            previous = baseline
    if args.format == "json":
        print(json.dumps(rows, indent=2))
        return
    used = [c for c in CODES if any(row["counts"].get(c) for row in rows)]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"`seqguard lint --preset sglang`, each release against the baseline of the one before")
    print()
    print("| release | " + " | ".join(used) + " | total | new | moved | fixed or guarded | went with their code |")
    print("|---|" + "---|" * (len(used) + 5))
    for row in rows:
        counts = [str(row["counts"].get(c, 0)) for c in used]
        total = sum(row["counts"].values())
        c = row["compared"]
        tail = ["-", "-", "-", "-"] if c is None else [str(len(c["new"])), str(c["moved"]), str(c["fixed"]),
                                                       str(c["removed"])]
        print(f"| {row['release']} | " + " | ".join(counts) + f" | {total} | " + " | ".join(tail) + " |")
    print()
    for row in rows:
        if row["compared"] and row["compared"]["new"]:
            print(f"new in {row['release']}:")
            for f in sorted(row["compared"]["new"], key=lambda f: (f["path"], f["line"], f["code"])):
                print(f"  {f['path']}:{f['line']}: {f['code']}  {f['source'][:100]}")
            print()


if __name__ == "__main__":
    main()
