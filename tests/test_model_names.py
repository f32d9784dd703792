"""Conditions of the engine model too deep or too large are configuration errors, and
parse nowhere unbounded."""

from pathlib import Path

import pytest

from seqguard.cli import main
from seqguard.config import (MAX_CONDITION_DEPTH, MAX_CONDITION_LENGTH, Condition, Config, ConfigError,
                             condition_words, config_from_table)
from seqguard.lint.runner import lint_source


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
