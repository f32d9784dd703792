"""The runtime's public face: lazy exports of the Triton backends, clear errors where a
new user lands first (FutureMap on a missing device, resolve on a batch without rows),
and a decision summary that names each backend once."""

import ast
import subprocess
import sys
import types

import pytest

torch = pytest.importorskip("torch")

import seqguard.runtime as runtime
from seqguard.bench.batch import ServerArgs, SpecInfo
from seqguard.runtime import FutureMap, explain_needs_cpu_seq_lens

from conftest import REPO


def test_importing_the_runtime_does_not_import_triton_and_the_backends_load_on_first_use():
    code = ("import sys, seqguard.runtime as r\n"
            "assert 'triton' not in sys.modules, 'import seqguard.runtime imported triton'\n"
            "assert 'torch' not in sys.modules, 'import seqguard.runtime imported torch'\n"
            "assert {'TritonAttnBackend', 'TritonMultiStepDraftBackend'} <= set(r.__all__) & set(dir(r))\n"
            "assert 'triton' not in sys.modules, 'dir() imported triton'\n"
            "from seqguard.runtime import TritonAttnBackend, TritonMultiStepDraftBackend\n"
            "from seqguard.runtime.attention import triton_backend as t\n"
            "assert TritonAttnBackend is t.TritonAttnBackend\n"
            "assert TritonMultiStepDraftBackend is t.TritonMultiStepDraftBackend\n"
            "assert 'triton' in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin", "TRITON_INTERPRET": "1"})
    assert done.returncode == 0, done.stderr


def test_the_fallback_helpers_import_without_torch():
    # `None` in sys.modules makes `import torch` raise ImportError, as on a machine without it.
    code = ("import sys\n"
            "sys.modules['torch'] = None\n"
            "from seqguard.runtime.fallback import host_seq_lens, host_seq_lens_sum\n"
            "assert host_seq_lens([3, 4], None) == [3, 4] and host_seq_lens_sum(7, None) == 7\n"
            "from seqguard.runtime import AttentionBackend, decide_needs_cpu_seq_lens\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr


def _runtime_imports(path):
    """(module, name) for every `from seqguard.runtime... import name` in `path`."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("seqguard.runtime"):
            for alias in node.names:
                yield node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("seqguard.runtime"):
                    yield alias.name, None


def test_the_bench_engine_uses_only_the_runtimes_public_api():
    import importlib
    public_modules = {"seqguard.runtime", "seqguard.runtime.ops", "seqguard.runtime.fallback"}
    found = []
    for path in sorted((REPO / "src" / "seqguard" / "bench").glob("*.py")):
        for module, name in _runtime_imports(path):
            found.append((path.name, module, name))
            exported = importlib.import_module(module).__all__ if module in public_modules else ()
            # a public module imported whole (`from seqguard.runtime import fallback`) is fine too
            whole = name is not None and f"{module}.{name}" in public_modules
            assert whole or name in exported, f"{path.name}: imports {name!r} from {module}, not the public API"
    assert len(found) >= 6  # the engine does use the runtime: this walked real imports


def _private_names_defined_in(package):
    """`_name`s that the package's classes define (methods, `self._x = ...`)."""
    names = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                for item in ast.walk(node):
                    if isinstance(item, ast.FunctionDef) and item.name.startswith("_") \
                            and not item.name.startswith("__"):
                        names.add(item.name)
                    if isinstance(item, ast.Attribute) and isinstance(item.ctx, ast.Store) \
                            and item.attr.startswith("_") and not item.attr.startswith("__"):
                        names.add(item.attr)
    return names


def test_no_private_member_of_a_runtime_class_is_used_from_another_object():
    runtime_dir = REPO / "src" / "seqguard" / "runtime"
    private = _private_names_defined_in(runtime_dir)
    assert "_decode_metadata" in private  # the walk sees what it guards
    crossings = []
    for path in sorted(runtime_dir.rglob("*.py")) + sorted((REPO / "src" / "seqguard" / "bench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in private \
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                crossings.append(f"{path.name}:{node.lineno}: .{node.attr}")
    assert crossings == []


def test_an_unknown_runtime_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'TritonBackend'"):
        runtime.TritonBackend  # noqa: B018


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only error")
def test_future_map_on_an_unavailable_device_is_one_clear_error():
    with pytest.raises(RuntimeError, match=r"FutureMap: expected an available device, got 'cuda' but "
                                           r"torch.cuda.is_available\(\) is False .* use FutureMap\('cpu'"):
        FutureMap("cuda", 4)


@pytest.mark.parametrize("batch, got", [
    (types.SimpleNamespace(spec_info=None, req_pool_indices=torch.tensor([0])), "got no batch.spec_info"),
    (types.SimpleNamespace(spec_info=SpecInfo(), req_pool_indices=torch.tensor([0])),
     "got batch.spec_info \\(SpecInfo\\) without future_indices"),
    (types.SimpleNamespace(spec_info=SpecInfo(future_indices=torch.tensor([0]))), "expected batch.req_pool_indices"),
])
def test_resolve_on_a_batch_without_its_rows_names_what_is_missing(batch, got):
    fm = FutureMap("cpu", 4)
    with pytest.raises(ValueError, match=f"FutureMap.resolve_seq_lens_cpu: .*{got}"):
        fm.resolve_seq_lens_cpu(batch)


class Opt:
    needs_cpu_seq_lens = False


class Keep:
    needs_cpu_seq_lens = True


def test_the_decision_names_each_backend_once():
    off = explain_needs_cpu_seq_lens(ServerArgs(), [Opt(), Opt(), None])
    assert off.summary() == "host seq_lens mirror: off (every backend opts out: Opt)"
    on = explain_needs_cpu_seq_lens(ServerArgs(), [Keep(), Opt(), Keep()])
    assert on.summary() == "host seq_lens mirror: on (Keep needs it)"


def test_the_runtime_guide_describes_attention_backend_as_the_class_is():
    import inspect
    from conftest import REPO
    from seqguard.runtime import AttentionBackend
    assert not inspect.isabstract(AttentionBackend)
    AttentionBackend()  # a plain base: instantiable, hooks raise NotImplementedError
    section = (REPO / "docs" / "guides" / "runtime.md").read_text().split("## The API")[1].split("\n## ")[0]
    bullet = section[section.index("- `AttentionBackend`"):].split("\n- ")[0]
    assert "not an `abc.ABC`" in bullet and "abstract base" not in bullet


def test_the_runtime_guides_snippet_of_an_engines_own_pool_runs(capsys):
    section = (REPO / "docs" / "guides" / "runtime.md").read_text().split("## The API")[1].split("\n## ")[0]
    snippet = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert "class EnginePool" in snippet and "TokenKVPool" not in snippet
    exec(compile(snippet, "docs/guides/runtime.md", "exec"), {})  # TRITON_INTERPRET=1 off the GPU (conftest)
    assert capsys.readouterr().out == "torch.Size([2, 128])\n"


def test_the_runtime_imports_nothing_above_it():
    runtime_dir = REPO / "src" / "seqguard" / "runtime"
    above = ("seqguard.bench", "seqguard.cli", "seqguard.lint", "seqguard.codemods")
    found = []
    for path in sorted(runtime_dir.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            found += [f"{path.relative_to(runtime_dir)}: {m}" for m in modules if m.startswith(above)]
    assert found == []


def test_the_runtime_exports_the_contract_and_not_the_demo_engine():
    assert set(runtime.__all__) == {
        "AttentionBackend", "UndeclaredFlagWarning", "Decision", "RankDecisionError", "decide_needs_cpu_seq_lens",
        "explain_needs_cpu_seq_lens", "FutureMap", "StalePublishError", "ForwardMode", "decode_total_seq_lens",
        "draft_seq_lens_sum", "SpecWorkerBackends", "KVPool", "AttentionLayer", "TritonAttnBackend",
        "TritonMultiStepDraftBackend"}
    for name in ("ServerArgs", "Req", "ScheduleBatch", "ForwardBatch", "SpecInfo", "host_to_device"):
        with pytest.raises(AttributeError):
            getattr(runtime, name)
