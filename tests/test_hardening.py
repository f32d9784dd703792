"""Hostile and careless input (issue "Hard to break"): special files, huge files, odd
bytes and line endings, unreadable folders, file identity on write, temp files and
workers that outlive a killed run. Anything that could hang runs in a subprocess with
a timeout, so a regression fails the test instead of hanging the suite."""

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import seqguard
from seqguard import fileio
from seqguard.cli import main

SRC = Path(seqguard.__file__).resolve().parent.parent   # the seqguard under test, also in subprocesses
# Names new with this issue, looked up so each test fails on its own on older code.
WriteRefused = getattr(fileio, "WriteRefused", type("WriteRefusedMissing", (Exception,), {}))
atomic_write = fileio.atomic_write
BAD_READ = "def f(b):\n    return b.seq_lens_cpu.max()\n"
HANG_LIMIT_S = 60   # a hang is "forever"; a slow shared 2-core machine is not


def seqguard(*args, cwd: Path, timeout: float = HANG_LIMIT_S, user=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run([sys.executable, "-m", "seqguard", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, user=user)


def write_project(root: Path, files: dict, pyproject: str = "[tool.seqguard]\n") -> Path:
    (root / "pyproject.toml").write_text(pyproject)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return root


# ---- special files -----------------------------------------------------------------------

def test_a_fifo_anywhere_under_the_root_does_not_hang_linting_another_file(tmp_path):
    root = write_project(tmp_path, {"ok.py": "x = 1\n", "sub/keep.py": "y = 2\n"})
    os.mkfifo(root / "sub" / "pipe.py")
    result = seqguard("lint", "ok.py", cwd=root)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr.count("pipe.py") == 1
    assert "sub/pipe.py: a FIFO, not a regular file; skipped" in result.stderr


def test_a_fifo_named_explicitly_and_in_the_walk_is_reported_once(tmp_path):
    root = write_project(tmp_path, {"bad.py": BAD_READ})
    os.mkfifo(root / "pipe.py")
    result = seqguard("lint", ".", "pipe.py", cwd=root)
    assert result.returncode == 1  # bad.py's finding
    assert "bad.py:2:12: SG002" in result.stdout
    assert result.stderr.count("pipe.py") == 1 and "FIFO" in result.stderr


def test_a_symlink_to_dev_zero_is_skipped_not_read(tmp_path):
    root = write_project(tmp_path, {"ok.py": "x = 1\n"})
    (root / "zero.py").symlink_to("/dev/zero")
    result = seqguard("lint", ".", cwd=root)
    assert result.returncode == 0, result.stderr
    assert "zero.py: a character device, not a regular file; skipped" in result.stderr
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr
    result = seqguard("lint", "zero.py", cwd=root)
    assert result.returncode == 0 and result.stderr.count("zero.py: a character device") == 1


def test_the_reader_itself_refuses_fifos_and_devices(tmp_path):
    """Discovery skips them; the reader must too (a file swapped for a FIFO mid-run)."""
    os.mkfifo(tmp_path / "p.py")
    code = ("from seqguard.fileio import read_file\n"
            f"print(read_file({str(tmp_path / 'p.py')!r}, 100).error)\nprint(read_file('/dev/zero', 100).error)")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(SRC)},
                         capture_output=True, text=True, timeout=HANG_LIMIT_S).stdout
    assert out.splitlines() == ["not a regular file; skipped"] * 2


def test_a_file_above_max_file_size_is_sg000_too_large(tmp_path, runner):
    root = write_project(tmp_path, {"big.py": "x = 1\n" * 400, "bad.py": BAD_READ},
                         "[tool.seqguard]\nmax-file-size = 1000\n")
    result = runner.invoke(main, ["lint", "--output-format", "json", str(root)])
    assert result.exit_code == 1
    entries = {(Path(e["path"]).name, e["code"]): e["message"] for e in json.loads(result.stdout)}
    assert set(entries) == {("big.py", "SG000"), ("bad.py", "SG002")}
    assert entries["big.py", "SG000"] == ("too large (2,400 bytes, max-file-size is 1,000); "
                                          "raise max-file-size in [tool.seqguard] or exclude it")


def test_the_default_size_limit_stops_a_10_mb_file_quickly(tmp_path):
    root = write_project(tmp_path, {"huge.py": b"x = [" + b"1, " * 3_500_000 + b"]\n"})
    start = time.monotonic()
    result = seqguard("lint", "huge.py", cwd=root)
    assert result.returncode == 1
    assert "huge.py:1:1: SG000 too large (10,500,007 bytes, max-file-size is 4,194,304)" in result.stdout
    assert time.monotonic() - start < 10  # parsing it took 12 s before


@pytest.mark.parametrize("value", ["0", "-1", "true", "'4MB'", "99999999999999999999999", "4294967297"])
def test_max_file_size_must_be_a_byte_count_in_range(tmp_path, runner, value):
    root = write_project(tmp_path, {"a.py": "x = 1\n"}, f"[tool.seqguard]\nmax-file-size = {value}\n")
    result = runner.invoke(main, ["lint", str(root)])
    assert result.exit_code == 2
    assert "max-file-size: expected a number of bytes from 1 to 4294967296" in result.stderr
    assert result.stderr.count("\n") == 1 and "internal error" not in result.stderr


# ---- odd bytes -----------------------------------------------------------------------------

def test_a_config_file_that_is_not_utf8_is_one_clear_error(tmp_path, runner):
    (tmp_path / "pyproject.toml").write_bytes(b"[tool.seqguard]\nselect=['\xff']\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    result = runner.invoke(main, ["lint", str(tmp_path / "a.py")])
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "pyproject.toml:2:10: not valid UTF-8 (byte 0xff)" in lines[0]
    assert "re-save the file as UTF-8" in lines[0]
    assert "Traceback" not in result.output and "UnicodeDecodeError" not in result.output


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_every_python_line_ending_splits_lines(runner, tmp_path, newline):
    source = newline.join(["def f(b):", "    x = 1", "    return b.seq_lens_cpu.max()", ""])
    root = write_project(tmp_path, {"m.py": source.encode()})
    result = runner.invoke(main, ["lint", "--output-format", "json", str(root / "m.py")])
    found = [(e["line"], e["column"], e["code"]) for e in json.loads(result.stdout)]
    assert found == [(3, 12, "SG002")]


def test_suppressions_and_classes_after_a_lone_cr_are_seen(runner, tmp_path):
    source = ("import x\rclass B(x.AttentionBackend):\r    needs_cpu_seq_lens = False\r"
              "    def g(self, b):\r        return b.seq_lens_cpu.max()  # seqguard: ignore[SG003]\r")
    root = write_project(tmp_path, {"m.py": source.encode()})
    result = runner.invoke(main, ["lint", "--output-format", "json", str(root / "m.py")])
    assert json.loads(result.stdout) == []
    bare = source.replace("  # seqguard: ignore[SG003]", "")
    (root / "m.py").write_bytes(bare.encode())
    result = runner.invoke(main, ["lint", "--no-cache", "--output-format", "json", str(root / "m.py")])
    assert [(e["line"], e["code"]) for e in json.loads(result.stdout)] == [(5, "SG003")]


# ---- unreadable folders --------------------------------------------------------------------

def test_a_folder_that_cannot_be_listed_is_an_error_not_a_silent_pass(runner, tmp_path, monkeypatch):
    root = write_project(tmp_path, {"pkg/hidden/bad.py": BAD_READ})
    hidden = str(root / "pkg" / "hidden")
    real_scandir = os.scandir

    def scandir(path="."):
        if os.path.normpath(str(path)) == hidden:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = runner.invoke(main, ["lint", "--no-cache", str(root / "pkg")])
    assert result.exit_code == 1
    assert "no Python files found" not in result.output
    assert "SG000 cannot list folder: Permission denied; its files were not checked" in result.stdout


# Root reads every folder whatever its mode, so as root the real check drops to `nobody`
# after a first run has imported everything (the interpreter lives under /root).
AS_NOBODY = """
import os, sys
from seqguard.cli import main
try:
    main(["lint", "--no-cache", sys.argv[1]])
except SystemExit:
    pass
if os.geteuid() == 0:
    os.setgid(65534)
    os.setuid(65534)
main(["lint", "--no-cache", "."])
"""


def test_a_chmod_000_folder_really_fails_the_run(tmp_path):
    base = Path("/tmp") / f"sg-unreadable-{os.getpid()}"
    base.mkdir(mode=0o755)
    try:
        root = write_project(base, {"ok.py": "x = 1\n", "locked/bad.py": BAD_READ})
        for path in (base, base / "ok.py", base / "pyproject.toml"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        os.chmod(root / "locked", 0)
        warm_up = write_project(tmp_path, {"w.py": BAD_READ})
        result = subprocess.run([sys.executable, "-c", AS_NOBODY, str(warm_up)], cwd=root, capture_output=True,
                                text=True, timeout=HANG_LIMIT_S, env={**os.environ, "PYTHONPATH": str(SRC)})
        assert result.returncode == 1, (result.stdout, result.stderr)
        # a folder has no source line to show: the finding's line, then the blank line that ends it
        assert result.stdout.endswith("locked:1:1: SG000 cannot list folder: Permission denied; its files were "
                                      "not checked (fix its permissions or exclude it)\n\n")
        assert "no Python files found" not in result.stderr
    finally:
        os.chmod(base / "locked", 0o755)
        import shutil
        shutil.rmtree(base, ignore_errors=True)


# ---- file identity on write ------------------------------------------------------------------

def test_a_symlink_inside_the_project_keeps_being_a_link(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "real.py").write_text("old\n")
    (tmp_path / "link.py").symlink_to("real.py")
    atomic_write(str(tmp_path / "link.py"), b"new\n", expected=b"old\n")
    assert (tmp_path / "link.py").is_symlink() and os.readlink(tmp_path / "link.py") == "real.py"
    assert (tmp_path / "real.py").read_text() == "new\n"


def test_a_symlink_leading_outside_the_project_is_refused(tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text("old\n")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text("")
    (project / "link.py").symlink_to(outside)
    with pytest.raises(WriteRefused, match="outside the project"):
        atomic_write(str(project / "link.py"), b"new\n", expected=b"old\n")
    assert outside.read_text() == "old\n" and (project / "link.py").is_symlink()


def test_hard_links_are_edited_in_place_not_split(tmp_path):
    (tmp_path / "a.py").write_text("old\n")
    os.link(tmp_path / "a.py", tmp_path / "b.py")
    inode = os.stat(tmp_path / "a.py").st_ino
    atomic_write(str(tmp_path / "a.py"), b"new text\n", expected=b"old\n")
    assert (tmp_path / "b.py").read_text() == "new text\n"
    assert os.stat(tmp_path / "a.py").st_ino == inode == os.stat(tmp_path / "b.py").st_ino


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_owner_and_group_are_kept(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("old\n")
    os.chown(path, 65534, 65534)
    path.chmod(0o640)
    atomic_write(str(path), b"new\n", expected=b"old\n")
    st = os.stat(path)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65534, 0o640)
    assert path.read_text() == "new\n"


def test_a_read_only_file_is_left_alone_unless_forced(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("old\n")
    path.chmod(0o444)
    with pytest.raises(WriteRefused, match="read-only file; not written"):
        atomic_write(str(path), b"new\n", expected=b"old\n")
    assert path.read_text() == "old\n"
    atomic_write(str(path), b"new\n", expected=b"old\n", force=True)
    assert path.read_text() == "new\n" and stat.S_IMODE(os.stat(path).st_mode) == 0o444


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_mid_write_leaves_no_temp_file_and_the_old_text(tmp_path, signum):
    target = tmp_path / "a.py"
    target.write_text("old\n")
    script = textwrap.dedent(f"""
        import os, sys, time
        import seqguard.fileio as fileio
        def slow_fsync(fd):
            print("writing", flush=True)
            time.sleep(60)
        fileio.os.fsync = slow_fsync
        fileio.atomic_write({str(target)!r}, b"new\\n", expected=b"old\\n")
    """)
    # the child starts with the signal's default action, whatever this run inherited
    # (under `nohup`, SIGHUP is ignored, and seqguard rightly leaves an ignored signal ignored)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env={**os.environ, "PYTHONPATH": str(SRC)},
                            preexec_fn=lambda: signal.signal(signum, signal.SIG_DFL))
    assert proc.stdout.readline().strip() == "writing"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".seqguard-tmp")]  # the temp exists now
    proc.send_signal(signum)
    assert proc.wait(timeout=HANG_LIMIT_S) == -signum   # and it still dies of that signal
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]
    assert target.read_text() == "old\n"


def test_stale_temp_files_of_a_killed_run_are_swept_at_the_next_start(tmp_path, runner):
    root = write_project(tmp_path, {"pkg/a.py": "x = 1\n"})
    stale = root / "pkg" / ".a.py.k1lled.seqguard-tmp"
    fresh = root / "pkg" / ".a.py.wr1ting.seqguard-tmp"   # another run, writing right now
    stale.write_text("half a file")
    fresh.write_text("half a file")
    hour_ago = time.time() - 3600
    os.utime(stale, (hour_ago, hour_ago))
    result = runner.invoke(main, ["lint", str(root)])
    assert result.exit_code == 0
    assert not stale.exists() and fresh.exists()


def test_pool_workers_die_with_a_killed_parent(tmp_path):
    _assert_workers_die_with_their_parent(tmp_path, """
        from seqguard.workers import Pool

        Pool(2).map(job, list(range(8)), 1)
    """)


def _assert_workers_die_with_their_parent(tmp_path, start_pool: str) -> None:
    """Runs `start_pool` (two workers each running `job`, which records its pid and
    sleeps) in a child process, kills that process with SIGKILL, and expects both
    workers gone within 15 s."""
    pids = tmp_path / "pids"
    script = textwrap.dedent(f"""
        import os, time

        def job(*_):
            with open({str(pids)!r}, "a") as f:
                f.write(f"{{os.getpid()}}\\n")
            time.sleep(120)
            return []

        print("parent", os.getpid(), flush=True)
    """) + textwrap.dedent(start_pool)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(SRC)})
    assert proc.stdout.readline().startswith("parent")
    deadline = time.monotonic() + HANG_LIMIT_S
    while time.monotonic() < deadline and (not pids.exists() or len(set(pids.read_text().split())) < 2):
        time.sleep(0.1)
    workers = {int(p) for p in pids.read_text().split()}
    assert len(workers) == 2
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 15
    alive = workers
    while alive and time.monotonic() < deadline:
        alive = {pid for pid in alive if _alive(pid)}
        time.sleep(0.1)
    for pid in alive:  # clean up before failing
        os.kill(pid, signal.SIGKILL)
    assert not alive, f"orphan pool workers still running: {sorted(alive)}"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"   # a zombie has exited
    except OSError:
        return False


# ---- file identity through the commands ---------------------------------------------------------

GUARDED_LINE = "    if b.seq_lens_cpu is not None:\n"


def test_codemod_rewrites_a_read_only_file_only_with_force(tmp_path, runner, chdir):
    root = write_project(tmp_path, {"m.py": BAD_READ})
    (root / "m.py").chmod(0o444)
    chdir(root)
    result = runner.invoke(main, ["codemod", "--no-cache", "m.py"])
    assert result.exit_code == 1
    assert "skipped: m.py: read-only file; not written (make it writable, or pass --force)" in result.stderr
    assert (root / "m.py").read_text() == BAD_READ
    result = runner.invoke(main, ["codemod", "--no-cache", "--force", "m.py"])
    assert result.exit_code == 0, result.stderr
    assert GUARDED_LINE in (root / "m.py").read_text()
    assert stat.S_IMODE(os.stat(root / "m.py").st_mode) == 0o444


def test_lint_fix_edits_a_read_only_file_only_with_force(tmp_path, runner, chdir):
    source = ("class AttentionBackend:\n    needs_cpu_seq_lens = True\n\n\n"
              "class B(AttentionBackend):\n    pass\n")
    root = write_project(tmp_path, {"b.py": source})
    (root / "b.py").chmod(0o444)
    chdir(root)
    result = runner.invoke(main, ["lint", "--no-cache", "--fix", "b.py"])
    assert "fix not applied" in result.stderr and "pass --force" in result.stderr
    assert (root / "b.py").read_text() == source
    result = runner.invoke(main, ["lint", "--no-cache", "--fix", "--force", "b.py"])
    assert result.exit_code == 0, result.stderr
    assert "needs_cpu_seq_lens = True" in (root / "b.py").read_text().split("class B", 1)[1]
    assert stat.S_IMODE(os.stat(root / "b.py").st_mode) == 0o444


def test_codemod_edits_two_hard_links_of_one_file_once(tmp_path, runner, chdir):
    root = write_project(tmp_path, {"a.py": BAD_READ})
    os.link(root / "a.py", root / "b.py")
    chdir(root)
    result = runner.invoke(main, ["codemod", "--no-cache", "--report", "json", "."])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["summary"]["files_changed"] == 1 and report["summary"]["files_skipped"] == 0
    by_path = {f["path"]: f for f in report["files"]}
    assert by_path["b.py"]["reason"] == "the same file as a.py (a link); rewritten through that name"
    text = (root / "a.py").read_text()
    assert text.count(GUARDED_LINE) == 1      # guarded once, not twice
    assert os.stat(root / "a.py").st_ino == os.stat(root / "b.py").st_ino
    assert os.stat(root / "a.py").st_nlink == 2


def test_codemod_edits_a_symlink_target_inside_the_project_through_the_real_name(tmp_path, runner, chdir):
    root = write_project(tmp_path, {"real.py": BAD_READ})
    (root / "link.py").symlink_to("real.py")
    chdir(root)
    result = runner.invoke(main, ["codemod", "--no-cache", "."])
    assert result.exit_code == 0, result.stderr
    assert (root / "link.py").is_symlink() and os.readlink(root / "link.py") == "real.py"
    assert (root / "real.py").read_text().count(GUARDED_LINE) == 1


def test_codemod_leaves_a_symlink_leading_outside_the_project(tmp_path, runner, chdir):
    outside = tmp_path / "outside.py"
    outside.write_text(BAD_READ)
    root = tmp_path / "proj"
    root.mkdir()
    write_project(root, {})
    (root / "link.py").symlink_to(outside)
    chdir(root)
    result = runner.invoke(main, ["codemod", "--no-cache", "link.py"])
    assert result.exit_code == 1
    assert "skipped: link.py: a symlink to" in result.stderr and "outside the project" in result.stderr
    assert outside.read_text() == BAD_READ and (root / "link.py").is_symlink()


def test_codemod_on_a_path_that_does_not_exist_is_a_usage_error(tmp_path, runner, chdir):
    chdir(tmp_path)
    absent = tmp_path / "absent" / "folder"   # made absent here, not assumed to be
    result = runner.invoke(main, ["codemod", "--no-cache", str(absent), "missing.py"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (f"error: {absent}, missing.py: no such file or directory; check the spelling "
                             "(paths are relative to the current directory)\n")


# ---- the baseline ----------------------------------------------------------------------------------

@pytest.mark.parametrize("separator", ["\x0c", "\x1c", "\x85", "\u2028"], ids=["ff", "fs", "nel", "ls"])
def test_the_baseline_numbers_lines_as_python_does(tmp_path, runner, chdir, separator):
    """str.splitlines breaks lines at these too; Python (and lint's line numbers) do not."""
    root = write_project(tmp_path, {"m.py": f"x = 1  # a{separator}b\n{BAD_READ}"})
    chdir(root)
    result = runner.invoke(main, ["lint", "--no-cache", "--write-baseline", "baseline.json", "m.py"])
    assert result.exit_code == 0, result.stderr
    entries = json.loads((root / "baseline.json").read_text())["findings"]
    assert [(e["code"], e["source"]) for e in entries] == [("SG002", "return b.seq_lens_cpu.max()")]
    result = runner.invoke(main, ["lint", "--no-cache", "m.py"])
    assert result.exit_code == 0, result.stdout
    assert "1 in the baseline" in result.stderr and "stale" not in result.stderr


@pytest.mark.parametrize("flag", ["--baseline", "--write-baseline"])
def test_a_fifo_given_as_the_baseline_is_an_error_not_a_hang(tmp_path, flag):
    root = write_project(tmp_path, {"m.py": BAD_READ})
    os.mkfifo(root / "baseline.json")
    result = seqguard("lint", "--no-cache", flag, "baseline.json", "m.py", cwd=root)
    assert result.returncode == 2
    assert result.stdout == "" and result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: ") and result.stderr.endswith(
        "baseline.json: not a regular file; pass a JSON file written by --write-baseline\n")


@pytest.mark.parametrize("flag, says", [("--baseline", "cannot read the baseline (Too many levels of symbolic links)"),
                                         ("--write-baseline", "cannot write the baseline: Too many levels of "
                                                              "symbolic links")])
def test_a_baseline_link_in_a_loop_is_one_error_not_a_traceback(tmp_path, flag, says):
    root = write_project(tmp_path, {"m.py": BAD_READ})
    (root / "loop.json").symlink_to("loop.json")
    before = (root / "pyproject.toml").read_bytes()
    result = seqguard("lint", "--no-cache", flag, "loop.json", "m.py", cwd=root)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and says in result.stderr
    assert (root / "pyproject.toml").read_bytes() == before   # nothing recorded for a baseline not written


def test_codemod_pool_workers_die_with_a_killed_parent(tmp_path):
    """The codemod itself, on enough files to use its pool (libcst runs in workers),
    each file's work replaced by `job`: its workers die with it too."""
    import seqguard.codemods.runner as codemod_runner

    (tmp_path / "tree").mkdir()
    tree = write_project(tmp_path / "tree", {f"m{i}.py": BAD_READ for i in range(codemod_runner.POOL_MIN_FILES)})
    _assert_workers_die_with_their_parent(tmp_path, f"""
        from pathlib import Path
        import seqguard.codemods.runner as r
        from seqguard.config import load_config

        r._one_file = job   # each file's rewrite, in a pool worker, now records and sleeps
        config = load_config([Path({str(tree)!r})])
        r.run_codemod([Path({str(tree)!r})], config, r.codemod_options(config, "inline", "device"),
                      write=False, use_cache=False, jobs=2)
    """)


def test_the_scans_nfkc_prefixes_are_every_character_that_normalises_to_identifier_ascii():
    # a file is searched for NFKC spellings of the mirror (`b.ｓeq_lens_cpu`) only when it
    # holds one of these two-byte prefixes: recomputed over every code point, so a newer
    # Unicode that adds such a character fails here instead of hiding a read
    import re
    import unicodedata

    from seqguard.lint import facts
    listed = {re.sub(rb"\\(.)", rb"\1", p) for p in facts._NFKC_TO_ASCII.pattern.split(b"|")}
    needed = set()
    for point in range(0x80, 0x110000):
        if 0xD800 <= point <= 0xDFFF:
            continue
        normal = unicodedata.normalize("NFKC", chr(point))
        if normal and all(c.isascii() and (c.isalnum() or c == "_") for c in normal):
            needed.add(chr(point).encode()[:2])
    assert listed == needed


def test_one_reader_says_why_a_file_has_no_bytes(tmp_path):
    """fileio.read_file serves lint, the codemod, the baseline, the config and the
    cache: each way a read fails is told apart, and the cache's own files refuse a link."""
    from seqguard.fileio import read_file

    target = tmp_path / "t.py"
    target.write_bytes(b"x = 1\n")
    (tmp_path / "link.py").symlink_to(target)
    assert read_file(tmp_path / "link.py").data == b"x = 1\n"
    refused = read_file(tmp_path / "link.py", follow_symlinks=False)
    assert (refused.data, refused.kind) == (None, "not-regular")
    assert read_file(tmp_path / "gone.py").kind == "missing"
    big = read_file(target, limit=3)
    assert big.kind == "too-large" and big.error.startswith("too large (6 bytes, max-file-size is 3)")
    assert read_file(tmp_path).kind == "not-regular"
    assert read_file(target).stat.st_size == 6


def test_a_read_takes_what_the_file_holds_however_it_differs_from_its_stat(tmp_path):
    from seqguard.fileio import _read_all

    path = tmp_path / "grown.py"
    data = bytes(range(256)) * 1000   # 256,000 bytes: more than one read of the stat'd size
    path.write_bytes(data)
    for size, cap, expected in ((3, None, data), (len(data), None, data), (3, 10, data[:10]),
                                (len(data), len(data) + 1, data), (10**6, 5, data[:5])):
        fd = os.open(path, os.O_RDONLY)
        try:
            assert _read_all(fd, size, cap) == expected
        finally:
            os.close(fd)
    empty = tmp_path / "empty.py"
    empty.write_bytes(b"")
    fd = os.open(empty, os.O_RDONLY)
    try:
        assert _read_all(fd, 0, None) == b""
    finally:
        os.close(fd)
