"""`seqguard explain PATH:LINE`: why a line is reported or not, as a user calls it, on
the example engine (its pyproject.toml holds its engine model)."""

import json
import shutil

import pytest

from seqguard.cli import main
from conftest import ENGINE


@pytest.fixture
def engine(tmp_path, chdir):
    tree = tmp_path / "engine"
    shutil.copytree(ENGINE, tree)
    chdir(tree)
    return tree


def test_a_reported_read_gives_the_store_and_the_read(runner, engine):
    # engine/managers/schedule_batch.py:44 `self.seq_lens_cpu.add_(1)`; from_reqs stores
    # `lens.clone() if with_mirror else None` at line 38
    result = runner.invoke(main, ["explain", "engine/managers/schedule_batch.py:44"])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "engine/managers/schedule_batch.py:44:9: `self.seq_lens_cpu` (read): may be None  [SG002]"
    assert "set to None at engine/managers/schedule_batch.py:38" in lines[1]
    assert "1. engine/managers/schedule_batch.py:38:" in lines[2]
    assert lines[-1].strip().startswith("2. engine/managers/schedule_batch.py:44:9:")


def test_a_cleared_read_says_what_cleared_it(runner, engine):
    # engine/model_executor/cuda_graph_runner.py:29 reads the runner's own buffer, built
    # by SimpleNamespace(seq_lens_cpu=torch.full(...)) at line 13: never None, but
    # refilled only while the mirror is there (SG010, not SG002)
    result = runner.invoke(main, ["explain", "--format", "json", "engine/model_executor/cuda_graph_runner.py:29"])
    assert result.exit_code == 0, result.stderr
    [document] = json.loads(result.stdout)
    [use] = document["uses"]
    assert (use["subject"], use["verdict"], use["cleared_by"], use["codes"]) == (
        "self.buffers.seq_lens_cpu", "cannot be None", "its object's type", ["SG010"])
    assert "engine/model_executor/cuda_graph_runner.py:13" in use["reason"]


def test_a_line_without_a_mirror_use_says_so(runner, engine):
    result = runner.invoke(main, ["explain", "engine/managers/overlap.py:1"])
    assert result.exit_code == 0
    assert result.stdout == ("engine/managers/overlap.py:1: no use of a host mirror and no host pull "
                             "of the device lengths on this line\n")


@pytest.mark.parametrize("location, message", [
    ("engine/managers/metrics.py", "engine/managers/metrics.py: expected PATH:LINE"),
    ("engine/managers/metrics.py:0", "engine/managers/metrics.py:0: expected PATH:LINE"),
    ("engine/managers/metrics.py:x", "engine/managers/metrics.py:x: expected PATH:LINE"),
    ("engine/managers/nope.py:3", "engine/managers/nope.py: no such file"),
    ("engine/managers/metrics.py:999", "engine/managers/metrics.py:999: engine/managers/metrics.py has 11 line(s)"),
])
def test_a_bad_location_is_one_error(runner, engine, location, message):
    result = runner.invoke(main, ["explain", location])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {message}") and result.stderr.count("\n") == 1
    assert result.stdout == ""


def test_an_unparsable_file_is_named_and_the_others_still_explained(runner, engine):
    (engine / "engine" / "broken.py").write_text("def f(:\n    pass\n")
    result = runner.invoke(main, ["explain", "engine/broken.py:1", "engine/managers/schedule_batch.py:44"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: engine/broken.py:1:") and "cannot be parsed" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout.startswith("engine/managers/schedule_batch.py:44:9: `self.seq_lens_cpu` (read)")
