"""The engine model's names are checked against the project (`lint.contract.model_names`):
a name the user wrote that names nothing of the project stops the run (exit 2, one line
per key, every problem at once); a preset's is a warning and clears nothing; defaults
are never checked. And conditions too deep or too large are configuration errors."""

import dataclasses
import os
import textwrap
import time
from pathlib import Path

import pytest

from seqguard.cli import main
from seqguard.config import (MAX_CONDITION_DEPTH, MAX_CONDITION_LENGTH, Condition, Config, ConfigError,
                             condition_words, config_from_table, load_config)
from seqguard.lint.runner import lint_paths, lint_source

# A tiny engine: a mode enum, an aggregator, a backend base, a batch and one read that
# only a DECODE batch reaches.
ENGINE = {
    "eng/__init__.py": "",
    "eng/modes.py": """
        import enum


        class ForwardMode(enum.IntEnum):
            EXTEND = 1
            DECODE = 2
            IDLE = 3

            def is_decode(self):
                return self == ForwardMode.DECODE
        """,
    "eng/overlap.py": """
        def decide(backends, tbo=False):
            if tbo:
                return True
            return any(getattr(b, "needs_cpu_seq_lens", True) for b in backends)
        """,
    "eng/base.py": """
        class AttentionBackend:
            needs_cpu_seq_lens: bool = True
        """,
    "eng/batch.py": """
        class Batch:
            def __init__(self, mode, lens, lens_cpu=None):
                self.forward_mode = mode
                self.seq_lens = lens
                self.extend_prefix_lens = lens
                self.seq_lens_cpu = lens_cpu
        """,
    "eng/worker.py": """
        def step(fb):
            if fb.forward_mode.is_decode():
                return fb.seq_lens_cpu.max()
            return 0
        """,
}
MODEL = """[tool.seqguard]
mode-enum = "eng.modes.ForwardMode"
aggregator = "eng.overlap.decide"
backend-bases = ["eng.base.AttentionBackend"]
skip-modes = ["DECODE"]
"""
VALID = "valid members: EXTEND, DECODE, IDLE"


def engine(tmp_path: Path, table: str = MODEL, files: dict | None = None) -> Path:
    for rel, text in {**ENGINE, **(files or {})}.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    (tmp_path / "pyproject.toml").write_text(table)
    return tmp_path


def problems_of(root: Path, *paths: str, **overrides) -> list[str]:
    """The lines of the ConfigError a lint of `paths` (default: the root) stops with."""
    with pytest.raises(ConfigError) as error:
        lint_paths([root / p for p in paths] or [root], load_config([root], overrides=overrides or None),
                   use_cache=False, jobs=1)
    return str(error.value).splitlines()


def run(root: Path, *paths: str):
    return lint_paths([root / p for p in paths] or [root], load_config([root]), use_cache=False, jobs=1)


# ---- the user's names: an error naming the file and key ------------------------------------
def test_a_skip_mode_the_enum_lacks_is_an_error_not_a_clearance(tmp_path):
    """`skip-modes = ["decode"]` used to clear the DECODE read: no mode named `decode`
    is ever possible, so none of the skip modes was."""
    root = engine(tmp_path, MODEL.replace('"DECODE"', '"decode"'))
    assert problems_of(root) == [
        f"{root}/pyproject.toml: [tool.seqguard] skip-modes: expected members of ForwardMode (eng/modes.py:5), "
        f"got 'decode' (did you mean 'DECODE'?); {VALID}"]
    fixed = engine(tmp_path)
    assert [(d.code, d.path, d.line) for d in run(fixed).diagnostics] == [("SG002", f"{root}/eng/worker.py", 4)]


def test_an_outside_mode_the_enum_lacks_is_an_error_naming_the_entry(tmp_path):
    root = engine(tmp_path, MODEL + 'present-when = ["*.a", { test = "*.b", outside-modes = ["IDLE", "WARMUP"] }]\n')
    assert problems_of(root) == [
        f"{root}/pyproject.toml: [tool.seqguard] present-when: entry 2: outside-modes: expected members of "
        f"ForwardMode (eng/modes.py:5), got 'WARMUP'; {VALID}"]


@pytest.mark.parametrize("value, expected", [
    ("eng.modes.Mode", "expected a class defined at the top level of eng/modes.py, got 'eng.modes.Mode', which it "
                       "does not define; name the enum where it is defined"),
    ("sglang.srt.model_executor.forward_batch_info.ForwardMode",
     "expected a class of this project, got 'sglang.srt.model_executor.forward_batch_info.ForwardMode': no project "
     "file is its module (its predicates are read from the engine's source); name the enum where the engine "
     "defines it, or lint from the engine's root"),
])
def test_a_mode_enum_that_names_no_class_is_an_error(tmp_path, value, expected):
    root = engine(tmp_path, MODEL.replace("eng.modes.ForwardMode", value))
    assert problems_of(root) == [f"{root}/pyproject.toml: [tool.seqguard] mode-enum: {expected}"]


def test_an_aggregator_that_names_no_function_is_an_error(tmp_path):
    root = engine(tmp_path, MODEL.replace("eng.overlap.decide", "eng.overlap.decides"))
    assert problems_of(root) == [
        f"{root}/pyproject.toml: [tool.seqguard] aggregator: expected a function or method of eng/overlap.py, got "
        f"'eng.overlap.decides', which it does not define; name the function where it is defined"]


@pytest.mark.parametrize("key, old, new, expected", [
    ("aggregator", "eng.overlap.decide", "eng.modes.ForwardMode",
     "expected a function or method of eng/modes.py, got 'eng.modes.ForwardMode', which is a class there, not a "
     "function; name the function where it is defined"),
    ("mode-enum", "eng.modes.ForwardMode", "eng.overlap.decide",
     "expected a class defined at the top level of eng/overlap.py, got 'eng.overlap.decide', which is a function "
     "there, not a class; name the enum where it is defined"),
])
def test_a_name_of_the_wrong_kind_says_what_it_is(tmp_path, key, old, new, expected):
    root = engine(tmp_path, MODEL.replace(old, new))
    assert f"{root}/pyproject.toml: [tool.seqguard] {key}: {expected}" in problems_of(root)


def test_an_aggregator_method_resolves(tmp_path):
    root = engine(tmp_path, MODEL.replace("eng.overlap.decide", "eng.overlap.Policy.decide"),
                  {"eng/overlap.py": "class Policy:\n    def decide(self, backends):\n        return True\n"})
    assert run(root).model_warnings == []


@pytest.mark.parametrize("base, expected", [
    ("eng.base.Backend", "expected a class defined in eng/base.py, got 'eng.base.Backend', which it does not "
                         "define (a re-export is not the class); name the base where it is defined"),
    ("eng.AttentionBackend", "expected a class defined in eng/__init__.py, got 'eng.AttentionBackend', which it "
                             "does not define (a re-export is not the class); name the base where it is defined"),
    ("vendor.attn.Base", "expected a class of this project, or the base of one, got 'vendor.attn.Base': no project "
                         "file is its module and no class derives from it; name the base where it is defined "
                         "(pkg.module.Class)"),
    ("AttentionBackened", "expected a class the project defines or derives from, got 'AttentionBackened', which no "
                          "class statement names; check the spelling"),
])
def test_a_backend_base_that_names_no_class_is_an_error(tmp_path, base, expected):
    root = engine(tmp_path, MODEL.replace('"eng.base.AttentionBackend"', f'"{base}"'),
                  {"eng/__init__.py": "from eng.base import AttentionBackend\n"})
    assert problems_of(root) == [f"{root}/pyproject.toml: [tool.seqguard] backend-bases: {expected}"]


def test_a_base_outside_the_project_is_fine_when_a_class_derives_from_it(tmp_path):
    """A plugin of an installed engine: the base's module is not here, its subclasses are."""
    root = engine(tmp_path, MODEL.replace("eng.base.AttentionBackend", "vendor.attn.Base"),
                  {"eng/mine.py": "from vendor.attn import Base\n\n\nclass Mine(Base):\n"
                                  "    needs_cpu_seq_lens = True\n"})
    assert run(root).model_warnings == []


def test_a_backend_base_option_is_named_as_the_option(tmp_path):
    root = engine(tmp_path)
    assert problems_of(root, backend_bases=("eng.base.AttentionBackend", "eng.base.Nope")) == [
        "--backend-base: expected a class defined in eng/base.py, got 'eng.base.Nope', which it does not define "
        "(a re-export is not the class); name the base where it is defined"]


def test_mode_attribute_and_device_lengths_must_be_named_somewhere(tmp_path):
    root = engine(tmp_path, MODEL + 'mode-attribute = "batch_mode"\n'
                                    'device-lengths = ["extend_prefix_lens", "prefix_lengths"]\n')
    assert problems_of(root) == [
        f"{root}/pyproject.toml: [tool.seqguard] mode-attribute: expected the attribute that holds a batch's "
        f"ForwardMode, got 'batch_mode', which no file of the project names; set mode-attribute",
        f"{root}/pyproject.toml: [tool.seqguard] device-lengths: expected attributes the project's code names "
        f"(`batch.extend_prefix_lens`), got 'prefix_lengths', which no file names; check the spelling"]


def test_the_default_mode_attribute_is_checked_once_an_enum_is_set(tmp_path):
    files = {"eng/batch.py": "class Batch:\n    def __init__(self, mode):\n        self.mode = mode\n",
             "eng/worker.py": "def step(fb):\n    return fb.mode\n"}
    root = engine(tmp_path, files=files)
    assert problems_of(root) == [
        f"{root}/pyproject.toml: [tool.seqguard] mode-attribute: expected the attribute that holds a batch's "
        f"ForwardMode, got 'forward_mode' (the default), which no file of the project names; set mode-attribute"]


def test_skip_modes_without_an_enum_is_an_error(tmp_path):
    root = engine(tmp_path, '[tool.seqguard]\nskip-modes = ["DECODE"]\n')
    assert problems_of(root) == [
        f"{root}/pyproject.toml: [tool.seqguard] skip-modes: expected `mode-enum` to name the enum these are members "
        f"of, got none; set mode-enum = \"pkg.module.ForwardMode\""]


def test_every_problem_is_said_at_once(tmp_path):
    table = MODEL.replace('"DECODE"', '"decode", "VERIFY"').replace("eng.overlap.decide", "eng.overlap.nope") \
        .replace("eng.base.AttentionBackend", "eng.base.Nope")
    lines = problems_of(engine(tmp_path, table))
    assert [line.split("] ", 1)[1].split(":", 1)[0] for line in lines] == ["skip-modes", "aggregator",
                                                                         "backend-bases"]
    assert "got 'decode' (did you mean 'DECODE'?), 'VERIFY';" in lines[0]


def test_a_config_built_in_code_is_the_users(tmp_path):
    root = engine(tmp_path, "[tool.seqguard]\n")
    config = Config(root=root, mode_enum="eng.modes.ForwardMode", skip_modes=("decode",))
    with pytest.raises(ConfigError, match=r"^\[tool.seqguard\] skip-modes: expected members of ForwardMode"):
        lint_paths([root], config, use_cache=False, jobs=1)


# ---- where the check looks: the whole project, whatever is linted -----------------------------
def test_linting_one_file_still_checks_against_the_whole_project(tmp_path):
    """pre-commit passes the changed files; the enum's file is not among them."""
    root = engine(tmp_path, MODEL.replace('"DECODE"', '"decode"'), {"eng/other.py": "x = 1\n"})
    assert "got 'decode'" in problems_of(root, "eng/other.py")[0]
    good = engine(tmp_path, MODEL)
    assert run(good, "eng/other.py").diagnostics == [] and run(good, "eng/other.py").model_warnings == []


def test_defaults_are_never_checked(tmp_path):
    """A project that is no engine at all, linted with the defaults: no word about the model."""
    root = engine(tmp_path, "[tool.seqguard]\n", {"eng/modes.py": "x = 1\n", "eng/base.py": "y = 2\n"})
    result = run(root)
    assert result.model_warnings == [] and all("preset" not in w for w in result.warnings)


# ---- a preset's names: a warning, and they clear nothing -----------------------------------------
SGLANG = {
    "sglang/__init__.py": "",
    "sglang/srt/layers/attention/base_attn_backend.py": """
        class AttentionBackend:
            needs_cpu_seq_lens: bool = True
        """,
    "sglang/srt/managers/overlap_utils.py": """
        def decide_needs_cpu_seq_lens(backends):
            return any(getattr(b, "needs_cpu_seq_lens", True) for b in backends)
        """,
    # an older release: no DRAFT_EXTEND_V2
    "sglang/srt/model_executor/forward_batch_info.py": """
        import enum


        class ForwardMode(enum.IntEnum):
            EXTEND = 1
            DECODE = 2
            IDLE = 3
            TARGET_VERIFY = 4

            def is_extend(self):
                return self == ForwardMode.EXTEND


        class ForwardBatch:
            def __init__(self, mode, lens):
                self.forward_mode = mode
                self.extend_prefix_lens = lens
        """,
    "sglang/srt/worker.py": """
        def step(fb):
            if fb.forward_mode.is_extend():
                return fb.seq_lens_cpu.max()
            return 0
        """,
}
OLD_RELEASE_WARNINGS = [
    "preset sglang: skip-modes: expected members of ForwardMode "
    "(sglang/srt/model_executor/forward_batch_info.py:5), got 'DRAFT_EXTEND_V2': this project lacks it (an older "
    "release?); no batch can be in a mode the enum lacks: ignored",
    "preset sglang: present-when: entry 6: outside-modes: expected members of ForwardMode "
    "(sglang/srt/model_executor/forward_batch_info.py:5), got 'DRAFT_EXTEND_V2': this project lacks it (an older "
    "release?); the entry clears nothing",
]
# (the preset's fact about the frozen-KV MTP runner says nothing here: this small release
# has no such module, and a preset describes more of the engine than one project holds)


def sglang(tmp_path: Path, table: str = '[tool.seqguard]\npreset = "sglang"\n') -> Path:
    root = tmp_path / "sg"
    for rel, text in SGLANG.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    (root / "pyproject.toml").write_text(table)
    return root


def test_a_presets_name_an_older_release_lacks_is_a_warning(tmp_path):
    result = run(sglang(tmp_path))
    assert result.model_warnings == OLD_RELEASE_WARNINGS
    assert result.warnings[:2] == OLD_RELEASE_WARNINGS
    # the EXTEND read is cleared by its mode (DECODE, TARGET_VERIFY, IDLE are the skip modes left)
    assert result.diagnostics == []


def test_the_same_name_written_by_the_user_is_an_error(tmp_path):
    root = sglang(tmp_path, '[tool.seqguard]\npreset = "sglang"\nskip-modes = ["DECODE", "DRAFT_EXTEND_V2"]\n')
    assert problems_of(root) == [
        f"{root}/pyproject.toml: [tool.seqguard] skip-modes: expected members of ForwardMode "
        f"(sglang/srt/model_executor/forward_batch_info.py:5), got 'DRAFT_EXTEND_V2'; valid members: EXTEND, "
        f"DECODE, IDLE, TARGET_VERIFY"]


def test_a_presets_skip_modes_that_all_name_nothing_clear_no_read(tmp_path):
    """Before, a skip-mode list none of whose names exist cleared every read whose path
    narrowed the mode (no skip mode was ever possible)."""
    root = sglang(tmp_path)
    config = load_config([root])
    config = dataclasses.replace(config, skip_modes=("NEWER_MODE",))
    result = lint_paths([root], config, use_cache=False, jobs=1)
    assert [(d.code, d.line) for d in result.diagnostics] == [("SG002", 4)]
    assert result.model_warnings[0].startswith("preset sglang: skip-modes: expected members of ForwardMode")


def test_a_preset_on_a_project_that_is_not_the_engine_is_one_line(tmp_path):
    """A plugin that subclasses the installed engine's base: the preset's enum and
    aggregator are not here, and that is said once."""
    root = tmp_path / "plugin"
    (root / "plug").mkdir(parents=True)
    (root / "plug" / "b.py").write_text("from sglang.srt.layers.attention.base_attn_backend import AttentionBackend\n"
                                        "\n\nclass B(AttentionBackend):\n    needs_cpu_seq_lens = True\n")
    (root / "pyproject.toml").write_text('[tool.seqguard]\npreset = "sglang"\n')
    assert run(root).model_warnings == [
        f"preset sglang: this project (root {root}) holds no module its mode-enum, aggregator name "
        "(sglang.srt.model_executor.forward_batch_info, sglang.srt.managers.overlap_utils): the preset describes "
        "the engine's own source; lint from the engine's root, or leave the preset out (nothing those names "
        "describe clears a read here)"]


# ---- the command line: lint, explain, codemod and graph alike ------------------------------------
COMMANDS = [["lint", "."], ["explain", "eng/worker.py:3"], ["codemod", "--diff", "."], ["graph", "."]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_every_command_stops_on_the_users_bad_name(tmp_path, runner, chdir, command):
    root = engine(tmp_path, MODEL.replace('"DECODE"', '"decode"'))
    chdir(root)
    result = runner.invoke(main, [command[0], "--no-cache", *command[1:]])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (f"error: {root}/pyproject.toml: [tool.seqguard] skip-modes: expected members of "
                             f"ForwardMode (eng/modes.py:5), got 'decode' (did you mean 'DECODE'?); {VALID}\n")


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_every_command_says_a_presets_missing_name_and_goes_on(tmp_path, runner, chdir, command):
    chdir(sglang(tmp_path))
    command = [c.replace("eng/worker.py", "sglang/srt/worker.py") for c in command]
    result = runner.invoke(main, [command[0], "--no-cache", *command[1:]])
    assert result.exit_code == 0, result.output
    warned = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert warned == [f"warning: {w}" for w in OLD_RELEASE_WARNINGS]
    assert "warning" not in result.stdout


def test_a_warm_run_replays_the_warnings_and_a_changed_pyproject_is_checked_again(tmp_path, runner, chdir,
                                                                                  monkeypatch):
    import seqguard.lint.runner as runner_module

    root = sglang(tmp_path)
    hour_ago = time.time() - 3600
    for path in root.rglob("*"):
        os.utime(path, (hour_ago, hour_ago))   # not racy: the result cache may answer
    chdir(root)
    first = runner.invoke(main, ["lint", "."])
    calls = []
    real_lint = runner_module._lint
    monkeypatch.setattr(runner_module, "_lint", lambda *a: calls.append(1) or real_lint(*a))
    warm = runner.invoke(main, ["lint", "."])
    assert calls == [] and warm.exit_code == first.exit_code == 0   # answered from the result cache
    assert warm.stderr == first.stderr and warm.stderr.count("warning: preset sglang:") == 2
    (root / "pyproject.toml").write_text('[tool.seqguard]\npreset = "sglang"\nskip-modes = ["DRAFT_EXTEND_V2"]\n')
    changed = runner.invoke(main, ["lint", "."])
    assert calls == [1] and changed.exit_code == 2
    assert changed.stderr.startswith(f"error: {root}/pyproject.toml: [tool.seqguard] skip-modes: expected members")


def test_an_enum_that_loses_a_member_is_checked_again(tmp_path, runner, chdir):
    root = engine(tmp_path)
    chdir(root)
    assert runner.invoke(main, ["lint", "."]).exit_code == 1
    modes = root / "eng" / "modes.py"
    modes.write_text(modes.read_text().replace("DECODE = 2", "DECODING = 2").replace(".DECODE", ".DECODING"))
    result = runner.invoke(main, ["lint", "."])
    assert result.exit_code == 2 and "got 'DECODE' (did you mean 'DECODING'?)" in result.stderr


# ---- conditions too deep or too large -----------------------------------------------------------
DEEP = [("not " * 600) + "x", "-" * 900 + "x", "x" + ".a" * 400, "x" + "[0]" * 200]


@pytest.mark.parametrize("test", DEEP, ids=["not", "minus", "attributes", "subscripts"])
@pytest.mark.parametrize("key", ["present-when", "sync-allowed-when"])
def test_a_condition_too_deep_is_one_config_error_naming_key_and_entry(test, key):
    with pytest.raises(ConfigError) as error:
        config_from_table(f'{key} = ["*.a", {{ test = "{test}", why = "w" }}]\n')
    message = str(error.value)
    assert message.startswith(f"<table>: [tool.seqguard] {key}: entry 2: expected a test ")
    assert message.endswith("; write one short test per entry") and "\n" not in message
    assert len(message) < 200   # the test itself is not echoed back


def test_the_longest_condition_cannot_nest_past_what_python_parses():
    """1,000 characters nest at most 1,000 deep; `ast.parse` gives up near 3,000."""
    with pytest.raises(ConfigError, match=r"present-when: entry 1: expected a test at most 50 levels deep, "
                                          r"got one 1001 deep"):
        config_from_table('present-when = ["' + "~" * (MAX_CONDITION_LENGTH - 1) + 'x"]\n')


def test_a_huge_condition_is_one_config_error():
    huge = " and ".join(["*.a"] * 20000)
    with pytest.raises(ConfigError) as error:
        config_from_table(f'present-when = ["{huge}"]\n')
    assert str(error.value) == (f"<table>: [tool.seqguard] present-when: entry 1: expected a test of at most "
                                f"{MAX_CONDITION_LENGTH} characters, got {len(huge)}; write one short test per entry")


def test_a_condition_at_the_limits_is_accepted():
    config = config_from_table('present-when = ["' + "not " * (MAX_CONDITION_DEPTH - 3) + '*.a"]\n')
    assert config.present_when[0].words == ("a",)


def test_a_null_byte_in_a_condition_is_a_config_error():
    with pytest.raises(ConfigError, match=r"present-when: entry 1: .* is not a Python expression"):
        config_from_table('present-when = ["*.a\\u0000"]\n')


def test_a_deep_condition_in_the_file_is_exit_2_with_one_line(tmp_path, runner, chdir):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "pyproject.toml").write_text('[tool.seqguard]\npresent-when = ["' + "not " * 5000 + 'x"]\n')
    chdir(tmp_path)
    for command in (["lint", "."], ["explain", "a.py:1"], ["codemod", "--diff", "."], ["graph", "."]):
        result = runner.invoke(main, command)
        assert result.exit_code == 2 and result.stdout == ""
        assert result.stderr == (f"error: {tmp_path}/pyproject.toml: [tool.seqguard] present-when: entry 1: expected "
                                 f"a test of at most {MAX_CONDITION_LENGTH} characters, got 20001; write one short "
                                 f"test per entry\n")


def test_a_deep_condition_built_in_code_blows_up_nowhere():
    """Only a Config built in code can hold one (loading checks them): it matches
    nothing, clears nothing and crashes nothing."""
    deep = "-" * 2000 + "x"
    assert condition_words(deep) == () and condition_words("not " * 5000 + "x") == ()
    config = Config(root=Path("."), present_when=(Condition(deep), Condition("x" + ".a" * 2000)),
                    sync_allowed_when=(Condition("not " * 5000 + "x"),))
    found = lint_source("def f(b):\n    return b.seq_lens_cpu.max()\n", config=config)
    assert [d.code for d in found] == ["SG002"]


# ---- real releases --------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("version, warnings", [
    # every name the preset gives that the check reads holds
    ("0.5.23", []),
    # before the optional mirror (0.5.13): no aggregator, and no flag for it to read
    ("0.5.12.post1", ["warning: preset sglang: aggregator: expected a function or method of "
                      "sglang/srt/managers/overlap_utils.py, got "
                      "'sglang.srt.managers.overlap_utils.decide_needs_cpu_seq_lens', which it does not define: "
                      "this project lacks it (an older release?); the features it forces clear nothing",
                      # the frozen-KV MTP draft came later: the model's fact about it is stale here
                      "warning: preset sglang: models: stale fact, entry 1 (`sglang.srt.speculative."
                      "frozen_kv_mtp_cuda_graph_runner.FrozenKVMTPCudaGraphRunner.execute`): no function, method or "
                      "class of the project is sglang.srt.speculative.frozen_kv_mtp_cuda_graph_runner."
                      "FrozenKVMTPCudaGraphRunner.execute; read the code it cites again, then update or remove the "
                      "fact (it clears nothing meanwhile)"]),
])
def test_the_sglang_preset_on_its_releases(runner, sglang_release, chdir, version, warnings):
    chdir(sglang_release(version))
    result = runner.invoke(main, ["lint", "--no-cache", "--preset", "sglang", "--output-format", "json", "."])
    assert result.exit_code == 1 and result.stdout.startswith("[")
    assert [line for line in result.stderr.splitlines() if line.startswith(("warning:", "error:"))] == warnings
