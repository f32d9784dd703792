"""The real pre-commit, running our hook manifest against a temporary repository."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow

BASE = "class AttentionBackend:\n    needs_cpu_seq_lens: bool = True\n"
OPT_OUT = ("from pkg.base import AttentionBackend\n\n\nclass Fast(AttentionBackend):\n"
           "    needs_cpu_seq_lens = False\n")
READER = ("from pkg.fast import Fast\n\n\nclass Child(Fast):\n    needs_cpu_seq_lens = False\n\n"
          "    def plan(self, fb):\n        return fb.seq_lens_cpu.max()\n")


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def engine_repo(tmp_path: Path, hook_config: str = "") -> tuple[Path, dict]:
    """A git repository with an opted-out backend and a child reading the mirror in
    another file; and the environment to run pre-commit in it."""
    repo = tmp_path / "engine"
    (repo / "pkg").mkdir(parents=True)
    if hook_config:
        (repo / ".pre-commit-config.yaml").write_text(hook_config)
    (repo / "pyproject.toml").write_text("[tool.seqguard]\n")
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "base.py").write_text(BASE)
    (repo / "pkg" / "fast.py").write_text(OPT_OUT)
    (repo / "pkg" / "child.py").write_text(READER)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(Path.home()),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return repo, env


@pytest.fixture(scope="module")
def pre_commit():
    exe = shutil.which("pre-commit")
    if exe is None:
        pytest.fail("pre-commit is not installed; `pip install -e '.[test]'` installs it")
    return exe


def test_try_repo_finds_a_cross_file_violation_in_a_changed_file(tmp_path, pre_commit):
    repo, env = engine_repo(tmp_path)
    # Only child.py is passed: the hook must still know Fast opts out (it lives in fast.py).
    done = subprocess.run([pre_commit, "try-repo", str(REPO), "seqguard-lint", "--files", "pkg/child.py"],
                          cwd=repo, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pkg/child.py:8:16: SG003" in done.stdout

    (repo / "pkg" / "child.py").write_text(READER.replace(
        "return fb.seq_lens_cpu.max()", "return fb.seq_lens.max()"))
    git(repo, "add", ".")
    done = subprocess.run([pre_commit, "try-repo", str(REPO), "seqguard-lint", "--files", "pkg/child.py"],
                          cwd=repo, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


ADOPTION = REPO / "docs" / "guides" / "adoption.md"


def readme_hook_config() -> str:
    """The first YAML block of the adoption guide's pre-commit section, verbatim."""
    section = ADOPTION.read_text().split("## pre-commit\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```yaml\n(.*?)```", section, re.S).group(1)


def test_the_adoption_guides_snippet_works_verbatim_through_pre_commit(tmp_path, pre_commit):
    config = readme_hook_config()
    requirement = '"seqguard @ git+https://github.com/seqguard/seqguard"'
    assert config.count(requirement) == 1
    # What the README says to do without network access: the path of a local copy instead
    # of the git URL (a copy, so pip's in-tree build leaves this checkout alone).
    source = tmp_path / "seqguard-src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    assert '["/path/to/seqguard"]' in ADOPTION.read_text()

    repo, env = engine_repo(tmp_path, config.replace(requirement, f'"{source}"'))
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    done = subprocess.run([pre_commit, "run", "--files", "pkg/child.py"], cwd=repo, capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pkg/child.py:8:16: SG003" in done.stdout

    (repo / "pkg" / "child.py").write_text(READER.replace(
        "return fb.seq_lens_cpu.max()", "return fb.seq_lens.max()"))
    git(repo, "add", ".")
    done = subprocess.run([pre_commit, "run", "--files", "pkg/child.py"], cwd=repo, capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "seqguard lint" in done.stdout and "Passed" in done.stdout
