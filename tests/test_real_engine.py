"""On real code: SGLang's released source (from PyPI, never committed) and the Python
standard library go through lint and codemod without a crash or a spurious change."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from seqguard.cli import main

pytestmark = pytest.mark.slow
SGLANG = "sglang==0.5.23"


@pytest.fixture(scope="module")
def sglang_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("sglang")
    local = os.environ.get("SEQGUARD_SGLANG_TREE")  # an unpacked sglang 0.5.23 wheel, used read-only
    if local:
        tree = root / "tree"
        shutil.copytree(local, tree, ignore=lambda _, names: [n for n in names if n.endswith(".dist-info")])
        return tree
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                           "-d", str(root / "wheel"), SGLANG], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot download {SGLANG} from the package index: {done.stderr.strip()[-300:]}")
    wheel = next((root / "wheel").glob("sglang-*.whl"))
    tree = root / "tree"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tree, [n for n in archive.namelist() if n.endswith(".py")])
    return tree


def run_json(runner, *args):
    result = runner.invoke(main, [*map(str, args)])
    return result, json.loads(result.stdout) if result.stdout.strip().startswith(("[", "{")) else None


def test_lint_on_sglang_finds_the_known_contract_breaks(runner, sglang_tree, chdir):
    chdir(sglang_tree)
    result, found = run_json(runner, "lint", "--no-cache", "--format", "json", ".")
    assert result.exit_code == 1 and found is not None
    assert not [f for f in found if f["code"] == "SG000"]
    codes = {(f["path"], f["line"], f["code"]) for f in found}
    # a backend that inherits the flag without saying so
    assert ("sglang/srt/layers/attention/flashinfer_backend.py", 319, "SG001") in codes
    # a backend that opts out yet syncs lengths to the host itself
    assert ("sglang/srt/layers/attention/dsa_backend.py", 1082, "SG004") in codes
    # ... and reads the mirror without a guard
    assert ("sglang/srt/layers/attention/dsa_backend.py", 1256, "SG003") in codes
    # ... but not where it materialises the mirror itself just before reading it
    assert ("sglang/srt/layers/attention/dsa_backend.py", 1197, "SG003") not in codes
    # the diffusion models' unrelated AttentionBackend is told apart by a qualified base
    qualified = runner.invoke(main, ["lint", "--no-cache", "--select", "SG001", "--format", "json", "--backend-base",
                                     "sglang.srt.layers.attention.base_attn_backend.AttentionBackend", "."])
    paths = {f["path"] for f in json.loads(qualified.stdout)}
    assert paths and not any(p.startswith("sglang/multimodal_gen/") for p in paths)


def test_codemod_on_sglang_keeps_its_invariants(runner, sglang_tree, tmp_path, chdir):
    tree = tmp_path / "copy"
    shutil.copytree(sglang_tree, tree)
    chdir(tree)
    before = {p: p.read_bytes() for p in tree.rglob("*.py")}
    sg004_before = sg004(runner)
    result, report = run_json(runner, "codemod", "--no-cache", "--report", "json", ".")
    assert result.exit_code == 0, result.stderr[-2000:]
    changed = {f["path"] for f in report["files"] if f["status"] == "changed"}
    assert len(changed) >= 20
    for path, old in before.items():
        new = path.read_bytes()
        if path.relative_to(tree).as_posix() in changed:
            compile(new, str(path), "exec")
        else:
            assert new == old, path
    lint, left = run_json(runner, "lint", "--no-cache", "--select", "SG002,SG003", "--format", "json", ".")
    # what lint still reports is exactly what the codemod listed for a manual fix, with why
    manual = sorted((f["path"], m["reason"]) for f in report["files"] for m in f["manual"])
    assert len(left) == len(manual) and {f["path"] for f in left} == {path for path, _ in manual}
    assert all(reason for _, reason in manual)
    again = runner.invoke(main, ["codemod", "--no-cache", "--check", "."])
    assert again.exit_code == 0 and "0 file(s) would change" in again.stderr
    # No host sync written where a backend opted out: not one new SG004 ...
    assert sg004(runner) == sg004_before
    refused = [s for f in report["files"] for s in f["sites"] if s["no_sync_reason"]]
    assert refused and all(s["fallback"] == "raise" and not s["host_sync"] for s in refused)
    # ... and every line the codemod wrote fits in 88 columns.
    written = [line for path, old in before.items() if path.relative_to(tree).as_posix() in changed
               for line in set(path.read_text().splitlines()) - set(old.decode().splitlines())]
    assert written and [line for line in written if len(line) > 88] == []


def sg004(runner) -> list:
    """SG004 findings by file and message (guards move lines)."""
    result = runner.invoke(main, ["lint", "--no-cache", "--select", "SG004", "--format", "json", "."])
    return sorted((f["path"], f["message"]) for f in json.loads(result.stdout))


def test_lint_on_the_standard_library_is_clean(runner):
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    result = runner.invoke(main, ["lint", "--no-cache", "--format", "json", str(stdlib)])
    assert result.exit_code == 0, result.stdout[-2000:]
    assert json.loads(result.stdout) == []
