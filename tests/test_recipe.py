"""The adoption recipe holds (issue 37): `--write-baseline` records what the findings
depend on, a restricted run leaves what it did not check alone, and the configuration
and baseline inputs a user can get wrong are each one clear line."""

import collections
import json
import os
import sys
from pathlib import Path

import pytest

from seqguard.cli import main
from seqguard.config import ConfigError, config_file_problem, load_config

READ = "def f(b):\n    return b.seq_lens_cpu.max()\n"
BASE = "class AttentionBackend:\n    needs_cpu_seq_lens: bool = True\n"
OPT_OUT = ("from pkg.base import AttentionBackend\n\n\nclass Fast(AttentionBackend):\n"
           "    needs_cpu_seq_lens = False\n\n    def plan(self, fb):\n        return fb.seq_lens_cpu.max()\n")


def lint(runner, *args):
    return runner.invoke(main, ["lint", "--no-cache", *map(str, args)])


def codes(entries) -> collections.Counter:
    """Findings per code a baseline's entries hold."""
    counted: collections.Counter = collections.Counter()
    for entry in entries:
        counted[entry["code"]] += entry["count"]
    return counted


def entries_of(path) -> list:
    return json.loads(Path(path).read_text())["findings"]


def model_file(engine: Path) -> str:
    """The example engine's model moved out of its pyproject.toml into
    models/engine.toml (what a fork ships); returns the table's body."""
    text = (engine / "pyproject.toml").read_text()
    head, body = text.split("[tool.seqguard]\n", 1)
    (engine / "models").mkdir()
    (engine / "models" / "engine.toml").write_text(body)
    (engine / "pyproject.toml").write_text(head)
    return body


# ---- item 1: what the findings depend on is recorded -------------------------------------------------


OPTIONS = ["--backend-base", "engine.layers.attention.base.AttentionBackend", "--mirror-attribute", "seq_lens_cpu",
           "--mirror-attribute", "seq_lens_sum", "--device-attribute", "seq_lens",
           "--flag-attribute", "needs_cpu_seq_lens", "--exclude", "engine/multimodal/**",
           "--extend-exclude", "**/two_batch.py"]


# ---- item 2: a restricted run never reports or prunes what it did not check --------------------------


# ---- item 3: bad input, each one line ------------------------------------------------------------


GOOD = {"path": "a.py", "code": "SG002", "scope": "f", "source": "return b.seq_lens_cpu.max()", "count": 1}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_config_that_is_not_a_regular_file_is_named_for_what_it_is(runner, tmp_path, chdir):
    (tmp_path / ".git").mkdir()
    (tmp_path / "a.py").write_text(READ)
    os.mkfifo(tmp_path / "pipe")
    chdir(tmp_path)
    result = lint(runner, "--config", "pipe", ".")
    assert result.exit_code == 2 and result.stderr == (
        "error: pipe: a FIFO, not a regular file; pass the path of a pyproject.toml (or a TOML file with a "
        "[tool.seqguard] table) to --config; settings from a pipe go into a file first\n")
    assert config_file_problem(Path(os.devnull)).startswith(f"{os.devnull}: a character device, not a regular file")
    assert config_file_problem(tmp_path).startswith(f"{tmp_path}: a directory, not a regular file")
    assert config_file_problem(tmp_path / "nope.toml") == (f"{tmp_path / 'nope.toml'}: config file not found; "
                                                           "pass an existing pyproject.toml to --config")
    assert config_file_problem(tmp_path / "a.py") is None
    with pytest.raises(ConfigError, match="a directory, not a regular file"):
        load_config([tmp_path], tmp_path)


def test_config_from_a_real_pipe_is_refused_without_waiting(tmp_path):
    import subprocess

    (tmp_path / ".git").mkdir()
    (tmp_path / "a.py").write_text(READ)
    done = subprocess.run([sys.executable, "-m", "seqguard", "lint", "--no-cache", "--config", "/dev/stdin", "."],
                          input="[tool.seqguard]\n", capture_output=True, text=True, cwd=tmp_path, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent / "src")})
    assert done.returncode == 2 and done.stderr.startswith("error: /dev/stdin: a FIFO, not a regular file; ")


# ---- item 4: --config outside the tree does not move the root --------------------------------------

def test_a_config_outside_the_tree_supplies_the_table_and_the_root_stays(runner, tmp_path, chdir):
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "pkg").mkdir()
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "base.py").write_text(BASE)
    (project / "pkg" / "fast.py").write_text(OPT_OUT)
    shared = tmp_path / "ci" / "seqguard.toml"
    shared.parent.mkdir()
    # qualified names: they match only where the root names the module `pkg.base`
    shared.write_text('[tool.seqguard]\nbackend-bases = ["pkg.base.AttentionBackend"]\nbaseline = "b.json"\n')
    chdir(project)
    config = load_config([Path(".")], shared)
    # the root names the modules, and the file's relative paths are the project's
    assert config.root == project and config.source == shared and config.baseline == project / "b.json"
    result = lint(runner, "--config", shared, ".")
    assert result.exit_code == 2 and f"{project / 'b.json'}: baseline not found" in result.stderr
    shared.write_text('[tool.seqguard]\nbackend-bases = ["pkg.base.AttentionBackend"]\n')
    result = lint(runner, "--config", shared, "--format", "json", ".")
    assert [(f["path"], f["code"]) for f in json.loads(result.stdout)] == [("pkg/fast.py", "SG003")]
    # a config file whose folder holds the paths is still the project's own
    (project / "sub").mkdir()
    (project / "sub" / "cfg.toml").write_text("[tool.seqguard]\n")
    (project / "sub" / "m.py").write_text(READ)
    assert load_config([project / "sub"], project / "sub" / "cfg.toml").root == project / "sub"


# ---- item 5: --preset PATH -------------------------------------------------------------------------

def test_a_model_file_in_pyproject_is_relative_to_the_root_wherever_lint_runs(runner, engine_copy, chdir):
    model_file(engine_copy)
    (engine_copy / "pyproject.toml").write_text('[tool.seqguard]\npreset = "models/engine.toml"\n')
    chdir(engine_copy / "engine" / "managers")
    result = lint(runner, "--format", "json", ".")
    chdir(engine_copy)
    reference = lint(runner, "--preset", "models/engine.toml", "--format", "json", "engine/managers")
    assert result.exit_code == reference.exit_code == 1
    assert [(f["code"], f["line"]) for f in json.loads(result.stdout)] == \
        [(f["code"], f["line"]) for f in json.loads(reference.stdout)]
    # the model file's values are the fixture's own table's
    (engine_copy / "pyproject.toml").write_text("[tool.seqguard]\n" + (engine_copy / "models" / "engine.toml")
                                               .read_text())
    same = lint(runner, "--format", "json", "engine/managers")
    assert json.loads(same.stdout) == json.loads(reference.stdout)


@pytest.mark.parametrize("model, says", [
    ('skip-modes = "DECODE"\n', "models/bad.toml: skip-modes: expected a list of strings, got str"),
    ('bogus = 1\n', "models/bad.toml: unknown key 'bogus'; valid keys: aggregator, backend-bases,"),
    ('baseline = "b.json"\n', "models/bad.toml: unknown key 'baseline'"),
    ("skip-modes = [\n", "models/bad.toml: invalid TOML: "),
])
def test_a_bad_model_file_is_one_error_naming_file_and_key(runner, tmp_path, chdir, model, says):
    (tmp_path / "pyproject.toml").write_text("[tool.seqguard]\n")
    (tmp_path / "a.py").write_text(READ)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "bad.toml").write_text(model)
    chdir(tmp_path)
    result = lint(runner, "--preset", "models/bad.toml", ".")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: {says}"), result.stderr


def test_a_missing_model_file_says_relative_to_what(runner, tmp_path, chdir):
    (tmp_path / "pyproject.toml").write_text('[tool.seqguard]\npreset = "models/none.toml"\n')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.py").write_text(READ)
    chdir(tmp_path / "sub")
    in_file = lint(runner, ".")
    assert in_file.exit_code == 2 and in_file.stderr == (
        f"error: {tmp_path / 'pyproject.toml'}: [tool.seqguard] preset: {tmp_path / 'models' / 'none.toml'}: "
        "no such file; give the path of a TOML model file (relative to the project root) or a bundled preset "
        "(sglang)\n")
    given = lint(runner, "--preset", "none.toml", ".")
    assert given.exit_code == 2 and given.stderr == (
        "error: --preset: none.toml: no such file; give the path of a TOML model file (relative to the current "
        "directory) or a bundled preset (sglang)\n")


# ---- item 6: files that are not Python ---------------------------------------------------------------
