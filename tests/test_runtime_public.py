"""The runtime's public face: lazy exports of the Triton backends, clear errors where a
new user lands first (FutureMap on a missing device, resolve on a batch without rows),
and a decision summary that names each backend once."""

import subprocess
import sys
import types

import pytest

torch = pytest.importorskip("torch")

import seqguard.runtime as runtime
from seqguard.runtime import FutureMap, ServerArgs, SpecInfo, explain_needs_cpu_seq_lens

from conftest import REPO


def test_importing_the_runtime_does_not_import_triton_and_the_backends_load_on_first_use():
    code = ("import sys, seqguard.runtime as r\n"
            "assert 'triton' not in sys.modules, 'import seqguard.runtime imported triton'\n"
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


def test_readme_describes_attention_backend_as_the_class_is():
    import inspect
    from conftest import REPO
    from seqguard.runtime import AttentionBackend
    assert not inspect.isabstract(AttentionBackend)
    AttentionBackend()  # a plain base: instantiable, hooks raise NotImplementedError
    section = (REPO / "README.md").read_text().split("## `seqguard.runtime`")[1].split("\n## ")[0]
    bullet = section[section.index("- `AttentionBackend`"):].split("\n- ")[0]
    assert "not an `abc.ABC`" in bullet and "abstract base" not in bullet
