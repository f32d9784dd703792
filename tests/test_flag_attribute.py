"""The flag's name is the engine model's (`flag-attribute`), not a constant: a fork or
another engine that calls it something else gets every rule, fix, graph and codemod
message under its own name, and the old name means nothing there."""

import subprocess
import sys
from pathlib import Path

import pytest

from seqguard.config import ConfigError, config_from_table, load_config
from seqguard.lint.runner import lint_paths

BASE = "class Backend:\n    requires_host_lengths: bool = True\n"
BACKENDS = """\
from .base import Backend


class Quiet(Backend):
    def forward(self, fb):
        return fb.seq_lens * 2


class OptedOut(Backend):
    requires_host_lengths = False

    def forward(self, fb):
        return fb.seq_lens_cpu.max()

    def plan(self, fb):
        return fb.seq_lens.tolist()


class Method(Backend):
    def requires_host_lengths(self):
        return False


class OldName(Backend):
    needs_cpu_seq_lens = False

    def forward(self, fb):
        return fb.seq_lens_cpu.max()
"""
MODEL = '[tool.seqguard]\nbackend-bases = ["eng.base.Backend"]\n'
RENAMED = MODEL + 'flag-attribute = "requires_host_lengths"\n'


def _engine(project, pyproject: str) -> Path:
    return project({"eng/__init__.py": "", "eng/base.py": BASE, "eng/backends.py": BACKENDS}, pyproject)


def _findings(root: Path):
    result = lint_paths([root], load_config([root]), use_cache=False, jobs=1)
    return result.diagnostics


def test_every_rule_reads_the_flag_by_the_name_the_model_gives(project):
    found = _findings(_engine(project, RENAMED))
    assert {(d.line, d.code) for d in found} == {
        (4, "SG001"), (4, "SG006"),        # Quiet inherits True and reads nothing
        (13, "SG003"), (16, "SG004"),      # OptedOut declares False, reads and syncs
        (19, "SG006"), (20, "SG008"),      # Method: the flag as a method, always truthy
        (24, "SG001"),                     # OldName: `needs_cpu_seq_lens` is no flag here
    }
    assert all("needs_cpu_seq_lens" not in d.message + d.reason for d in found)
    assert all("requires_host_lengths" in d.message for d in found if d.code in ("SG001", "SG003", "SG008"))
    assert all("requires_host_lengths" in d.reason for d in found if d.code == "SG006")
    fix = next(d.fix for d in found if d.code == "SG001" and d.line == 4)
    assert fix[1].strip() == "requires_host_lengths = True"


def test_under_the_default_name_the_other_attribute_is_just_a_field(project):
    found = {(d.line, d.code) for d in _findings(_engine(project, MODEL))}
    assert found == {(4, "SG001"), (4, "SG006"), (9, "SG001"), (19, "SG001"), (19, "SG006"), (28, "SG003")}


def test_graph_explain_and_codemod_name_it_too(project):
    root = _engine(project, RENAMED)

    def run(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "seqguard", *args, "--no-cache"], cwd=root,
                              capture_output=True, text=True)
        assert done.returncode in (0, 1), done.stderr
        return done.stdout

    graph = run("graph", ".")
    assert "OptedOut (eng/backends.py:9): requires_host_lengths=False, declared" in graph
    assert "needs_cpu_seq_lens" not in graph
    explained = run("explain", "eng/backends.py:13")
    assert "requires_host_lengths is False" in explained and "needs_cpu_seq_lens" not in explained
    diff = run("codemod", "--fallback", "raise", "--diff", ".")
    assert "declare requires_host_lengths = True" in " ".join(diff.replace('"', " ").split())
    assert "needs_cpu_seq_lens" not in diff


def test_the_command_line_sets_it_as_the_file_does(project):
    root = _engine(project, MODEL)
    done = subprocess.run([sys.executable, "-m", "seqguard", "lint", "--no-cache", "--flag-attribute",
                           "requires_host_lengths", "."], cwd=root, capture_output=True, text=True)
    assert "`OptedOut` sets `requires_host_lengths` to False" in done.stdout


@pytest.mark.parametrize("value", ['"not a name"', "3", '""'])
def test_a_bad_name_is_one_error_naming_the_key(value):
    with pytest.raises(ConfigError) as error:
        config_from_table(f"flag-attribute = {value}\n")
    assert str(error.value).startswith("<table>: [tool.seqguard] flag-attribute:"), error.value


def test_a_cached_fact_is_not_reused_under_another_flag_name():
    # the per-file facts record which attribute declared the flag: the cache key holds it
    default = config_from_table("")
    renamed = config_from_table('flag-attribute = "requires_host_lengths"\n')
    assert renamed.flag_attribute == "requires_host_lengths"
    assert default.analysis_fingerprint != renamed.analysis_fingerprint
