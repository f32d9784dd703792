"""Cross-module backend resolution, whatever the import style."""

import json
import shutil
from pathlib import Path

import pytest

from seqguard.config import load_config
from seqguard.lint.cache import project_cache_dir
from seqguard.lint.runner import lint_paths

FILES = {
    "pkg/__init__.py": "",
    "pkg/attn/__init__.py": "from .base import AttentionBackend\n",
    "pkg/attn/base.py": "class AttentionBackend:\n    needs_cpu_seq_lens: bool = True\n",
    "pkg/attn/a.py": "from pkg.attn.base import AttentionBackend as B\n\n\nclass A(B):\n    pass\n",
    "pkg/attn/b.py": "import pkg.attn.base as base\n\n\nclass Bk(base.AttentionBackend):\n    needs_cpu_seq_lens = "
                     "False\n",
    "pkg/attn/c.py": ("from .b import Bk\n\n\nclass C(Bk):\n    def f(self, fb):\n"
                      "        return fb.seq_lens_cpu.max()\n"),
    "pkg/attn/d.py": "from pkg.attn import AttentionBackend\n\n\nclass D(AttentionBackend):\n    pass\n",
    "pkg/attn/e.py": "from ..attn import b as bmod\n\n\nclass E(bmod.Bk):\n    needs_cpu_seq_lens = False\n",
    "pkg/other.py": "class AttentionBackend:\n    pass\n\n\nclass Unrelated(AttentionBackend):\n    pass\n",
}


def findings(root: Path, *paths: str, **overrides) -> set[tuple[str, int, str]]:
    targets = [root / p for p in paths] or [root]
    config = load_config(targets, overrides=overrides)
    result = lint_paths(targets, config, use_cache=False, jobs=1)
    return {(Path(d.path).relative_to(root).as_posix() if Path(d.path).is_absolute() else d.path, d.line, d.code)
            for d in result.diagnostics}


def test_every_import_style_resolves(project):
    root = project(FILES, '[tool.seqguard]\nbackend-bases = ["pkg.attn.base.AttentionBackend"]\n')
    found = findings(root)
    assert found == {
        ("pkg/attn/a.py", 4, "SG001"),
        ("pkg/attn/a.py", 4, "SG006"),  # inherits True, never reads
        ("pkg/attn/c.py", 4, "SG001"),
        ("pkg/attn/c.py", 6, "SG003"),
        ("pkg/attn/d.py", 4, "SG001"),
        ("pkg/attn/d.py", 4, "SG006"),
    }


def test_plain_base_name_matches_both_same_named_classes(project):
    root = project(FILES)
    found = findings(root)
    assert ("pkg/other.py", 5, "SG001") in found


def test_single_file_still_sees_the_whole_project(project):
    root = project(FILES)
    found = findings(root, "pkg/attn/c.py")
    assert found == {("pkg/attn/c.py", 4, "SG001"), ("pkg/attn/c.py", 6, "SG003")}


def test_parallel_and_serial_agree(project):
    files = dict(FILES)
    for i in range(40):
        files[f"pkg/attn/gen_{i}.py"] = (f"from .b import Bk\n\n\nclass G{i}(Bk):\n"
                                         f"    def f(self, fb):\n        return fb.seq_lens_sum * {i}\n")
    root = project(files)
    config = load_config([root])
    serial = lint_paths([root], config, use_cache=False, jobs=1).diagnostics
    parallel = lint_paths([root], config, use_cache=False, jobs=2).diagnostics
    assert serial == parallel and len(serial) > 80


def test_cache_invalidates_on_edit_and_on_config(project, monkeypatch):
    import seqguard.lint.runner as runner_module

    import os
    import time

    root = project(FILES)
    # written a while ago: a file modified in the run's own second is never trusted to
    # the cache (racy timestamps), so the files must be older for it to answer
    past = time.time() - 60
    for path in root.rglob("*"):
        os.utime(path, (past, past))
    config = load_config([root])
    first = lint_paths([root], config).diagnostics
    assert project_cache_dir(root).is_dir() and not (root / ".seqguard_cache").exists()
    # nothing changed: the cache answers, no file is analysed again
    real_lint = runner_module._lint
    monkeypatch.setattr(runner_module, "_lint", lambda *a, **k: pytest.fail("analysed although nothing changed"))
    again = lint_paths([root], config).diagnostics
    assert first == again
    monkeypatch.setattr(runner_module, "_lint", real_lint)
    # an edit: B now declares its flag
    (root / "pkg/attn/a.py").write_text(FILES["pkg/attn/a.py"].replace("pass", "needs_cpu_seq_lens = True"))
    after_edit = lint_paths([root], config).diagnostics
    before = {(d.path, d.code) for d in first}
    assert before - {(d.path, d.code) for d in after_edit} == {(str(root / "pkg/attn/a.py"), "SG001")}
    # a config change: a different mirror name finds no reads
    (root / "pyproject.toml").write_text('[tool.seqguard]\nmirror-attributes = ["host_lens"]\n')
    renamed = lint_paths([root], load_config([root])).diagnostics
    assert not any(d.code == "SG003" for d in renamed)


# ---- module names as the import system computes them ---------------------------

def test_namespace_packages_resolve_like_regular_ones(project):
    # PEP 420: no __init__.py anywhere (SGLang's `sglang/srt` is laid out like this)
    files = {rel: text for rel, text in FILES.items() if not rel.endswith("__init__.py") and rel != "pkg/attn/d.py"}
    root = project(files, '[tool.seqguard]\nbackend-bases = ["pkg.attn.base.AttentionBackend"]\n')
    assert findings(root) == {
        ("pkg/attn/a.py", 4, "SG001"),
        ("pkg/attn/a.py", 4, "SG006"),
        ("pkg/attn/c.py", 4, "SG001"),
        ("pkg/attn/c.py", 6, "SG003"),
    }


def test_src_layout_and_configured_source_roots(project):
    files = {f"src/{rel}": text for rel, text in FILES.items() if rel != "pkg/attn/d.py"}
    root = project(files, '[tool.seqguard]\nbackend-bases = ["pkg.attn.base.AttentionBackend"]\n')
    expected = {("src/pkg/attn/a.py", 4, "SG001"), ("src/pkg/attn/a.py", 4, "SG006"),
                ("src/pkg/attn/c.py", 4, "SG001"), ("src/pkg/attn/c.py", 6, "SG003")}
    assert findings(root) == expected
    # a source root named in config, as Ruff's `src`
    shutil.rmtree(root / "src")
    moved = {f"python/{rel}": text for rel, text in FILES.items() if rel != "pkg/attn/d.py"}
    other = project(moved, '[tool.seqguard]\nsrc = ["python"]\nbackend-bases = ["pkg.attn.base.AttentionBackend"]\n')
    assert findings(other) == {(p.replace("src/", "python/"), line, code) for p, line, code in expected}


def test_module_names_follow_source_roots():
    from seqguard.lint.index import module_names
    names = module_names(["a/b/c.py", "a/__init__.py", "src/pkg/m.py", "src/pkg/__init__.py", "top.py",
                          "lib/__init__.py", "lib/x.py"], (".", "src", "lib"))
    assert names == {"a/b/c.py": "a.b.c", "a/__init__.py": "a", "src/pkg/m.py": "pkg.m",
                     "src/pkg/__init__.py": "pkg", "top.py": "top",
                     # `lib` holds __init__.py: a package, not a source root
                     "lib/__init__.py": "lib", "lib/x.py": "lib.x"}


ENGINE_WITHOUT_PYPROJECT = {
    "engine/__init__.py": "",
    "engine/attention/__init__.py": "",
    "engine/attention/base.py": "class AttentionBackend:\n    needs_cpu_seq_lens = True\n",
    "engine/attention/flash_like.py": (
        "from engine.attention.base import AttentionBackend\n\n\n"
        "class FlashLikeBackend(AttentionBackend):\n    needs_cpu_seq_lens = False\n"),
    "engine/attention/child.py": (
        "from engine.attention.flash_like import FlashLikeBackend\n\n\n"
        "class ChildBackend(FlashLikeBackend):\n"
        "    def init_forward_metadata(self, fb):\n"
        "        self.max_len = fb.seq_lens.max().item()\n"
        "        return fb.seq_lens_cpu.tolist()\n"),
}


def _write(root: Path, files: dict) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_without_pyproject_the_root_is_above_the_top_package(tmp_path, runner, chdir):
    from seqguard.cli import main
    _write(tmp_path / "checkout", ENGINE_WITHOUT_PYPROJECT)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    chdir(elsewhere)
    engine = tmp_path / "checkout" / "engine"
    result = runner.invoke(main, ["lint", "--no-cache", "--output-format", "json", str(engine)])
    found = {(Path(f["path"]).name, f["line"], f["code"], f["reason"]) for f in json.loads(result.stdout)}
    assert {(n, line, code) for n, line, code, _ in found} == {
        ("child.py", 4, "SG001"), ("child.py", 6, "SG004"), ("child.py", 7, "SG003")}
    reason = next(m for n, _, code, m in found if code == "SG001")
    assert reason == "it inherits False (inherited from FlashLikeBackend)"


def test_two_file_opt_out_parent_fix_writes_false(tmp_path, runner, chdir):
    from seqguard.cli import main
    _write(tmp_path, ENGINE_WITHOUT_PYPROJECT)
    chdir(tmp_path)
    result = runner.invoke(main, ["lint", "--no-cache", "--select", "SG001,SG003", "--fix", "engine"])
    assert "SG003" in result.stdout
    child = (tmp_path / "engine/attention/child.py").read_text()
    assert "class ChildBackend(FlashLikeBackend):\n    needs_cpu_seq_lens = False\n" in child


def test_an_unresolvable_base_makes_the_flag_unknown_and_offers_no_fix(project):
    files = {
        "pkg/base.py": "class AttentionBackend:\n    needs_cpu_seq_lens = True\n",
        "pkg/b.py": ("from thirdparty.mixins import CachedMixin\nfrom pkg.base import AttentionBackend\n\n\n"
                     "class B(CachedMixin, AttentionBackend):\n"
                     "    def f(self, fb):\n        return fb.seq_lens_cpu.max()\n"),
        # the standard library and torch never declare the flag: looked through
        "pkg/c.py": ("import abc\nfrom pkg.base import AttentionBackend\n\n\n"
                     "class C(abc.ABC, AttentionBackend):\n    needs_cpu_seq_lens = True\n"
                     "\n\nclass D(C):\n    pass\n"),
    }
    root = project(files, '[tool.seqguard]\nbackend-bases = ["pkg.base.AttentionBackend"]\n')
    config = load_config([root])
    result = lint_paths([root], config, use_cache=False, jobs=1)
    by_code = {(Path(d.path).name, d.code): d for d in result.diagnostics}
    sg001 = by_code[("b.py", "SG001")]
    assert sg001.reason == "it inherits an unknown value (base `thirdparty.mixins.CachedMixin` could not be resolved)"
    assert not sg001.fixable
    assert "an unknown value" in by_code[("b.py", "SG003")].message
    assert by_code[("c.py", "SG001")].reason == "it inherits True (inherited from C)"
    assert by_code[("c.py", "SG001")].fixable


def test_star_imports_and_nested_names_resolve(project):
    files = {
        "pkg/base.py": "class AttentionBackend:\n    needs_cpu_seq_lens = True\n",
        "pkg/reexport.py": "from pkg.base import *\n",
        "pkg/a.py": "from pkg.reexport import *\n\n\nclass A(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
                    "    class Inner(AttentionBackend):\n        needs_cpu_seq_lens = False\n\n\n"
                    "class B(A.Inner):\n    needs_cpu_seq_lens = False\n",
    }
    root = project(files, '[tool.seqguard]\nbackend-bases = ["pkg.base.AttentionBackend"]\n')
    config = load_config([root])
    result = lint_paths([root], config, use_cache=False, jobs=1, need_index=True)
    backends = {c.id for c in result.index.backends()}
    assert backends == {"pkg.a.A", "pkg.a.A.Inner", "pkg.a.B"}


def test_reads_through_calls_do_not_depend_on_call_order_and_name_the_callee_at_the_site(project):
    chain = ("def reads(x):\n    return x + 1\n\n\ndef hop1(x):\n    return hop2(x)\n\n\n"
             "def hop2(x):\n    return hop3(x)\n\n\ndef hop3(x):\n    return reads(x)\n\n\n")
    # hop3 first: its answer must not be reused for hop1 with the wrong name or depth
    root = project({"m.py": chain + "def caller(b):\n    hop3(b.seq_lens_sum)\n    hop1(b.seq_lens_sum)\n"})
    result = lint_paths([root], load_config([root]), use_cache=False, jobs=1)
    messages = {d.line: d.message for d in result.diagnostics if d.code == "SG002"}
    assert sorted(messages) == [18, 19]
    assert "passed to `hop3`" in messages[18] and "passed to `hop1`" in messages[19]


def test_a_recursive_call_chain_is_followed_from_every_entry(project):
    source = ("def reads(x):\n    return x + 1\n\n\ndef f(x):\n    g(x)\n    reads(x)\n\n\n"
              "def g(x):\n    f(x)\n\n\ndef caller(b):\n    f(b.seq_lens_sum)\n    g(b.seq_lens_sum)\n")
    root = project({"m.py": source})
    result = lint_paths([root], load_config([root]), use_cache=False, jobs=1)
    assert sorted(d.line for d in result.diagnostics if d.code == "SG002") == [15, 16]


HIERARCHY_FORMS = {
    "eng/__init__.py": "",
    "eng/base.py": ("class AttentionBackend:\n    needs_cpu_seq_lens = True\n\n\n"
                    "class Opt(AttentionBackend):\n    needs_cpu_seq_lens = False\n\n\nOptAlias = Opt\n"),
    # an import fallback: the first binding is what runs where the engine is installed
    "eng/kids.py": ("try:\n    from eng.base import Opt\nexcept ImportError:\n    from eng.fallback import Opt\n\n\n"
                    "class TryChild(Opt):\n    def f(self, b):\n        return b.seq_lens_cpu.max()\n"),
    # a class named like the base it imports
    "eng/shadow.py": ("from eng.base import Opt\n\n\nclass Opt(Opt):\n"
                      "    def f(self, b):\n        return b.seq_lens_cpu.max()\n"),
    # a module-level alias of a class, imported elsewhere
    "eng/alias.py": ("from eng.base import OptAlias\n\n\nclass AliasChild(OptAlias):\n"
                     "    def f(self, b):\n        return b.seq_lens_cpu.max()\n"),
}


def test_import_fallbacks_shadowing_names_and_class_aliases_resolve(project):
    root = project(HIERARCHY_FORMS, '[tool.seqguard]\nbackend-bases = ["eng.base.AttentionBackend"]\n')
    assert findings(root) == {
        ("eng/kids.py", 7, "SG001"), ("eng/kids.py", 9, "SG003"),
        ("eng/shadow.py", 4, "SG001"), ("eng/shadow.py", 6, "SG003"),
        ("eng/alias.py", 4, "SG001"), ("eng/alias.py", 6, "SG003"),
    }


# An engine imported when installed, a stand-in otherwise: what runs where the engine is
# installed is the branch that imports it, whichever of the two it is.
IMPORT_FALLBACK_BASES = {
    "eng/__init__.py": "",
    "eng/base.py": "class AttentionBackend:\n    needs_cpu_seq_lens = True\n",
    # a stand-in class defined in the handler
    "eng/stub_class.py": ("try:\n    from eng.base import AttentionBackend\nexcept ImportError:\n"
                          "    class AttentionBackend:\n        pass\n\n\n"
                          "class StubClass(AttentionBackend):\n    needs_cpu_seq_lens = False\n\n"
                          "    def f(self, fb):\n        return fb.seq_lens_sum + 1\n\n\n"
                          "class NoFlag(AttentionBackend):\n    def f(self, fb):\n"
                          "        return fb.seq_lens_sum + 1\n"),
    # a stand-in name bound to `object`
    "eng/stub_object.py": ("try:\n    from eng.base import AttentionBackend\nexcept ImportError:\n"
                           "    AttentionBackend = object\n\n\n"
                           "class StubObject(AttentionBackend):\n    needs_cpu_seq_lens = False\n\n"
                           "    def f(self, fb):\n        return fb.seq_lens_sum + 1\n"),
    # the other way round: a vendored base first, the engine's in the handler
    "eng/engine_second.py": ("try:\n    import vendored_kernels\n    AttentionBackend = vendored_kernels.Base\n"
                             "except ImportError:\n    from eng.base import AttentionBackend\n\n\n"
                             "class EngineSecond(AttentionBackend):\n    needs_cpu_seq_lens = False\n\n"
                             "    def f(self, fb):\n        return fb.seq_lens_sum + 1\n"),
    "eng/import_second.py": ("try:\n    from vendored_kernels import AttentionBackend\n"
                             "except ImportError:\n    from .base import AttentionBackend\n\n\n"
                             "class ImportSecond(AttentionBackend):\n    def f(self, fb):\n"
                             "        return fb.seq_lens_sum + 1\n"),
    # re-exported from a module whose stand-in would shadow it
    "eng/reexport.py": "from eng.stub_class import AttentionBackend\n\n\nclass Again(AttentionBackend):\n    pass\n",
    # a class of the same name that is no stand-in (no import of it in the `try`)
    "eng/plain.py": ("try:\n    import numpy\nexcept ImportError:\n    numpy = None\n\n\n"
                     "class AttentionBackend:\n    pass\n\n\nclass Unrelated(AttentionBackend):\n"
                     "    def f(self, fb):\n        return fb.seq_lens_sum + 1\n"),
}


def test_a_base_behind_an_import_fallback_is_the_engine_s_base(project):
    root = project(IMPORT_FALLBACK_BASES, '[tool.seqguard]\nbackend-bases = ["eng.base.AttentionBackend"]\n')
    result = lint_paths([root], load_config([root]), use_cache=False, jobs=1, need_index=True)
    assert {c.id for c in result.index.backends()} == {
        "eng.stub_class.StubClass", "eng.stub_class.NoFlag", "eng.stub_object.StubObject",
        "eng.engine_second.EngineSecond", "eng.import_second.ImportSecond", "eng.reexport.Again"}
    assert findings(root) == {
        ("eng/stub_class.py", 12, "SG003"), ("eng/stub_class.py", 15, "SG001"),
        ("eng/stub_object.py", 11, "SG003"),
        ("eng/engine_second.py", 12, "SG003"),
        ("eng/import_second.py", 7, "SG001"),
        ("eng/reexport.py", 4, "SG001"), ("eng/reexport.py", 4, "SG006"),
        ("eng/plain.py", 13, "SG002"),
    }


def test_the_codemod_writes_no_host_sync_into_a_backend_behind_an_import_fallback(project, runner, chdir):
    from seqguard.cli import main

    root = project(IMPORT_FALLBACK_BASES, '[tool.seqguard]\nbackend-bases = ["eng.base.AttentionBackend"]\n')
    chdir(root)
    result = runner.invoke(main, ["codemod", "--no-cache", "--formatter", "none", "--format", "json", "eng"])
    assert result.exit_code == 0, result.output
    sites = sorted((Path(f["path"]).name, s["host_sync"], s["fallback"])
                   for f in json.loads(result.stdout)["files"] for s in f["sites"])
    # the opted-out backends raise instead of syncing; NoFlag and ImportSecond inherit
    # True (no site: their reads keep the mirror); Unrelated is no backend
    assert sites == [("engine_second.py", False, "raise"), ("plain.py", True, "device"),
                     ("stub_class.py", False, "raise"), ("stub_object.py", False, "raise")]
    assert ".item()" not in (root / "eng/stub_class.py").read_text()


# More branches that bind a placeholder where the engine's base is not imported: the
# name resolves to the engine's base whichever branch imports it (an `if`, not only a
# `try`; through an alias of a name such branches bind; an `or` with a placeholder).
BRANCH_BASES = {
    "eng/__init__.py": "",
    "eng/base.py": "class AttentionBackend:\n    needs_cpu_seq_lens = True\n",
    # the base imported for type checkers alone, `object` at run time
    "eng/type_checking.py": ("import typing\n\nif typing.TYPE_CHECKING:\n    from eng.base import AttentionBackend\n"
                             "else:\n    AttentionBackend = object\n\n\n"
                             "class TypeChecking(AttentionBackend):\n    needs_cpu_seq_lens = False\n\n"
                             "    def f(self, fb):\n        return fb.seq_lens_sum + 1\n\n\n"
                             "class TypeCheckingNoFlag(AttentionBackend):\n    def f(self, fb):\n"
                             "        return fb.seq_lens_sum + 1\n"),
    # None in the handler, a class defined where it is None, the name bound to it after
    "eng/none_then_class.py": ("try:\n    from eng.base import AttentionBackend as _Base\n"
                               "except (ImportError, ModuleNotFoundError):\n    _Base = None\n"
                               "if _Base is None:\n    class _Base:\n        pass\n"
                               "AttentionBackend = _Base\n\n\n"
                               "class NoneThenClass(AttentionBackend):\n    needs_cpu_seq_lens = False\n\n"
                               "    def f(self, fb):\n        return fb.seq_lens_sum + 1\n"),
    # the base or a placeholder, in the class statement itself
    "eng/or_object.py": ("try:\n    from eng.base import AttentionBackend\nexcept ImportError:\n"
                         "    AttentionBackend = None\n\n\n"
                         "class OrObject(AttentionBackend or object):\n    needs_cpu_seq_lens = False\n\n"
                         "    def f(self, fb):\n        return fb.seq_lens_sum + 1\n"),
    # branches that never bind the engine's base: no backend
    "eng/other_branches.py": ("import sys\n\nif sys.version_info >= (3, 11):\n    from vendored import Base\n"
                              "else:\n    Base = object\n\n\n"
                              "class Other(Base or object):\n    def f(self, fb):\n"
                              "        return fb.seq_lens_sum + 1\n"),
}


def test_a_base_bound_in_branches_with_a_placeholder_is_the_engine_s_base(project):
    root = project(BRANCH_BASES, '[tool.seqguard]\nbackend-bases = ["eng.base.AttentionBackend"]\n')
    result = lint_paths([root], load_config([root]), use_cache=False, jobs=1, need_index=True)
    assert {c.id for c in result.index.backends()} == {
        "eng.type_checking.TypeChecking", "eng.type_checking.TypeCheckingNoFlag",
        "eng.none_then_class.NoneThenClass", "eng.or_object.OrObject"}
    assert findings(root) == {
        ("eng/type_checking.py", 13, "SG003"), ("eng/type_checking.py", 16, "SG001"),
        ("eng/none_then_class.py", 15, "SG003"),
        ("eng/or_object.py", 11, "SG003"),
        ("eng/other_branches.py", 11, "SG002"),
    }


def test_the_codemod_writes_no_host_sync_into_a_backend_whose_base_is_bound_in_branches(project, runner, chdir):
    from seqguard.cli import main

    root = project(BRANCH_BASES, '[tool.seqguard]\nbackend-bases = ["eng.base.AttentionBackend"]\n')
    chdir(root)
    result = runner.invoke(main, ["codemod", "--no-cache", "--formatter", "none", "--format", "json", "eng"])
    assert result.exit_code == 0, result.output
    sites = sorted((Path(f["path"]).name, s["host_sync"], s["fallback"])
                   for f in json.loads(result.stdout)["files"] for s in f["sites"])
    assert sites == [("none_then_class.py", False, "raise"), ("or_object.py", False, "raise"),
                     ("other_branches.py", True, "device"), ("type_checking.py", False, "raise")]


def test_a_flag_declared_by_a_mixin_reaches_through_a_file_that_never_names_it(project):
    files = {
        "pkg/base.py": "class AttentionBackend:\n    needs_cpu_seq_lens = True\n",
        "pkg/m1.py": "class GpuOnlyMixin:\n    needs_cpu_seq_lens = False\n",
        "pkg/m2.py": "from pkg.m1 import GpuOnlyMixin\n\n\nclass Helpers(GpuOnlyMixin):\n    pass\n",
        "pkg/b.py": ("from pkg.base import AttentionBackend\nfrom pkg.m2 import Helpers\n\n\n"
                     "class B(Helpers, AttentionBackend):\n    def f(self, fb):\n"
                     "        return fb.seq_lens_cpu.max()\n"),
        # a plain helper class without the flag anywhere above it is looked through
        "pkg/plain.py": "class Plain:\n    pass\n",
        "pkg/c.py": ("from pkg.base import AttentionBackend\nfrom pkg.plain import Plain\n\n\n"
                     "class C(Plain, AttentionBackend):\n    pass\n"),
    }
    root = project(files, '[tool.seqguard]\nbackend-bases = ["pkg.base.AttentionBackend"]\n')
    result = lint_paths([root], load_config([root]), use_cache=False, jobs=1)
    by = {(Path(d.path).name, d.code): d.reason for d in result.diagnostics}
    assert by[("b.py", "SG001")] == "it inherits False (inherited from Helpers)"
    assert ("b.py", "SG003") in by
    assert by[("c.py", "SG001")] == "it inherits True (inherited from AttentionBackend)"


def test_the_files_importing_a_word_are_the_same_searched_or_mapped(tmp_path):
    """A small run searches each file's import string for the few words it asks; after
    16 words the whole map is built. Both must name the same files, `*` and words that
    are prefixes of others included."""
    files = {"pyproject.toml": "[tool.seqguard]\n",
             "a.py": "from pkg.attn import helper, helper_two\nimport numpy as np\n",
             "b.py": "from pkg.attn import *\n",
             "c.py": "from pkg.attn.helper import x\n",
             "d.py": "x = 'import helper'  # not an import statement, still a word\n",
             "e.py": "def f(b):\n    return b.seq_lens_cpu.max()\n"}
    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    config = load_config([tmp_path])
    contract = lint_paths([tmp_path], config, use_cache=False, jobs=1, need_index=True).contract
    words = ["helper", "helper_two", "pkg", "attn", "np", "numpy", "x", "*", "help", "missing"]
    # the words after `import` (`from a import f`: f, not a; `import a as b`: a, b)
    expected = {"helper": {"a.py", "d.py"}, "helper_two": {"a.py"}, "pkg": set(), "attn": set(), "np": {"a.py"},
                "numpy": {"a.py"}, "x": {"c.py"}, "*": {"b.py"}, "help": set(), "missing": set()}
    searched = contract.sites
    assert {w: searched.importers_of(w) for w in words} == expected
    assert searched._imports._by_word is None             # ten words: searched, no map
    for i in range(20):
        searched.importers_of(f"w{i}")
    assert searched._imports._by_word is not None         # the map, once enough were asked
    assert {w: searched.importers_of(w) for w in words} == expected


def test_a_word_is_found_in_the_same_files_searched_or_mapped():
    """WordFiles answers one word by searching every file's words joined; past its
    budget, from a map of them all: both must name the same files, for a word at a
    file's start or end, in every file, in none, or a prefix of another."""
    from seqguard.lint.contract.word_files import WordFiles
    strings = [("a.py", "execute max run"), ("b.py", "execute"), ("c.py", ""), ("d.py", "exec executed max"),
               ("e.py", "max")]
    searched, mapped = WordFiles(lambda: strings, searched=1000), WordFiles(lambda: strings, searched=0)
    for word in ("execute", "max", "run", "exec", "executed", "xecute", "missing", "e"):
        assert searched.files_holding(word) == mapped.files_holding(word) == \
            {relpath for relpath, words in strings if word in words.split()}
    assert searched._by_word is None and mapped._by_word is not None
