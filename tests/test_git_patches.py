"""`lint --fix --diff` and `codemod --diff` write patches `git apply` takes from the
project root, whatever the files hold (no final newline, lone `\\r` line endings, CRLF, a
form feed, a Latin-1 file) and whatever they are called (names git quotes), and applying
a patch gives the very bytes the command writes without `--diff`."""

import os
import shutil
import subprocess

import pytest

from seqguard.cli import main
from seqguard.lint.fixes import NO_NEWLINE, file_patch, git_lines, quote_path

# A backend without its flag (lint --fix adds it, SG001) and a read the codemod guards (SG002).
BASE = ("class AttentionBackend:\n    needs_cpu_seq_lens = True\n\n\nclass C(AttentionBackend):\n"
        "    def f(self, b):\n        return 1\n\n\ndef g(b):\n    return b.seq_lens_cpu.max()")

ODD_CONTENT = {
    "no_final_newline.py": BASE.encode(),
    "lone_cr.py": (BASE.replace("\n", "\r") + "\r").encode(),
    "lone_cr_no_final_newline.py": BASE.replace("\n", "\r").encode(),
    "crlf.py": (BASE.replace("\n", "\r\n") + "\r\n").encode(),
    "form_feed.py": (BASE.replace("\n\n\ndef", "\n\n\x0c\ndef") + "\n").encode(),
    "latin1.py": b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + BASE.encode() + b"\n",
}
ODD_NAMES = ["tab\there.py", "cr\rname.py", "lf\nname.py", 'q"uote.py', "back\\slash.py", "n\u00f6n.py",
             "sp ace.py", "sp ace\t.py", "ctl\x01x\x7f.py"]


def _git(root, *args, data=None):
    return subprocess.run(["git", "-c", "core.autocrlf=false", *args], cwd=root, capture_output=True,
                          input=data)


@pytest.fixture
def odd_repo(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.seqguard]\n")
    files = {**ODD_CONTENT, **{name: (BASE + "\n").encode() for name in ODD_NAMES}}
    (root / "pkg").mkdir()
    for name, data in files.items():
        (root / "pkg" / name).write_bytes(data)
    assert _git(root, "init", "-q").returncode == 0
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "odd files")
    return root, sorted(files)


def _tree(root) -> dict:
    return {name: (root / "pkg" / name).read_bytes() for name in os.listdir(root / "pkg")}


@pytest.mark.parametrize("command, write", [(["lint", "--fix", "--diff"], ["lint", "--fix"]),
                                            (["codemod", "--diff"], ["codemod"])])
@pytest.mark.parametrize("where", [".", "pkg"])
def test_a_patch_of_every_odd_file_applies_and_gives_what_the_command_writes(runner, odd_repo, chdir, command,
                                                                            write, where):
    root, names = odd_repo
    before = _tree(root)
    chdir(root / where)
    shown = runner.invoke(main, [*command, "--no-cache", "--formatter", "none", "."]
                          if command[0] == "codemod" else [*command, "--no-cache", "."])
    assert shown.exit_code in (0, 1), shown.stderr
    patch = shown.stdout_bytes
    assert _tree(root) == before  # --diff writes nothing
    check = _git(root, "apply", "--check", "-", data=patch)
    assert check.returncode == 0, check.stderr.decode()
    assert _git(root, "apply", "-", data=patch).returncode == 0
    patched = _tree(root)
    assert sorted(name for name in names if patched[name] != before[name]) == names  # every odd file is in it
    assert _git(root, "checkout", "-q", "--", ".").returncode == 0
    assert _tree(root) == before
    done = runner.invoke(main, [*write, "--no-cache", "--formatter", "none", "."]
                         if write[0] == "codemod" else [*write, "--no-cache", "."])
    assert done.exit_code in (0, 1), done.stderr
    assert _tree(root) == patched


def test_names_are_quoted_as_git_quotes_them(odd_repo):
    root, names = odd_repo
    listed = _git(root, "ls-files", "pkg").stdout.decode("ascii").splitlines()
    # `git ls-files` quotes with the same rules (quote_c_style, core.quotePath on)
    assert sorted(listed) == sorted(quote_path("pkg/" + name) for name in names)


def test_a_last_line_without_newline_is_marked_and_a_lone_cr_stays_inside_its_line():
    patch = file_patch("m.py", b"a\rb\nc", b"a\rb\nd")
    assert patch == "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n a\rb\n-c\n\\ No newline at end of file\n+d\n" \
                    "\\ No newline at end of file\n"
    assert git_lines(b"x\r\ny\x0cz\n\n") == ["x\r\n", "y\x0cz\n", "\n"]
    assert file_patch("m.py", b"same", b"same") == ""


def test_a_name_with_a_space_ends_its_header_with_a_tab_as_git_writes_it():
    assert file_patch("sp ace.py", b"a\n", b"b\n").splitlines()[:2] == ["--- a/sp ace.py\t", "+++ b/sp ace.py\t"]
    assert file_patch('"q.py', b"a\n", b"b\n").splitlines()[0] == '--- "a/\\"q.py"'


ENDINGS = {"lf": "\n", "crlf": "\r\n", "lone_cr": "\r"}


@pytest.mark.parametrize("final", [True, False], ids=["final_newline", "no_final_newline"])
@pytest.mark.parametrize("ending", list(ENDINGS))
@pytest.mark.parametrize("command", [["lint", "--fix"], ["lint", "--add-ignore"],
                                     ["codemod", "--formatter", "none"]], ids=["fix", "add_ignore", "codemod"])
def test_a_rewritten_file_keeps_its_line_endings_and_its_last_one(runner, project, chdir, command, ending, final):
    # the same program with each line ending: rewritten, it must be the `\n` file's result
    # with that ending, byte for byte (libcst loses the last lone `\r` when left to itself)
    def rewritten(newline: str) -> bytes:
        root = project({"pkg/m.py": (BASE + "\n" * final).replace("\n", newline).encode()})
        chdir(root)
        result = runner.invoke(main, [*command, "--no-cache", "."])
        assert result.exit_code in (0, 1), result.stderr
        return (root / "pkg" / "m.py").read_bytes()

    expected = rewritten("\n")
    assert expected != (BASE + "\n" * final).encode()  # the command did change the file
    assert rewritten(ENDINGS[ending]) == expected.replace(b"\n", ENDINGS[ending].encode())


@pytest.mark.parametrize("final", [True, False], ids=["final_newline", "no_final_newline"])
@pytest.mark.parametrize("ending", list(ENDINGS))
def test_a_patch_marks_a_missing_final_newline_only_where_git_sees_one_missing(runner, project, chdir, ending,
                                                                              final):
    # git splits at `\n`: only a file that does not end in `\n` (no final newline, or a lone
    # `\r` file's) lacks one, on both sides of a hunk that reaches its last line (the
    # codemod's always does: its read is on the last line; --fix's only in a lone `\r` file,
    # one line to git)
    source = (BASE + "\n" * final).replace("\n", ENDINGS[ending])
    root = project({"pkg/m.py": source.encode()})
    chdir(root)
    for command in (["lint", "--fix", "--diff"], ["codemod", "--diff", "--formatter", "none"]):
        patch = runner.invoke(main, [*command, "--no-cache", "."]).stdout
        assert patch.startswith("--- a/pkg/m.py\n")
        reaches_end = command[0] == "codemod" or ending == "lone_cr"
        assert patch.count(NO_NEWLINE) == (2 if reaches_end and not source.endswith("\n") else 0), (command, patch)
