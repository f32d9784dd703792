"""The snippets of the README and of docs/ work verbatim (issue 37): every fenced block
marked `<!-- test: run -->` runs in a copy of the repository, offline.

- ```bash: the block runs in bash and must exit 0.
- ```console: each `$ ` line runs in bash (`cd DIR` moves the next ones) and must exit 0,
  or N where the line ends with a comment `# exits N`; the lines under it, when there
  are any, are its output (stdout, then stderr; `...` stands for any lines; runs of
  spaces and tabs compare equal).
- ```python: the block runs in a fresh interpreter and must exit 0; a ```text block
  marked `<!-- test: output -->` right after it is its stdout.

`python -m pip install ...` is skipped (the package under test is installed already: a
fresh virtual environment is the one place that step can be checked); `seqguard` and
`python` are this interpreter's, whatever PATH holds."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest

REPO = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^<!-- test: (run|output) -->\n+```(\w*)\n(.*?)^```", re.M | re.S)
EXITS = re.compile(r"#\s*exits (\d+)\b")


@dataclasses.dataclass(frozen=True)
class Snippet:
    page: str
    line: int
    language: str
    text: str
    output: Optional[str] = None      # a python block's stdout, from the `output` block after it


def snippets(page: Path) -> list[Snippet]:
    text = page.read_text(encoding="utf-8")
    found: list[Snippet] = []
    relpath = str(page.relative_to(REPO))
    for match in BLOCK.finditer(text):
        kind, language, body = match.groups()
        line = text.count("\n", 0, match.start()) + 1
        if kind == "output":
            assert found and found[-1].language == "python" and found[-1].output is None, \
                f"{relpath}:{line}: an output block follows no python block"
            found[-1] = dataclasses.replace(found[-1], output=body)
            continue
        assert language in ("bash", "console", "python"), f"{relpath}:{line}: cannot run a {language!r} block"
        found.append(Snippet(relpath, line, language, body))
    markers = len(re.findall(r"^<!-- test: \w+ -->$", text, flags=re.M))
    assert markers == sum(1 + (s.output is not None) for s in found), f"{relpath}: a marker not above a block"
    return found


PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
SNIPPETS = [s for page in PAGES for s in snippets(page)]


def test_the_readme_and_the_guides_have_runnable_snippets():
    per_page = {}
    for s in SNIPPETS:
        per_page[s.page] = per_page.get(s.page, 0) + 1
    assert per_page["README.md"] >= 4
    assert {"docs/guides/lint.md", "docs/guides/adoption.md", "docs/guides/codemod.md",
            "docs/guides/runtime.md"} <= set(per_page)


@pytest.fixture
def repo_copy(tmp_path: Path) -> tuple[Path, dict]:
    """A copy of the repository (no git, no tests) and an environment whose `seqguard`
    and `python` are this interpreter's and whose `python -m pip install` does nothing."""
    copy = tmp_path / "repo"
    shutil.copytree(REPO, copy, ignore=shutil.ignore_patterns(
        ".git", "tests", "__pycache__", "*.egg-info", ".venv", "venv", "build", "dist", "engine-copy"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "seqguard").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m seqguard "$@"\n')
    (bin_dir / "python").write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-m" ] && [ "$2" = "pip" ] && [ "$3" = "install" ]; then exit 0; fi\n'
        f'exec "{sys.executable}" "$@"\n')
    for shim in bin_dir.iterdir():
        shim.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return copy, env


def normalised(text: str) -> list[str]:
    lines = [" ".join(line.split()) for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def matches(expected: list[str], actual: list[str]) -> bool:
    """`expected` against `actual` line by line, a `...` line matching any lines."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and matches(expected[1:], actual[1:])


def run(command: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def commands(console: str) -> list[tuple[str, list[str]]]:
    """A console block's (command, the output lines under it)."""
    found: list[tuple[str, list[str]]] = []
    for line in console.splitlines():
        if line.startswith("$ "):
            found.append((line[2:], []))
        else:
            assert found, f"output before any command: {line!r}"
            found[-1][1].append(line)
    return found


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[f"{s.page}:{s.line}" for s in SNIPPETS])
def test_the_snippet_works_verbatim(snippet, repo_copy):
    root, env = repo_copy
    if snippet.language == "bash":
        done = run(["bash", "-c", snippet.text], root, env)
        assert done.returncode == 0, done.stdout + done.stderr
    elif snippet.language == "python":
        done = run([sys.executable, "-c", snippet.text], root, env)
        assert done.returncode == 0, done.stderr
        if snippet.output is not None:
            assert normalised(done.stdout) == normalised(snippet.output)
    else:
        cwd = root
        for command, output in commands(snippet.text):
            if re.fullmatch(r"cd \S+", command):
                cwd = cwd / command[3:]
                continue
            done = run(["bash", "-c", command], cwd, env)
            exits = EXITS.search(command)
            assert done.returncode == (int(exits.group(1)) if exits else 0), (command, done.stdout + done.stderr)
            if output:
                # one text, as a terminal shows it: the blank line ending stdout's last finding stays
                actual = normalised(done.stdout + done.stderr)
                assert matches(normalised("\n".join(output)), actual), (command, done.stdout + done.stderr)


def test_the_quick_start_needs_no_torch(repo_copy, tmp_path):
    """The quick start's main job (lint and codemod on the example engine) installs the
    core alone: it runs where torch and triton cannot be imported."""
    root, env = repo_copy
    blocker = tmp_path / "no_torch"
    blocker.mkdir()
    # `None` in sys.modules makes `import torch` raise ImportError, as on a machine without it
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['torch'] = sys.modules['triton'] = None\n")
    env = dict(env, PYTHONPATH=os.pathsep.join(p for p in (str(blocker), env.get("PYTHONPATH")) if p))
    assert run([sys.executable, "-c", "import torch"], root, env).returncode == 1
    quick = next(s for s in SNIPPETS if s.page == "README.md" and s.language == "bash")
    assert "torch" not in quick.text
    done = run(["bash", "-c", quick.text], root, env)
    assert done.returncode == 0, done.stderr
    assert "SG002" in done.stdout and "+++ b/engine/managers/metrics.py" in done.stdout
    assert "Traceback" not in done.stderr
