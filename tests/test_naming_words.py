"""The naming conventions the analysis guesses from are the engine model's data
(`host-name-words`, `length-name-words`, `device-length-name-parts`): another word in
the configuration changes what is found, in the per-file walk (which pull copies from
the device) and in the judge (which argument every caller passes is a host copy)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from seqguard.config import Config, load_config
from seqguard.lint.rules.opt_out_syncs_lengths import OptOutSyncsLengths
from seqguard.lint.runner import lint_paths, lint_source

BASE = Config(root=Path("."))

# A helper pulls its parameter to the host; its one caller passes a field named, in
# this engine's own words, as a host copy of lengths (`staged` for "on the host").
STAGED = """\
class B(AttentionBackend):
    needs_cpu_seq_lens = False
    def _walk(self, seq_lens):
        return seq_lens[0].item()
    def g(self):
        return self._walk(self.staged_lens[:2])
"""


def sg004_lines(source: str, config: Config) -> list[int]:
    return [d.line for d in lint_source(source, [OptOutSyncsLengths], config=config)]


def test_a_host_word_of_the_engine_clears_a_pull_of_a_field_so_named():
    """The walk: `seq_lens_pinned` holds `seq_lens`, so its pull is a device sync,
    unless `pinned` says it is a host copy."""
    source = ("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
              "    def f(self, m):\n        return m.seq_lens_pinned.cpu()\n")
    assert sg004_lines(source, BASE) == [4]
    pinned = dataclasses.replace(BASE, host_name_words=("cpu", "host", "pinned"))
    assert sg004_lines(source, pinned) == []


def test_a_host_word_of_the_engine_in_its_configuration_clears_what_every_caller_passes(tmp_path):
    """The judge, from `[tool.seqguard]`: `staged_lens` is no host copy by the default
    words, and is one once `staged` is a host word (`lens` a length word already)."""
    (tmp_path / "b.py").write_text(STAGED)
    (tmp_path / "pyproject.toml").write_text("[tool.seqguard]\n")
    default = lint_paths([tmp_path], load_config([tmp_path]), use_cache=False, jobs=1)
    assert [(d.code, d.line) for d in default.diagnostics] == [("SG004", 4)]
    (tmp_path / "pyproject.toml").write_text('[tool.seqguard]\nhost-name-words = ["cpu", "host", "staged"]\n')
    staged = load_config([tmp_path])
    assert staged.host_name_words == ("cpu", "host", "staged")
    assert lint_paths([tmp_path], staged, use_cache=False, jobs=1).diagnostics == []


def test_a_length_word_of_the_engine_clears_what_every_caller_passes():
    """The judge: `host_counts` is named a host copy but not of lengths, until `counts`
    is a length word."""
    source = STAGED.replace("staged_lens", "host_counts")
    assert sg004_lines(source, BASE) == [4]
    counts = dataclasses.replace(BASE, length_name_words=("len", "lens", "counts"))
    assert sg004_lines(source, counts) == []


def test_device_lengths_deep_in_a_chain_are_found_by_the_configured_part():
    """`self.meta.seq_lens` is a device length tensor by its `seq_lens`; with no part
    configured the chain is judged by the names it starts with (`self`, `meta`)."""
    source = ("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"
              "    def f(self):\n        return self.meta.seq_lens.tolist()\n")
    assert sg004_lines(source, BASE) == [4]
    assert sg004_lines(source, dataclasses.replace(BASE, device_length_name_parts=())) == []


def test_a_word_that_is_no_word_is_refused_with_its_key(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.seqguard]\nhost-name-words = ["on_host"]\n')
    try:
        load_config([tmp_path])
    except Exception as e:  # the loader's one-line error names the key and the value
        assert "host-name-words" in str(e) and "'on_host'" in str(e)
    else:
        raise AssertionError("a word with an underscore was accepted")
