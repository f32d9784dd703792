"""Cross-module backend resolution, whatever the import style."""

from pathlib import Path

from seqguard.config import load_config
from seqguard.lint.cache import project_cache_dir
from seqguard.lint.runner import lint_paths

FILES = {
    "pkg/__init__.py": "",
    "pkg/attn/__init__.py": "from .base import AttentionBackend\n",
    "pkg/attn/base.py": "class AttentionBackend:\n    needs_cpu_seq_lens: bool = True\n",
    "pkg/attn/a.py": "from pkg.attn.base import AttentionBackend as B\n\n\nclass A(B):\n    pass\n",
    "pkg/attn/b.py": "import pkg.attn.base as base\n\n\nclass Bk(base.AttentionBackend):\n    needs_cpu_seq_lens = False\n",
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


def test_cache_invalidates_on_edit_and_on_config(project):
    root = project(FILES)
    config = load_config([root])
    first = lint_paths([root], config).diagnostics
    assert project_cache_dir(root).is_dir() and not (root / ".seqguard_cache").exists()
    again = lint_paths([root], config).diagnostics
    assert first == again
    # an edit: B now declares its flag
    (root / "pkg/attn/a.py").write_text(FILES["pkg/attn/a.py"].replace("pass", "needs_cpu_seq_lens = True"))
    after_edit = lint_paths([root], config).diagnostics
    before = {(d.path, d.code) for d in first}
    assert before - {(d.path, d.code) for d in after_edit} == {(str(root / "pkg/attn/a.py"), "SG001")}
    # a config change: a different mirror name finds no reads
    (root / "pyproject.toml").write_text('[tool.seqguard]\nmirror-attributes = ["host_lens"]\n')
    renamed = lint_paths([root], load_config([root])).diagnostics
    assert not any(d.code == "SG003" for d in renamed)
