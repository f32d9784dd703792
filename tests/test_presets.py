"""The bundled engine models (`src/seqguard/presets/`): each is valid, cites the engine
line behind each condition, and names what the engine's releases really hold."""

import ast
import json
import fnmatch
import re
from pathlib import Path

import pytest

from seqguard.cli import main
from seqguard.config import ConfigError, config_from_table, load_preset, preset_names

CONFIGURATION = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
CITATION = re.compile(r"\w+(/\w+)*\.py:\d+")


def test_sglang_is_bundled_and_valid():
    assert "sglang" in preset_names()
    values = load_preset("sglang")
    assert values["aggregator"] == "sglang.srt.managers.overlap_utils.decide_needs_cpu_seq_lens"
    assert set(values["skip_modes"]) == {"DECODE", "TARGET_VERIFY", "DRAFT_EXTEND_V2", "IDLE"}
    assert values["flag_attribute"] == "needs_cpu_seq_lens"
    # every condition says why it holds, with the SGLang line that makes it true
    for condition in (*values["present_when"], *values["sync_allowed_when"]):
        assert CITATION.search(condition.why), condition


def test_a_key_in_the_table_replaces_the_presets():
    config = config_from_table('preset = "sglang"\nskip-modes = ["DECODE"]\n')
    assert config.skip_modes == ("DECODE",)
    assert config.aggregator == "sglang.srt.managers.overlap_utils.decide_needs_cpu_seq_lens"


def test_the_configuration_reference_example_is_a_valid_table():
    text = CONFIGURATION.read_text(encoding="utf-8")
    block = text.split("## Every key at once", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    body = block.split("[tool.seqguard]\n", 1)[1]
    config = config_from_table(body)
    assert config.present_when[0].test == "*.spec_algorithm.is_none()"
    assert config.capture_functions == ("capture_one_*",)


@pytest.mark.parametrize("table, key", [
    ('preset = "vllm-someday"', "preset"),
    ('skip-modes = "DECODE"', "skip-modes"),
    ('present-when = ["x ==="]', "present-when"),
    ('present-when = [{ test = "a", because = "b" }]', "present-when"),
    ('aggregator = "not a name"', "aggregator"),
    ('capture-functions = ["a.b"]', "capture-functions"),
    ('present-when = [{ test = "a", outside-modes = "DECODE" }]', "present-when"),
    ('present-when = [{ test = "a", outside-modes = ["not a mode"] }]', "present-when"),
    ('test-paths = "tests"', "test-paths"),
    ('sync-allowed-when = [{ test = "a", outside-modes = ["DECODE"] }]', "sync-allowed-when"),
])
def test_a_bad_model_key_is_one_error_naming_it(table, key):
    with pytest.raises(ConfigError) as error:
        config_from_table(table)
    assert f"] {key}:" in str(error.value)


def test_an_unknown_preset_on_the_command_line_lists_the_bundled_ones(runner, project, chdir):
    chdir(project({"a.py": "x = 1\n"}))
    result = runner.invoke(main, ["lint", "--preset", "nope", "."])
    assert result.exit_code == 2
    assert result.stderr == ("error: --preset: expected a bundled preset (sglang) or the path of a TOML model file "
                             "(such as models/myengine.toml), got 'nope'\n")
    assert "Traceback" not in result.stderr


def _names_missing(tree: Path, values: dict, core_only: bool) -> list[str]:
    """The names the preset gives that `tree` (an unpacked release) does not hold."""
    def top_level(qualified: str, kind) -> bool:
        *module, name = qualified.split(".")
        path = tree.joinpath(*module).with_suffix(".py")
        return path.is_file() and any(isinstance(n, kind) and n.name == name for n in ast.parse(path.read_bytes()).body)

    missing = [b for b in values["backend_bases"] if not top_level(b, ast.ClassDef)]
    # the base declares the flag in its body, and the aggregator reads it by that name
    for base in values["backend_bases"]:
        *module, name = base.split(".")
        path = tree.joinpath(*module).with_suffix(".py")
        body = [s for n in ast.parse(path.read_bytes()).body if isinstance(n, ast.ClassDef) and n.name == name
                for s in n.body] if path.is_file() else []
        if not any(isinstance(s, ast.AnnAssign) and getattr(s.target, "id", None) == values["flag_attribute"]
                   for s in body):
            missing.append(f"{base}.{values['flag_attribute']}")
    *module, _ = values["aggregator"].split(".")
    if f'"{values["flag_attribute"]}"' not in tree.joinpath(*module).with_suffix(".py").read_text(encoding="utf-8"):
        missing.append(f"{values['aggregator']} reading {values['flag_attribute']}")
    if not top_level(values["aggregator"], ast.FunctionDef):
        missing.append(values["aggregator"])
    *module, enum = values["mode_enum"].split(".")
    members = {t.id for n in ast.parse(tree.joinpath(*module).with_suffix(".py").read_bytes()).body
               if isinstance(n, ast.ClassDef) and n.name == enum
               for a in n.body if isinstance(a, ast.Assign) for t in a.targets if isinstance(t, ast.Name)}
    missing += [m for m in values["skip_modes"] if m not in members]
    missing += [m for c in values["present_when"] for m in c.outside_modes if m not in members]
    source = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in tree.rglob("*.py"))
    if f".{values['mode_attribute']}" not in source:
        missing.append(values["mode_attribute"])
    if core_only:
        return missing
    classes = set(re.findall(r"^\s*class\s+(\w+)", source, re.M))
    functions = set(re.findall(r"^\s*(?:async\s+)?def\s+(\w+)", source, re.M))
    missing += [g for g in values["backend_classes"] if not fnmatch.filter(classes, g)]
    missing += [g for g in values["capture_functions"] if not fnmatch.filter(functions, g)]
    missing += [a for a in values["device_lengths"] if f".{a}" not in source]
    for condition in (*values["present_when"], *values["sync_allowed_when"]):
        missing += [f"{condition.test}: {w}" for w in re.findall(r"[A-Za-z_]\w*", condition.test) if w not in source]
    return missing


@pytest.mark.slow
@pytest.mark.parametrize("version, core_only", [
    # the release that made the mirror optional, and later ones: the base, the
    # aggregator, the mode enum and its skip modes hold in each
    ("0.5.13", True), ("0.5.16", True),
    # from 0.5.20 every name does (the capture helpers and the DP prefill-graph vote of
    # `present-when` are newer; on older releases they match nothing, and clear nothing)
    ("0.5.20", False), ("0.5.23", False),
])
def test_the_sglang_presets_names_hold_in_its_releases(sglang_release, version, core_only):
    assert _names_missing(sglang_release(version), load_preset("sglang"), core_only) == []


def test_the_offered_bound_is_a_sync_free_template_the_codemod_uses(project, runner, chdir):
    """The preset offers SGLang's `bs * self.max_context_len` bound for `seq_lens_sum`
    as a commented table; given with --config, it replaces the RuntimeError an opted-out
    backend gets, with no host sync, and is never below the sum."""
    preset = (Path(__file__).resolve().parent.parent / "src" / "seqguard" / "presets" / "sglang.toml").read_text()
    offered = preset.split("# Offered, not set:", 1)[1]
    table = "\n".join(line.removeprefix("#   ") for line in offered.splitlines() if line.startswith("#   "))
    assert table.startswith("[tool.seqguard]\nfallbacks = ")
    root = project({
        "sglang/srt/layers/attention/base_attn_backend.py": """
            class AttentionBackend:
                needs_cpu_seq_lens: bool = True
            """,
        "sglang/srt/layers/attention/my_backend.py": """
            from sglang.srt.layers.attention.base_attn_backend import AttentionBackend


            class MyBackend(AttentionBackend):
                needs_cpu_seq_lens = False

                def __init__(self, context_len):
                    self.max_context_len = context_len

                def kv_indices_size(self, forward_batch):
                    return max(forward_batch.seq_lens_sum, 1)
            """,
    })
    (root / "bound.toml").write_text(table + "\n")
    chdir(root)
    result = runner.invoke(main, ["codemod", "--no-cache", "--preset", "sglang", "--config", "bound.toml",
                                  "--formatter", "none", "--format", "json", "sglang"])
    assert result.exit_code == 0, result.output
    site, = json.loads(result.stdout)["files"][0]["sites"]
    assert site["fallback"] == "template" and site["host_sync"] is False
    written = (root / "sglang/srt/layers/attention/my_backend.py").read_text()
    assert "raise RuntimeError" not in written and ".item()" not in written
    assert "forward_batch.seq_lens.shape[0] * self.max_context_len" in written

    class Lens:
        shape = (3,)

    class Batch:
        seq_lens, seq_lens_cpu, seq_lens_sum = Lens(), None, None

    space: dict = {}
    exec(compile(written.replace("from sglang.srt.layers.attention.base_attn_backend import AttentionBackend",
                                 "AttentionBackend = object"), "my_backend.py", "exec"), space)
    assert space["MyBackend"](4096).kv_indices_size(Batch()) == 3 * 4096  # >= any sum of 3 lengths <= 4096


@pytest.mark.slow
def test_every_fact_of_the_sglang_preset_holds_on_three_releases(sglang_release, runner, chdir):
    # a fact (`models`) is checked on every run; here, where it is meant to hold: no
    # `stale fact` warning names it on 0.5.16, 0.5.20 or 0.5.23
    facts = load_preset("sglang")["models"]
    assert facts, "the preset states facts"
    for version in ("0.5.16", "0.5.20", "0.5.23"):
        chdir(sglang_release(version))
        # (not `-q`: it keeps warnings quiet too)
        result = runner.invoke(main, ["lint", "--no-cache", "--preset", "sglang", "--select", "SG002",
                                      "--output-format", "json", "."])
        stale = re.findall(r"stale fact, entry (\d+)", result.stderr)
        assert result.exit_code == 1 and stale == [], (version, result.stderr)
    # where the cited code is not there yet (0.5.13's frozen-KV draft does not set the
    # sum), the fact is stale: one warning, and its read stays reported
    chdir(sglang_release("0.5.13"))
    result = runner.invoke(main, ["lint", "--no-cache", "--preset", "sglang", "--select", "SG002",
                                  "--output-format", "json", "."])
    assert re.findall(r"stale fact, entry (\d+)", result.stderr) == ["1"]
