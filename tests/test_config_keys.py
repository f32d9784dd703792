"""The key table's marks, and the views derived from them: which keys the cached
per-file facts depend on (`analysis_fingerprint`), which a preset may set, which an
option replaces. A key whose mark is wrong either leaves the cache stale or throws it
away for nothing; these tests change each key in turn and watch both."""

from __future__ import annotations

import dataclasses
import sys

import pytest

from seqguard.config import KEYS, OPTION_KEYS, PRESET_KEYS, load_config
from seqguard.lint.facts import analyze, scan
from seqguard.lint.phases import analysis_model, scan_words

from conftest import ENGINE

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

# A value for the keys whose documented example is the default or the engine's own value
# (or, for a condition, names the same words).
OTHER_VALUES = {
    "src": '["lib"]',
    "max-file-size": "1024",
    "formatter": '"black"',
    "flag-attribute": '"requires_host_lengths"',
    "mirror-attributes": '["seq_lens_cpu"]',
    "device-attribute": '"lengths"',
    "mode-attribute": '"phase"',
    # the example names the test the engine's own condition names
    "present-when": '["*.is_plain()"]',
    # without the word the probe's `host_seq_lens` names, or the part its `meta.seq_lens` holds
    "host-name-words": '["cpu"]',
    "device-length-name-parts": '[]',
}
# Tests of every kind the engine model can name, kept in local booleans on the path to
# reads: what the walk keeps of them depends on which conditions and modes it names.
PROBE = b"""\
class Backend:
    def step(self, batch, in_capture):
        decoding = batch.forward_mode.is_decode()
        plain = batch.spec_algorithm.is_none()
        capturing = in_capture and batch.is_graph
        if decoding:
            return batch.seq_lens_cpu
        if plain:
            return batch.seq_lens_sum
        if capturing:
            return batch.extend_prefix_lens.cpu()
        return batch.extend_prefix_lens.tolist()

    def pull(self, batch):
        hosted = batch.host_seq_lens.tolist()
        return hosted, self.meta.seq_lens.cpu()
"""
SOURCES = [path.read_bytes() for path in sorted(ENGINE.rglob("*.py"))] + [PROBE]


@pytest.fixture(scope="module")
def engine():
    """The fixture engine's configuration: its own engine model, so that a changed
    condition or mode has code to change the facts of."""
    return load_config([ENGINE])


def changed(name: str, base):
    """`base` with only the field of key `name` set to another value the key accepts."""
    key = KEYS[name]
    value, problem = key.validate(tomllib.loads(f"v = {OTHER_VALUES.get(name, key.example)}")["v"])
    assert problem is None, (name, problem)
    assert value != getattr(base, key.field), f"{name}: pick a value other than the engine's in OTHER_VALUES"
    return dataclasses.replace(base, **{key.field: value})


def walk_inputs(config) -> tuple:
    """What the runner hands the scan and the walk of a file, from the configuration."""
    return config.mirror_attributes, config.device_attribute, scan_words(config), analysis_model(config)


def facts_of(config) -> list:
    """Every engine file's facts as the runner gathers them (its scan and its walk)."""
    model = analysis_model(config)
    found = []
    for data in SOURCES:
        found.append((scan(data, config.mirror_attributes, scan_words(config), model[2]),
                      analyze(data, config.mirror_attributes, config.device_attribute, *model)))
    return found


@pytest.mark.parametrize("name", [n for n, k in KEYS.items() if k.facts])
def test_a_key_the_facts_depend_on_changes_the_fingerprint(engine, name):
    assert changed(name, engine).analysis_fingerprint != engine.analysis_fingerprint


@pytest.mark.parametrize("name", [n for n, k in KEYS.items() if not k.facts])
def test_a_key_the_facts_do_not_depend_on_leaves_them_and_the_fingerprint_alone(engine, name):
    """Not only the fingerprint: what the walk is handed, and the facts themselves, are
    the same, so a key that the walk reads without its `facts` mark fails here (seen
    failing with the mark taken off `device-lengths`)."""
    other = changed(name, engine)
    assert other.analysis_fingerprint == engine.analysis_fingerprint
    assert walk_inputs(other) == walk_inputs(engine)
    assert facts_of(other) == facts_of(engine)


def test_the_walk_sees_each_key_the_facts_depend_on(engine):
    """The comparisons above can see a change: each marked key changes what the walk is
    handed, and all but the conditions' change the facts of this corpus too (the
    mode enum by being there at all: its name says where to read the modes' meaning,
    once the project is indexed)."""
    for name, key in KEYS.items():
        if key.facts and name != "mode-enum":
            other = changed(name, engine)
            assert walk_inputs(other) != walk_inputs(engine), name
            if name != "sync-allowed-when":
                assert facts_of(other) != facts_of(engine), name
    no_modes = dataclasses.replace(engine, mode_enum=None)
    assert walk_inputs(no_modes) != walk_inputs(engine) and facts_of(no_modes) != facts_of(engine)


def test_the_derived_views():
    assert PRESET_KEYS == {n for n, k in KEYS.items() if k.preset}
    # a preset is an engine model: it sets neither which files are read nor another preset
    assert not PRESET_KEYS & {"preset", "exclude", "extend-exclude", "include", "src", "test-paths"}
    assert OPTION_KEYS == {k.field: (n, k.option) for n, k in KEYS.items() if k.option}
    assert {option for _, option in OPTION_KEYS.values()} == {
        "--exclude", "--backend-base", "--mirror-attribute", "--device-attribute", "--flag-attribute"}
