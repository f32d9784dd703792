import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

# tests/data holds projects to lint, not tests: their `test_run.py` scripts fail on purpose
collect_ignore_glob = ["data/*"]

REPO = Path(__file__).resolve().parent.parent
ENGINE = REPO / "fixtures" / "engine"


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path_factory, monkeypatch) -> None:
    """Lint's cache lives in the user's cache directory; tests get their own, fresh."""
    monkeypatch.setenv("SEQGUARD_CACHE_DIR", str(tmp_path_factory.mktemp("seqguard-cache")))


@pytest.fixture(autouse=True)
def _triton_mode_kept():
    """`seqguard bench --device cpu` run in-process (CliRunner) sets TRITON_INTERPRET for
    its kernels; a later test's rank processes would inherit it and interpret GPU
    kernels. Each test leaves the variable as it found it."""
    before = os.environ.get("TRITON_INTERPRET")
    yield
    if before is None:
        os.environ.pop("TRITON_INTERPRET", None)
    else:
        os.environ["TRITON_INTERPRET"] = before


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def project(tmp_path: Path):
    """Write a small project: project({"pkg/a.py": "..."}) -> root path."""

    def write(files: dict, pyproject: str = "[tool.seqguard]\n") -> Path:
        (tmp_path / "pyproject.toml").write_text(pyproject)
        for rel, text in files.items():
            path = tmp_path / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(text, bytes):
                path.write_bytes(text)
            else:
                path.write_text(textwrap.dedent(text))
        return tmp_path

    return write


@pytest.fixture
def engine_copy(tmp_path: Path) -> Path:
    """A writable copy of the example engine (tests that edit, baseline or rewrite it)."""
    target = tmp_path / "engine_tree"
    shutil.copytree(ENGINE, target)
    return target


@pytest.fixture
def chdir(monkeypatch):
    def go(path: Path) -> None:
        monkeypatch.chdir(path)
    return go


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        # Triton compiles for the GPU here, and cannot run a kernel on CPU tensors; the
        # interpreter is chosen once per process, before any kernel is defined.
        if os.environ.get("TRITON_INTERPRET") != "1":
            skip = pytest.mark.skip(reason="runs Triton kernels on CPU tensors, which needs Triton's interpreter "
                                           "for the whole process: a CPU-only machine (CI) runs these")
            for item in items:
                if "interpreter" in item.keywords:
                    item.add_marker(skip)
        return
    skip = pytest.mark.skip(reason="needs a CUDA device; CI has none (run on the GPU machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


os.environ.setdefault("SEQGUARD_STRICT", "0")


def _cuda_available() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:
        return False


# Without a GPU, Triton kernels run in Triton's CPU interpreter; it must be chosen
# before any kernel is defined, so here, before test modules import the runtime.
if not _cuda_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.fixture(scope="session")
def sglang_release(tmp_path_factory):
    """release("0.5.23") -> the Python files of that SGLang release in a scratch folder,
    copied from an unpacked wheel named by SEQGUARD_SGLANG_<version>_TREE (dots as
    underscores, used read-only; SEQGUARD_SGLANG_TREE for 0.5.23) or downloaded from the
    package index. Skips the test, saying why, when neither is possible, or fails it
    with SEQGUARD_SGLANG_REQUIRED=1 (a run that must not pass without real code)."""
    trees: dict = {}

    def release(version: str) -> Path:
        if version in trees:
            return trees[version]
        local = os.environ.get(f"SEQGUARD_SGLANG_{version.replace('.', '_').upper()}_TREE")
        if version == "0.5.23":
            local = local or os.environ.get("SEQGUARD_SGLANG_TREE")
        if version == "0.5.12.post1":
            local = local or os.environ.get("SEQGUARD_SGLANG_0_5_12_TREE")
        root = tmp_path_factory.mktemp("sglang")
        tree = root / "tree"
        if local:
            shutil.copytree(local, tree, ignore=lambda _, names: [n for n in names if n.endswith(".dist-info")])
        else:
            done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                                   "-d", str(root / "wheel"), f"sglang=={version}"], capture_output=True, text=True)
            if done.returncode != 0:
                why = f"cannot download sglang=={version} from the package index: {done.stderr.strip()[-300:]}"
                if os.environ.get("SEQGUARD_SGLANG_REQUIRED") == "1":
                    pytest.fail(why + " (SEQGUARD_SGLANG_REQUIRED=1: the real-code tests may not be skipped)")
                pytest.skip(why + "; set SEQGUARD_SGLANG_<VERSION>_TREE to an unpacked wheel")
            wheel = next((root / "wheel").glob("sglang-*.whl"))
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(tree, [n for n in archive.namelist() if n.endswith(".py")])
        trees[version] = tree
        return tree

    return release


def bench_module(name: str):
    """A benchmark script of benchmarks/ imported as a module (they are not a package)."""
    import importlib.util

    path = REPO / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
