"""seqguard codemod: behaviour kept, bytes kept, files never half-written."""

import json
import shutil
import os
import stat
import subprocess
import sys
import sysconfig
from pathlib import Path

import libcst
import pytest
from libcst.codemod import CodemodContext

from seqguard.cli import main
from seqguard.codemods import GuardMirrorReads

from conftest import ENGINE, REPO

SCENARIO = REPO / "tests" / "scenarios" / "engine_scenario.py"


def transform(source: str, **options) -> str:
    """Codemod one in-memory module through LibCST's own entry point: the command
    finds its sites with lint's single-file analysis (SG002/SG003)."""
    module = libcst.parse_module(source)
    return GuardMirrorReads(CodemodContext(), **options).transform_module(module).code


def codemod(runner, *args):
    return runner.invoke(main, ["codemod", "--no-cache", *map(str, args)])


def run_scenario(tree: Path, mode: str) -> dict:
    done = subprocess.run([sys.executable, str(SCENARIO), mode], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(tree)}, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


CONSUMER_VALUES = ("seq_lens", "max_len", "plan", "stats", "positions")


def test_proof_of_behaviour_on_the_example_engine(runner, engine_copy):
    pytest.importorskip("torch")  # the scenario runs the engine (the runtime extra)
    result = codemod(runner, engine_copy)
    assert result.exit_code == 0, result.output
    before_with = run_scenario(ENGINE, "mirror")["ok"]
    after_with = run_scenario(engine_copy, "mirror")["ok"]
    assert after_with == before_with                       # mirror present: identical results
    assert "NoneType" in run_scenario(ENGINE, "none")["error"]  # the original crashes without it
    after_without = run_scenario(engine_copy, "none")["ok"]
    for key in CONSUMER_VALUES:                              # consumers: same values from the device
        assert after_without[key] == before_with[key], key
    assert after_without["mirror"] is None and after_without["mirror_sum"] is None  # maintenance kept None
    # The draft backend opted out of the mirror: no host-sync fallback, a clear error instead.
    error = after_without["draft_backend"]["error"]
    assert error.startswith("RuntimeError: forward_batch.seq_lens_cpu is None: `DraftTritonBackend` sets "
                            "needs_cpu_seq_lens to False"), error


def sg004(runner, tree) -> list:
    """SG004 findings as (file, message, reason): lines move when guards are inserted."""
    result = runner.invoke(main, ["lint", "--no-cache", "--select", "SG004", "--output-format", "json", str(tree)])
    return sorted((Path(f["path"]).name, f["message"], f["reason"]) for f in json.loads(result.stdout))


def test_no_new_host_sync_in_a_backend_that_opted_out(runner, engine_copy):
    before = sg004(runner, engine_copy)
    result = codemod(runner, engine_copy)
    assert result.exit_code == 0, result.output
    assert sg004(runner, engine_copy) == before
    backend = (engine_copy / "engine" / "layers" / "attention" / "draft_backend.py").read_text()
    assert "seq_lens.cpu()" not in backend and "raise RuntimeError(" in backend
    assert "no host-sync fallback (the code opted out of the mirror; a RuntimeError instead):" in result.stderr
    # named where lint reported the read, in the file before the `raise` block was put before it
    assert "draft_backend.py:8: `DraftTritonBackend` sets needs_cpu_seq_lens to False" in result.stderr
    original = (ENGINE / "engine" / "layers" / "attention" / "draft_backend.py").read_text()
    assert "int(forward_batch.seq_lens_cpu.max())" in original.splitlines()[7]


def test_a_device_template_is_used_where_the_backend_opted_out(tmp_path, runner):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.seqguard]\nfallbacks = {seq_lens_cpu = "{obj}.seq_lens"}\n')
    path = tmp_path / "b.py"
    path.write_text("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n\n"
                    "    def f(self, fb):\n        return fb.seq_lens_cpu.max()\n")
    result = codemod(runner, "--format", "json", path)
    assert result.exit_code == 0, result.output
    assert "return fb.seq_lens.max()" in path.read_text() and "raise" not in path.read_text()
    site = json.loads(result.stdout)["files"][0]["sites"][0]
    assert site["host_sync"] is False and site["fallback"] == "template"


def test_invariants_after_a_run(runner, engine_copy):
    before = {p: p.read_bytes() for p in engine_copy.rglob("*.py")}
    assert codemod(runner, engine_copy).exit_code == 0
    lint = runner.invoke(main, ["lint", "--no-cache", "--select", "SG002,SG003", str(engine_copy)])
    assert lint.exit_code == 0 and lint.stdout == ""
    for path, old in before.items():
        new = path.read_bytes()
        compile(new, str(path), "exec")
        if b"seq_lens_cpu" not in old and b"seq_lens_sum" not in old:
            assert new == old, path
    again = codemod(runner, "--check", engine_copy)
    assert again.exit_code == 0 and "0 file(s) would change" in again.stderr


def test_only_guarded_statements_change_and_formatting_survives(tmp_path, runner):
    source = ("# -*- coding: latin-1 -*-\r\n"
              "'''D\xe9j\xe0 vu.'''\r\n"
              "\r\n"
              "def f(b, n):  # keep me\r\n"
              "    x = \"double\"  # and me\r\n"
              "\r\n"
              "    b.seq_lens_sum += n  # grow\r\n"
              "    return b.seq_lens_cpu.max()")  # no trailing newline
    path = tmp_path / "m.py"
    path.write_bytes(source.encode("latin-1"))
    path.chmod(0o751)
    assert codemod(runner, path).exit_code == 0
    expected = ("# -*- coding: latin-1 -*-\r\n"
                "'''D\xe9j\xe0 vu.'''\r\n"
                "\r\n"
                "def f(b, n):  # keep me\r\n"
                "    x = \"double\"  # and me\r\n"
                "\r\n"
                "    if b.seq_lens_sum is not None:\r\n"
                "        b.seq_lens_sum += n  # grow\r\n"
                "    if b.seq_lens_cpu is not None:\r\n"
                "        return b.seq_lens_cpu.max()\r\n"
                "    else:\r\n"
                "        return b.seq_lens.cpu().max()")
    assert path.read_bytes() == expected.encode("latin-1")
    assert stat.S_IMODE(path.stat().st_mode) == 0o751


def test_bom_and_tabs_survive(tmp_path, runner):
    path = tmp_path / "t.py"
    path.write_bytes(b"\xef\xbb\xbfdef f(b):\n\tb.seq_lens_cpu.add_(1)\n")
    assert codemod(runner, path).exit_code == 0
    assert path.read_bytes() == b"\xef\xbb\xbfdef f(b):\n\tif b.seq_lens_cpu is not None:\n\t\tb.seq_lens_cpu.add_(1)\n"


@pytest.mark.parametrize("source, expected", [
    # maintenance from several mirrors: absent if any is absent
    ("def f(a, b):\n    a.seq_lens_cpu = torch.cat([a.seq_lens_cpu, b.seq_lens_cpu])\n",
     "def f(a, b):\n    if a.seq_lens_cpu is not None and b.seq_lens_cpu is not None:\n"
     "        a.seq_lens_cpu = torch.cat([a.seq_lens_cpu, b.seq_lens_cpu])\n"
     "    else:\n        a.seq_lens_cpu = None\n"),
    # maintenance from itself: no else needed
    ("def f(a, i):\n    a.seq_lens_cpu = a.seq_lens_cpu[i]\n",
     "def f(a, i):\n    if a.seq_lens_cpu is not None:\n        a.seq_lens_cpu = a.seq_lens_cpu[i]\n"),
    # consumer through an object built from the batch falls back to that object's device tensor
    ("def f(b):\n    fb = Fb(seq_lens_cpu=b.seq_lens_cpu, seq_lens=b.seq_lens)\n    return fb.seq_lens_cpu.max()\n",
     "def f(b):\n    fb = Fb(seq_lens_cpu=b.seq_lens_cpu, seq_lens=b.seq_lens)\n"
     "    if fb.seq_lens_cpu is not None:\n        return fb.seq_lens_cpu.max()\n"
     "    else:\n        return fb.seq_lens.cpu().max()\n"),
    # a loop's iterable cannot be duplicated: the read itself is guarded
    ("def f(b):\n    for x in b.seq_lens_cpu:\n        g(x)\n",
     "def f(b):\n    for x in (b.seq_lens_cpu if b.seq_lens_cpu is not None else b.seq_lens.cpu()):\n        g(x)\n"),
    # the right side of `and` runs only sometimes: guarding the whole statement would read `b` when None
    ("def f(b):\n    return b is not None and b.seq_lens_sum > 3\n",
     "def f(b):\n    return b is not None and (\n"
     "        b.seq_lens_sum if b.seq_lens_sum is not None else b.seq_lens.sum().item()\n    ) > 3\n"),
    # a store into an attribute of a mirror (issue 13): no `else` that would dereference None
    ("def f(e):\n    e.seq_lens_cpu.seq_lens_sum = 3\n",
     "def f(e):\n    if e.seq_lens_cpu is not None:\n        e.seq_lens_cpu.seq_lens_sum = 3\n"),
    # `ast` columns count UTF-8 bytes, libcst's count characters
    ("def f(b):\n    return ('d\xe9j\xe0', b.seq_lens_cpu.max())\n",
     "def f(b):\n    if b.seq_lens_cpu is not None:\n        return ('d\xe9j\xe0', b.seq_lens_cpu.max())\n"
     "    else:\n        return ('d\xe9j\xe0', b.seq_lens.cpu().max())\n"),
    # a decorator's argument (issue 13): the read itself is guarded
    ("@deco(B.seq_lens_cpu.max())\ndef f():\n    pass\n",
     "@deco((B.seq_lens_cpu if B.seq_lens_cpu is not None else B.seq_lens.cpu()).max())\ndef f():\n    pass\n"),
    ("class A:\n    @deco(B.seq_lens_sum + 1)\n    def f(self):\n        pass\n",
     "class A:\n    @deco((\n        B.seq_lens_sum if B.seq_lens_sum is not None else B.seq_lens.sum().item()\n"
     "    ) + 1)\n    def f(self):\n        pass\n"),
    # a `case ... if` guard (issue 13): the read itself is guarded (the safety check masks the case)
    ("def f(b, x):\n    match x:\n        case 1 if b.seq_lens_sum > 3:\n            return 1\n        case _:\n"
     "            return 0\n",
     "def f(b, x):\n    match x:\n        case 1 if (\n"
     "            b.seq_lens_sum if b.seq_lens_sum is not None else b.seq_lens.sum().item()\n"
     "        ) > 3:\n            return 1\n        case _:\n            return 0\n"),
    # a form feed in the indentation (issue 13) is kept, and is no indentation unit
    ("def f(b):\n\x0c    return b.seq_lens_cpu.max()\n",
     "def f(b):\n\x0c    if b.seq_lens_cpu is not None:\n\x0c        return b.seq_lens_cpu.max()\n"
     "\x0c    else:\n\x0c        return b.seq_lens.cpu().max()\n"),
    # comments stay with the statement they belong to; a multi-line string is kept as it is
    ("def f(b):\n    # why\n    log(\"\"\"a\nb\"\"\", b.seq_lens_sum + 1)  # tail\n",
     "def f(b):\n    # why\n    if b.seq_lens_sum is not None:\n"
     "        log(\"\"\"a\nb\"\"\", b.seq_lens_sum + 1)  # tail\n"
     "    else:\n        log(\"\"\"a\nb\"\"\", b.seq_lens.sum().item() + 1)\n"),
    # two reads in one statement: both fall back in the `else` (each replaced, none left)
    ("def f(b):\n    return b.seq_lens_cpu.max() + b.seq_lens_sum\n",
     "def f(b):\n    if b.seq_lens_cpu is not None and b.seq_lens_sum is not None:\n"
     "        return b.seq_lens_cpu.max() + b.seq_lens_sum\n"
     "    else:\n        return b.seq_lens.cpu().max() + b.seq_lens.sum().item()\n"),
    # a value handed to a function of the file that reads it (a read through a call)
    ("def build(total, n):\n    return total * n\n\n\ndef f(b):\n    return build(b.seq_lens_sum, 4)\n",
     "def build(total, n):\n    return total * n\n\n\ndef f(b):\n    if b.seq_lens_sum is not None:\n"
     "        return build(b.seq_lens_sum, 4)\n    else:\n        return build(b.seq_lens.sum().item(), 4)\n"),
    # names that contain one another are no nesting (`b.seq_lens_cpu` in `fb.seq_lens_cpu`)
    ("def f(b, fb, torch):\n    b.seq_lens_cpu = torch.cat([b.seq_lens_cpu, fb.seq_lens_cpu])\n",
     "def f(b, fb, torch):\n    if b.seq_lens_cpu is not None and fb.seq_lens_cpu is not None:\n"
     "        b.seq_lens_cpu = torch.cat([b.seq_lens_cpu, fb.seq_lens_cpu])\n    else:\n"
     "        b.seq_lens_cpu = None\n"),
    # a multi-line maintenance statement is re-indented whole
    ("def f(a, b):\n    a.seq_lens_sum = (\n        a.seq_lens_sum + b.seq_lens_sum\n    )\n",
     "def f(a, b):\n    if a.seq_lens_sum is not None and b.seq_lens_sum is not None:\n"
     "        a.seq_lens_sum = (\n            a.seq_lens_sum + b.seq_lens_sum\n        )\n"
     "    else:\n        a.seq_lens_sum = None\n"),
])
def test_site_kinds(source, expected):
    assert transform(source) == expected


def test_fallback_templates_from_config(tmp_path, runner):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.seqguard]\nfallbacks = {seq_lens_sum = "{obj}.seq_lens.sum().item()"}\n')
    path = tmp_path / "m.py"
    path.write_text("def f(b):\n    return b.seq_lens_sum * 2\n")
    assert codemod(runner, path).exit_code == 0
    assert "    else:\n        return b.seq_lens.sum().item() * 2\n" in path.read_text()


def test_helper_style_imports_once_and_counts_pulls(tmp_path, runner):
    path = tmp_path / "m.py"
    path.write_text('"""Doc."""\nfrom __future__ import annotations\n\nimport os\n\n\n'
                    "def f(b):\n    return b.seq_lens_cpu.max() + b.seq_lens_sum\n\n\n"
                    "def g(b):\n    return b.seq_lens_cpu.min()\n")
    assert codemod(runner, "--style", "helper", path).exit_code == 0
    text = path.read_text()
    assert text.count("from seqguard.runtime.fallback import host_seq_lens, host_seq_lens_sum\n") == 1
    assert text.index("from __future__") < text.index("import os") < text.index("from seqguard.runtime")
    pytest.importorskip("torch")
    import torch
    from seqguard.runtime import fallback
    namespace: dict = {}
    exec(compile(text, str(path), "exec"), namespace)
    batch = type("B", (), {"seq_lens_cpu": None, "seq_lens_sum": None, "seq_lens": torch.tensor([3, 5])})()
    before = fallback.total_lazy_host_pulls()
    assert namespace["f"](batch) == 5 + 8
    assert fallback.total_lazy_host_pulls() - before == 2


def test_helper_import_keeps_two_blank_lines_before_a_def():
    assert transform("def f(b):\n    return b.seq_lens_cpu.max()\n", style="helper") == (
        "from seqguard.runtime.fallback import host_seq_lens\n\n\n"
        "def f(b):\n    return host_seq_lens(b.seq_lens_cpu, b.seq_lens).max()\n")


def test_helper_import_under_a_module_docstring_gets_the_blank_line_formatters_want():
    # Black and `ruff format` put one blank line after a module docstring
    assert transform('"""Metrics."""\ndef f(b):\n    return b.seq_lens_cpu.max()\n', style="helper") == (
        '"""Metrics."""\n\nfrom seqguard.runtime.fallback import host_seq_lens\n\n\n'
        "def f(b):\n    return host_seq_lens(b.seq_lens_cpu, b.seq_lens).max()\n")


def test_fallback_raise_names_the_attribute(tmp_path, runner):
    path = tmp_path / "m.py"
    path.write_text("def f(b):\n    return b.seq_lens_cpu.max()\n")
    assert codemod(runner, "--fallback", "raise", path).exit_code == 0
    namespace: dict = {}
    exec(path.read_text(), namespace)
    with pytest.raises(RuntimeError, match=r"b.seq_lens_cpu is None: .*needs_cpu_seq_lens = True"):
        namespace["f"](type("B", (), {"seq_lens_cpu": None})())


def test_diff_and_check_write_nothing(runner, engine_copy):
    before = {p: p.read_bytes() for p in engine_copy.rglob("*.py")}
    diff = codemod(runner, "--diff", engine_copy)
    assert (
        diff.exit_code == 0
        and diff.stdout.startswith("--- a/")
        and "+        if self.seq_lens_cpu is not None:" in diff.stdout
    )
    check = codemod(runner, "--check", engine_copy)
    assert check.exit_code == 1 and "5 file(s) would change" in check.stderr
    assert before == {p: p.read_bytes() for p in engine_copy.rglob("*.py")}


def test_json_report(runner, engine_copy):
    result = codemod(runner, "--format", "json", engine_copy)
    report = json.loads(result.stdout)
    assert report["written"] is True
    assert report["summary"]["files_changed"] == 5 and report["summary"]["maintenance_sites"] == 10
    kinds = {s["kind"] for f in report["files"] for s in f["sites"]}
    assert kinds == {"maintenance", "consumer"}
    consumers = [s for f in report["files"] for s in f["sites"] if s["kind"] == "consumer"]
    assert all(not s["host_sync"] for f in report["files"] for s in f["sites"] if s["kind"] == "maintenance")
    # every consumer falls back to the device except the one in the backend that opted out
    assert [s["fallback"] for s in consumers if not s["host_sync"]] == ["raise"]
    assert sum(s["host_sync"] for s in consumers) == len(consumers) - 1


def test_json_report_with_a_diff_keeps_stdout_json(runner, engine_copy):
    result = codemod(runner, "--format", "json", "--diff", engine_copy)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)          # stdout holds the JSON alone
    assert report["written"] is False
    assert result.stderr.startswith("--- a/") and "+        if self.seq_lens_cpu is not None:" in result.stderr


def test_summary_lists_every_host_sync_fallback(runner, engine_copy):
    result = codemod(runner, engine_copy)
    assert "host-sync fallbacks (8; hand-optimise the hot ones):" in result.stderr
    # each named at its read as lint reported it, in the file before the rewrite (the
    # version every line number of the report is of): log_decode_stats' two reads
    listed = [line.strip() for line in result.stderr.splitlines() if "engine/managers/metrics.py:" in line]
    assert [entry.rsplit("/", 1)[-1] for entry in listed] == ["metrics.py:9", "metrics.py:10"]
    assert "(line numbers: the files as lint read them, before this rewrite)" in result.stderr
    # written nowhere (--check): the same entries
    engine_copy_again = engine_copy.parent / "again"
    shutil.copytree(ENGINE, engine_copy_again)
    checked = runner.invoke(main, ["codemod", "--no-cache", "--check", str(engine_copy_again)])
    assert [line.strip().rsplit("/", 1)[-1] for line in checked.stderr.splitlines()
            if "engine/managers/metrics.py:" in line] == ["metrics.py:9", "metrics.py:10"]


def test_bad_files_are_skipped_and_the_rest_is_processed(tmp_path, runner):
    (tmp_path / "good.py").write_text("def f(b):\n    return b.seq_lens_cpu.max()\n")
    (tmp_path / "broken.py").write_text("def f(b:\n    return b.seq_lens_cpu.max()\n")
    readonly = tmp_path / "ro.py"
    readonly.write_text("def g(b):\n    return b.seq_lens_sum + 1\n")
    readonly.chmod(0o444)
    result = codemod(runner, tmp_path)
    assert result.exit_code == 1
    assert "failed: " in result.stderr and "broken.py: cannot parse" in result.stderr
    assert "skipped: " in result.stderr and "1 skipped, 1 failed" in result.stderr  # the read-only file
    # by its mode, whoever runs it: root (whose access(W_OK) says yes) is refused too
    assert "ro.py: read-only file; not written (make it writable, or pass --force)" in result.stderr
    assert readonly.read_text() == "def g(b):\n    return b.seq_lens_sum + 1\n"
    assert "if b.seq_lens_cpu is not None:" in (tmp_path / "good.py").read_text()
    assert "Traceback" not in result.output


def test_a_file_edited_during_the_run_is_not_overwritten(tmp_path, monkeypatch):
    import seqguard.codemods.runner as runner_module
    path = tmp_path / "m.py"
    path.write_text("def f(b):\n    return b.seq_lens_cpu.max()\n")
    real = runner_module.guard_source

    def edit_then_guard(data, sites, options, filename=None):
        outcome = real(data, sites, options, filename)
        path.write_text("# someone else's edit\n")
        return outcome

    monkeypatch.setattr(runner_module, "guard_source", edit_then_guard)
    from seqguard.config import load_config
    report = runner_module.run_codemod([path], load_config([path]),
                                       runner_module.codemod_options(load_config([path]), "inline", "device"),
                                       write=True, use_cache=False)
    assert report.files[0].outcome.status == "failed"
    assert path.read_text() == "# someone else's edit\n"


def test_killed_run_leaves_every_file_fully_old_or_fully_new(tmp_path):
    tree = tmp_path / "big"
    body = "".join(f"def f{i}(b, n):\n    b.seq_lens_sum += n\n    return b.seq_lens_cpu.max() + {i}\n\n"
                   for i in range(60))
    for i in range(300):
        (tree / f"pkg{i % 10}").mkdir(parents=True, exist_ok=True)
        (tree / f"pkg{i % 10}" / f"m{i}.py").write_text(body)
    originals = {p: p.read_bytes() for p in tree.rglob("*.py")}
    expected_new = transform(body).encode()
    cmd = [sys.executable, "-m", "seqguard", "codemod", "--no-cache", str(tree)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Wait until the first file is rewritten, then kill mid-run. The codemod writes in
    # the order of the paths it prints (run_codemod sorts its tasks by them; a pool
    # starts them in that order), not in rglob's: watch the first ones of that order.
    import time
    write_order = sorted(originals, key=str)
    watched = write_order[:8]
    deadline = time.time() + 60
    while time.time() < deadline and all(p.read_bytes() == originals[p] for p in watched):
        time.sleep(0.005)
    proc.kill()
    proc.wait()
    assert any(p.read_bytes() != originals[p] for p in watched), "no watched file was rewritten in 60 s"
    states = {"old": 0, "new": 0}
    for path, old in originals.items():
        now = path.read_bytes()
        assert now in (old, expected_new), path
        states["old" if now == old else "new"] += 1
    assert states["new"] > 0 and states["old"] > 0  # killed mid-run, not before or after


def test_standard_library_passes_without_a_change_or_a_crash(runner):
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    result = codemod(runner, "--check", stdlib)
    assert result.exit_code == 0, result.stderr[-2000:]
    assert "0 file(s) would change" in result.stderr and "Traceback" not in result.output


def test_a_progress_bar_is_entered_before_it_is_iterated(tmp_path):
    import io

    import click

    import seqguard.codemods.runner as runner_module
    from seqguard.config import load_config
    (tmp_path / "m.py").write_text("def f(b):\n    return b.seq_lens_cpu.max()\n")
    config = load_config([tmp_path])
    shown = io.StringIO()
    report = runner_module.run_codemod([tmp_path], config, runner_module.codemod_options(config, "inline", "device"),
                                       write=False, use_cache=False,
                                       progress=lambda items: click.progressbar(items, file=shown))
    assert [f.outcome.status for f in report.files] == ["changed"]


def test_progress_bar_only_for_long_runs_on_a_terminal(monkeypatch):
    import click
    from seqguard import cli
    items = list(range(30))
    monkeypatch.setattr(cli.sys.stderr, "isatty", lambda: True, raising=False)
    assert isinstance(cli._progress(items), click._termui_impl.ProgressBar)
    assert cli._progress(items[:5]) == items[:5]
    monkeypatch.setattr(cli.sys.stderr, "isatty", lambda: False, raising=False)
    assert cli._progress(items) == items


def test_a_missing_path_is_one_failed_file_for_callers_of_run_codemod(tmp_path, chdir):
    # (the command refuses it up front, exit 2: tests/test_hardening.py)
    import seqguard.codemods.runner as runner_module
    from seqguard.codemods.report import render_text_summary
    from seqguard.config import load_config
    chdir(tmp_path)
    config = load_config([Path("nonexistent.py")])
    report = runner_module.run_codemod([Path("nonexistent.py")], config,
                                       runner_module.codemod_options(config, "inline", "device"),
                                       write=True, use_cache=False)
    assert render_text_summary(report, written=True).startswith("seqguard codemod: 0 file(s) changed, 0 unchanged, "
                                                                 "0 skipped, 1 failed\n")


@pytest.mark.parametrize("source, reason", [
    # issue 13: a fallback must never read the wrong object or a None one
    ("def f(x):\n    if isinstance(x, Batch):\n        x = x.seq_lens_cpu\n    return x.max()\n",
     "`x` outlived the object it was read from"),
    ("def f(b, other):\n    lens = b.seq_lens_cpu\n    b = other\n    return lens.max()\n",
     "`lens` outlived the object it was read from"),
    ("def f(self, b):\n    return self.lens[b.seq_lens_sum].seq_lens_cpu.max()\n",
     "one read is inside another's object"),
    # a CUDA-graph runner's persistent host buffer (sglang 0.5.23 npu_graph_runner.py):
    # skipping the copy when the batch has no mirror would replay stale lengths
    ("class R:\n    def replay(self, fb):\n"
     "        self.buffers.seq_lens_cpu[: self.raw_bs].copy_(fb.seq_lens_cpu[: self.raw_bs])\n",
     "fills the storage `self.buffers.seq_lens_cpu` from `fb.seq_lens_cpu`: skipped when that is None"),
    ("class R:\n    def replay(self, fb, n):\n        self.seq_lens_cpu[:n] = fb.seq_lens_cpu[:n]\n",
     "fills the storage `self.seq_lens_cpu` from `fb.seq_lens_cpu`"),
    ("class R:\n    def replay(self, fb, n):\n        buf = self.seq_lens_cpu\n        "
     "buf[:n].copy_(fb.seq_lens_cpu[:n])\n",
     "fills the storage `self.seq_lens_cpu` from `fb.seq_lens_cpu`"),
    ("class R:\n    def replay(self, fb):\n        buf = self.seq_lens_cpu\n        buf.copy_(fb.seq_lens_cpu)\n",
     "fills the storage `self.seq_lens_cpu` from `fb.seq_lens_cpu`"),
])
def test_sites_without_a_right_fallback_are_listed_not_rewritten(tmp_path, runner, chdir, source, reason):
    (tmp_path / "m.py").write_text(source)
    chdir(tmp_path)
    result = runner.invoke(main, ["codemod", "--no-cache", "--format", "json", "m.py"])
    report = json.loads(result.stdout)
    assert (tmp_path / "m.py").read_text() == source
    assert report["files"][0]["manual"] and all(reason in m["reason"] for m in report["files"][0]["manual"])


def test_file_statuses_are_an_enum_written_as_the_same_words(tmp_path, runner, chdir):
    import enum

    import seqguard.codemods.runner as runner_module
    from seqguard.config import load_config
    (tmp_path / "m.py").write_text("def f(b):\n    return b.seq_lens_cpu.max()\n")
    config = load_config([tmp_path])
    report = runner_module.run_codemod([tmp_path], config, runner_module.codemod_options(config, "inline", "device"),
                                       write=False, use_cache=False)
    status = report.files[0].outcome.status
    assert isinstance(status, enum.Enum) and status == "changed" and f"{status}" == "changed"
    chdir(tmp_path)
    result = runner.invoke(main, ["codemod", "--no-cache", "--check", "--format", "json", "m.py"])
    assert '"status": "changed",' in result.stdout
    assert json.loads(result.stdout)["files"][0]["status"] == "changed"


def test_every_host_sync_fallback_is_one_sg004_sees(tmp_path, runner, chdir):
    """Issue 13: a fallback the codemod writes is a host sync lint's SG004 reports
    wherever it would report the same pull written by hand: once the class holding it
    opts out of the mirror, each fallback is an SG004 (`int(x.seq_lens.sum())` was not)."""
    (tmp_path / "pyproject.toml").write_text("[tool.seqguard]\n")
    source = ("class AttentionBackend:\n    needs_cpu_seq_lens = True\n\n\n"
              "class Helper:\n    def f(self, b, n):\n        return b.seq_lens_sum + n\n\n"
              "    def g(self, b):\n        return b.seq_lens_cpu.max()\n\n"
              "    def h(self, b, n):\n        return b.seq_lens_sum // n + int(b.seq_lens_cpu[0])\n")
    (tmp_path / "m.py").write_text(source)
    chdir(tmp_path)
    result = runner.invoke(main, ["codemod", "--no-cache", "--format", "json", "m.py"])
    assert result.exit_code == 0, result.stderr
    fallbacks = [s for f in json.loads(result.stdout)["files"] for s in f["sites"] if s["host_sync"]]
    assert len(fallbacks) == 4
    opted_out = (tmp_path / "m.py").read_text().replace(
        "class Helper:\n", "class Helper(AttentionBackend):\n    needs_cpu_seq_lens = False\n\n")
    (tmp_path / "m.py").write_text(opted_out)
    result = runner.invoke(main, ["lint", "--no-cache", "--select", "SG004", "--output-format", "json", "m.py"])
    pulls = sorted((d["line"], d["message"].rsplit("with ", 1)[1], d["reason"]) for d in json.loads(result.stdout))
    assert len(pulls) == len(fallbacks), pulls
    assert {p[1] for p in pulls} == {"`.item()`", "`.cpu()`"}
    assert all(p[2].startswith("a device sync") for p in pulls)


def test_a_fallback_names_only_an_attribute_the_objects_class_has(project, runner, chdir):
    """Issue 13 (sglang 0.5.23 two_batch_overlap.py): `spec_info: Optional[EagleVerifyInput]`
    has `seq_lens_cpu` but no `seq_lens`, so `spec_info.seq_lens.cpu()` would fail."""
    root = project({
        "pkg/info.py": """
            from abc import ABC
            from dataclasses import dataclass
            from typing import Any, Optional


            class SpecInput(ABC):
                custom_mask: Optional[Any] = None


            @dataclass
            class VerifyInput(SpecInput):
                draft_token_num: int
                seq_lens_cpu: Any

                def width(self):
                    return self.seq_lens_cpu.shape[0]


            class Base:
                def __init__(self):
                    self.seq_lens = None


            class Batch(Base):
                seq_lens_cpu = None


            class Dynamic:
                def __getattr__(self, name):
                    return None


            class LengthsMixin:
                def longest(self):
                    return self.seq_lens_cpu.max()


            class MixedBatch(LengthsMixin, Batch):
                pass


            def prepare(verify: VerifyInput, batch: Batch):
                # the verify input copies the batch's mirror, None and all (as SGLang's
                # eagle_utils.py does): without it no store makes it None at all
                verify.seq_lens_cpu = batch.seq_lens_cpu
            """,
        "pkg/use.py": """
            from typing import Optional

            from pkg import info
            from pkg.info import Batch, Dynamic, VerifyInput


            def offset(i: int, spec_info: Optional[VerifyInput]) -> int:
                return min(i, spec_info.seq_lens_cpu.shape[0])


            def quoted(spec_info: "info.VerifyInput | None"):
                return spec_info.seq_lens_cpu.max()


            def batch(b: Batch):
                return b.seq_lens_cpu.max()


            def dynamic(d: Dynamic):
                return d.seq_lens_cpu.max()


            def rebound(spec_info: VerifyInput, other):
                spec_info = other
                return spec_info.seq_lens_cpu.max()
            """,
    })
    chdir(root)
    result = runner.invoke(main, ["codemod", "--no-cache", "--format", "json", "pkg"])
    assert result.exit_code == 0, result.stderr
    files = {f["path"]: f for f in json.loads(result.stdout)["files"]}
    manual = sorted((f, m["line"], m["reason"]) for f in files for m in files[f]["manual"])
    assert manual == [
        ("pkg/info.py", 17, "`self` is a `VerifyInput` (the class of the method, which no class of the project derives "
                            "from), which has no `seq_lens`: "
                            "the fallback `self.seq_lens` would fail; guard it by hand"),
        ("pkg/use.py", 9, "`spec_info` is a `VerifyInput` (annotated on line 8), which has no `seq_lens`: "
                          "the fallback `spec_info.seq_lens` would fail; guard it by hand"),
        ("pkg/use.py", 13, "`spec_info` is a `VerifyInput` (annotated on line 12), which has no `seq_lens`: "
                           "the fallback `spec_info.seq_lens` would fail; guard it by hand"),
    ]
    assert "            return self.seq_lens.cpu().max()\n" in (root / "pkg" / "info.py").read_text()  # the mixin
    text = (root / "pkg" / "use.py").read_text()
    assert "spec_info.seq_lens.cpu()" not in text.split("def rebound")[0]
    # the class (through its base) has it, the class cannot be told, the name was rebound: the usual fallback
    for fallback in ("b.seq_lens.cpu().max()", "d.seq_lens.cpu().max()", "spec_info.seq_lens.cpu().max()"):
        assert f"        return {fallback}\n" in text
