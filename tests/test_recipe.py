"""The adoption recipe holds (issue 37): `--write-baseline` records what the findings
depend on, a restricted run leaves what it did not check alone, and the configuration
and baseline inputs a user can get wrong are each one clear line."""

import collections
import dataclasses
import json
import ntpath
import os
import sys
from pathlib import Path

import pytest

from seqguard.cli import main
from seqguard.config import ConfigError, config_file_problem, load_config
from seqguard.lint import baseline as baselines
from seqguard.lint.discovery import is_python_shebang

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

def test_the_recipe_with_a_model_file_records_it_and_the_next_plain_run_is_green(runner, engine_copy, chdir):
    model_file(engine_copy)
    chdir(engine_copy)
    written = lint(runner, "--preset", "models/engine.toml", "--write-baseline", "seqguard-baseline.json", ".")
    assert written.exit_code == 0, written.output
    assert written.stderr == ('seqguard: wrote 27 findings to seqguard-baseline.json; baseline = '
                              '"seqguard-baseline.json" added, preset = "models/engine.toml" added in '
                              '[tool.seqguard] of pyproject.toml\n')
    assert Path("pyproject.toml").read_text().endswith(
        '[tool.seqguard]\nbaseline = "seqguard-baseline.json"\npreset = "models/engine.toml"\n')
    plain = lint(runner, ".")
    assert plain.exit_code == 0 and plain.stdout == "", plain.output
    assert plain.stderr.rstrip().endswith("; 27 in the baseline")
    # a second recipe run changes nothing and says nothing was recorded
    again = lint(runner, "--preset", "models/engine.toml", "--write-baseline", "seqguard-baseline.json", ".")
    assert again.stderr == "seqguard: wrote 27 findings to seqguard-baseline.json\n"


OPTIONS = ["--backend-base", "engine.layers.attention.base.AttentionBackend", "--mirror-attribute", "seq_lens_cpu",
           "--mirror-attribute", "seq_lens_sum", "--device-attribute", "seq_lens",
           "--flag-attribute", "needs_cpu_seq_lens", "--exclude", "engine/multimodal/**",
           "--extend-exclude", "**/two_batch.py"]


def test_every_option_that_changes_findings_is_recorded_so_the_next_run_has_the_same_config(
        runner, engine_copy, chdir):
    model_file(engine_copy)
    (engine_copy / "pyproject.toml").write_text('[tool.seqguard]\nextend-exclude = ["**/metrics.py"]\n')
    chdir(engine_copy)
    overrides = {"backend_bases": ("engine.layers.attention.base.AttentionBackend",),
                 "mirror_attributes": ("seq_lens_cpu", "seq_lens_sum"), "device_attribute": "seq_lens",
                 "flag_attribute": "needs_cpu_seq_lens", "exclude": ("engine/multimodal/**",)}
    before = load_config([Path(".")], overrides=overrides)
    before = dataclasses.replace(before, extend_exclude=before.extend_exclude + ("**/two_batch.py",))
    written = lint(runner, *OPTIONS, "--write-baseline", "b.json", ".")
    assert written.exit_code == 0, written.output
    assert Path("pyproject.toml").read_text() == (
        '[tool.seqguard]\nextend-exclude = ["**/metrics.py", "**/two_batch.py"]\nbaseline = "b.json"\n'
        'backend-bases = ["engine.layers.attention.base.AttentionBackend"]\n'
        'mirror-attributes = ["seq_lens_cpu", "seq_lens_sum"]\ndevice-attribute = "seq_lens"\n'
        'flag-attribute = "needs_cpu_seq_lens"\nexclude = ["engine/multimodal/**"]\n')
    assert 'extend-exclude = ["**/metrics.py", "**/two_batch.py"] updated from ["**/metrics.py"]' in written.stderr
    after = load_config([Path(".")])
    assert dataclasses.replace(after, baseline=None) == before
    plain = lint(runner, ".")
    assert plain.exit_code == 0 and "stale" not in plain.stderr, plain.output


def test_a_different_value_in_the_file_is_refused_naming_key_values_and_line(runner, engine_copy, chdir):
    chdir(engine_copy)
    before = Path("pyproject.toml").read_bytes()
    result = lint(runner, "--backend-base", "AttentionBackend", "--write-baseline", "b.json", ".")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == (
        'error: pyproject.toml: [tool.seqguard] has backend-bases = ["engine.layers.attention.base.AttentionBackend"], '
        "this run's --backend-base gives backend-bases = [\"AttentionBackend\"]: the next run would read the file's "
        'and not match the baseline; write backend-bases = ["AttentionBackend"] there, or rerun without --backend-base '
        "(nothing written)\n")
    assert Path("pyproject.toml").read_bytes() == before and not Path("b.json").exists()
    same = lint(runner, "--backend-base", "engine.layers.attention.base.AttentionBackend", "--write-baseline",
                "b.json", ".")
    assert same.exit_code == 0 and "backend-bases" not in same.stderr  # the same value: unchanged


def test_a_preset_path_is_recorded_relative_to_the_root_from_any_folder(runner, engine_copy, chdir):
    model_file(engine_copy)
    chdir(engine_copy / "engine")
    written = lint(runner, "--preset", "../models/engine.toml", "--write-baseline", "b.json", ".")
    assert written.exit_code == 0, written.output
    assert Path("../pyproject.toml").read_text().endswith(
        '[tool.seqguard]\nbaseline = "engine/b.json"\npreset = "models/engine.toml"\n')
    # the same file spelled another way is the same value, not a conflict
    spelled = lint(runner, "--preset", "../models/../models/engine.toml", "--write-baseline", "b.json", ".")
    assert spelled.exit_code == 0 and "preset" not in spelled.stderr, spelled.output
    chdir(engine_copy)
    assert lint(runner, ".").exit_code == 0


# ---- item 2: a restricted run never reports or prunes what it did not check --------------------------

@pytest.mark.parametrize("options, paths, kept", [
    (["--select", "SG002"], ["."], lambda e: e["code"] != "SG002"),
    (["--ignore", "SG002"], ["."], lambda e: e["code"] == "SG002"),
    ([], ["engine/managers"], lambda e: not e["path"].startswith("engine/managers/")),
])
def test_a_restricted_run_reports_no_stale_entry_and_keeps_what_it_did_not_check(
        runner, engine_copy, chdir, options, paths, kept):
    chdir(engine_copy)
    assert lint(runner, "--write-baseline", "b.json", ".").exit_code == 0
    full = entries_of("b.json")
    assert any(kept(e) for e in full) and not all(kept(e) for e in full)
    run = lint(runner, *options, *paths)
    assert run.exit_code == 0 and "stale" not in run.stderr, run.output
    written = lint(runner, *options, "--write-baseline", "b.json", *paths)
    assert written.exit_code == 0, written.output
    assert entries_of("b.json") == full  # what it checked is as it was; what it did not, kept


def test_an_excluded_files_entries_are_neither_stale_nor_pruned(runner, engine_copy, chdir):
    """An exclusion also takes the files out of the index, so a checked file's findings
    may differ under it (which is why --write-baseline records it); the excluded
    files' own entries are not checked: never stale, always kept."""
    chdir(engine_copy)
    lint(runner, "--write-baseline", "b.json", ".")
    full = entries_of("b.json")
    excluded = [e for e in full if e["path"].startswith("engine/speculative/")]
    assert excluded
    run = lint(runner, "--extend-exclude", "engine/speculative/**", ".")
    assert "stale baseline entry: engine/speculative/" not in run.stderr, run.output
    lint(runner, "--extend-exclude", "engine/speculative/**", "--write-baseline", "b.json", ".")
    assert [e for e in entries_of("b.json") if e["path"].startswith("engine/speculative/")] == excluded


def test_select_sees_its_own_stale_entries_and_prunes_only_them(runner, engine_copy, chdir):
    chdir(engine_copy)
    lint(runner, "--write-baseline", "b.json", ".")
    full = entries_of("b.json")
    draft = Path("engine/speculative/draft.py")
    draft.write_text(draft.read_text().replace("for length in lens:", "for length in batch.seq_lens.tolist():"))
    run = lint(runner, "--select", "SG002", ".")
    assert [line for line in run.stderr.splitlines() if "stale" in line] == [
        "warning: stale baseline entry: engine/speculative/draft.py: SG002 in draft_positions: `for length in lens:` "
        "is no longer found; prune it with --write-baseline"]
    assert "stale" not in lint(runner, "--select", "SG001", ".").stderr
    lint(runner, "--select", "SG002", "--write-baseline", "b.json", ".")
    assert codes(entries_of("b.json")) == codes(full) - collections.Counter({"SG002": 1})


def test_per_file_ignores_restrict_what_is_stale_and_pruned(runner, engine_copy, chdir):
    chdir(engine_copy)
    lint(runner, "--write-baseline", "b.json", ".")
    full = entries_of("b.json")
    text = Path("pyproject.toml").read_text()
    Path("pyproject.toml").write_text(text + '\n[tool.seqguard.per-file-ignores]\n"engine/managers/*" = ["SG002"]\n')
    run = lint(runner, ".")
    assert run.exit_code == 0 and "stale" not in run.stderr, run.output
    lint(runner, "--write-baseline", "b.json", ".")
    assert entries_of("b.json") == full


# ---- item 3: bad input, each one line ------------------------------------------------------------

def test_a_baseline_outside_the_root_is_recorded_relative_to_it(runner, tmp_path, chdir):
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "a.py").write_text(READ)
    chdir(root)
    assert lint(runner, "--write-baseline", "../shared/x.json", ".").exit_code == 0
    assert (root / "pyproject.toml").read_text() == '[tool.seqguard]\nbaseline = "../shared/x.json"\n'
    assert (tmp_path / "shared" / "x.json").is_file()
    assert lint(runner, ".").exit_code == 0


def test_a_baseline_on_another_drive_is_refused_not_recorded_absolute():
    assert baselines.root_relative("C:\\proj\\b\\x.json", "C:\\proj", "--write-baseline", ntpath) == "b/x.json"
    assert baselines.root_relative("C:\\x.json", "C:\\proj", "--write-baseline", ntpath) == "../x.json"
    with pytest.raises(baselines.BaselineError) as refused:
        baselines.root_relative("D:\\x.json", "C:\\proj", "--write-baseline", ntpath)
    assert str(refused.value).startswith("--write-baseline D:\\x.json: on another drive than the project root "
                                         "C:\\proj, so [tool.seqguard] cannot name it relative to the root")


GOOD = {"path": "a.py", "code": "SG002", "scope": "f", "source": "return b.seq_lens_cpu.max()", "count": 1}


@pytest.mark.parametrize("entry, says", [
    ({**GOOD, "count": float("inf")}, 'entry 1 ("a.py"): `count`: expected a whole number of at least 1, '
                                      'got Infinity'),
    ({**GOOD, "count": 1e400}, '`count`: expected a whole number of at least 1, got Infinity'),
    ({**GOOD, "count": float("nan")}, "got NaN"),
    ({**GOOD, "count": 0}, "`count`: expected a whole number of at least 1, got 0"),
    ({**GOOD, "count": 2.0}, "got 2.0"),
    ({**GOOD, "count": "2"}, 'got "2"'),
    ({**GOOD, "count": True}, "got true"),
    ({**GOOD, "path": 5}, 'entry 1: `path`: expected a path inside the project, relative to its root, '
                          'such as "pkg/m.py", got 5'),
    ({**GOOD, "path": "/etc/a.py"}, '`path`: expected a path inside the project, relative to its root'),
    ({**GOOD, "path": "../../x.py"}, 'entry 1 ("../../x.py"): `path`: expected a path inside the project'),
    ({**GOOD, "path": "pkg/../../x.py"}, '`path`: expected a path inside the project'),
    ({**GOOD, "code": "E501"}, 'entry 1 ("a.py"): `code`: expected a rule code such as "SG002", got "E501"'),
    ({**GOOD, "scope": None}, "`scope`: expected a string, got null"),
    ({k: v for k, v in GOOD.items() if k != "source"}, "`source`: expected a string, got nothing"),
    ({**GOOD, "detail": 3}, "`detail`: expected a string, got 3"),
    ("a.py", 'entry 1: expected an object with path, code, scope and source, got "a.py"'),
])
def test_a_bad_baseline_entry_is_one_error_naming_file_entry_and_field(runner, tmp_path, chdir, entry, says):
    (tmp_path / "pyproject.toml").write_text('[tool.seqguard]\nbaseline = "b.json"\n')
    (tmp_path / "a.py").write_text(READ)
    (tmp_path / "b.json").write_text(json.dumps({"version": 2, "findings": [entry]}))
    chdir(tmp_path)
    for args in ([], ["--write-baseline", "b.json"]):
        result = lint(runner, *args, ".")
        assert result.exit_code == 2 and result.stdout == "" and result.stderr.count("\n") == 1, result.output
        named = str(tmp_path / "b.json") if not args else "b.json"  # from the file: absolute; as given
        assert result.stderr.startswith(f"error: {named}: ") and says in result.stderr
        assert result.stderr.endswith("; fix the entry or regenerate the baseline with --write-baseline\n")


@pytest.mark.parametrize("field", ["count", "version"])
def test_a_number_of_thousands_of_digits_is_one_error_not_an_internal_one(runner, tmp_path, chdir, field):
    # Python refuses int() of more than 4,300 digits: the read must not stop there
    digits = "1" + "0" * 5000
    entry = json.dumps(GOOD).replace('"count": 1', f'"count": {digits}' if field == "count" else '"count": 1')
    version = digits if field == "version" else "2"
    (tmp_path / "pyproject.toml").write_text('[tool.seqguard]\nbaseline = "b.json"\n')
    (tmp_path / "a.py").write_text(READ)
    (tmp_path / "b.json").write_text(f'{{"version": {version}, "findings": [{entry}]}}')
    chdir(tmp_path)
    result = lint(runner, ".")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "internal error" not in result.stderr
    says = ('entry 1 ("a.py"): `count`: expected a whole number of at least 1, got 1000'
            if field == "count" else "expected a seqguard baseline")
    assert says in result.stderr and len(result.stderr) < 400, result.stderr


def test_a_huge_count_is_kept_without_spelling_it_out(runner, tmp_path, chdir):
    (tmp_path / "pyproject.toml").write_text('[tool.seqguard]\nbaseline = "b.json"\n')
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.json").write_text(json.dumps({"version": 2, "findings": [{**GOOD, "path": "gone.py",
                                                                              "count": 10 ** 18}]}))
    chdir(tmp_path)
    assert lint(runner, "--write-baseline", "b.json", "a.py").exit_code == 0  # gone.py was not checked: kept
    assert entries_of(tmp_path / "b.json")[0]["count"] == 10 ** 18


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


def test_a_relative_cache_dir_is_not_used_and_says_so(runner, tmp_path, chdir, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.seqguard]\n")
    (tmp_path / "a.py").write_text(READ)
    chdir(tmp_path)
    monkeypatch.setenv("SEQGUARD_CACHE_DIR", "my-cache")
    warning = ("warning: SEQGUARD_CACHE_DIR=my-cache: expected an absolute path, got a relative one (it would put "
               "the cache inside the folder seqguard runs in); running without the cache: set it to an absolute "
               "path\n")
    for command in (["lint", "."], ["codemod", "--diff", "."], ["graph", "."], ["explain", "a.py:2"]):
        result = runner.invoke(main, command)
        assert result.exit_code in (0, 1) and result.stderr.startswith(warning), (command, result.output)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py", "pyproject.toml"]
    quiet = runner.invoke(main, ["lint", "-q", "."])
    assert "SEQGUARD_CACHE_DIR" not in quiet.stderr
    assert runner.invoke(main, ["lint", "--no-cache", "."]).stderr.count("SEQGUARD_CACHE_DIR") == 0


def test_a_pyproject_linked_outside_the_project_is_refused_and_nothing_written(runner, tmp_path, chdir):
    shared = tmp_path / "shared" / "pyproject.toml"
    shared.parent.mkdir()
    shared.write_text("[tool.seqguard]\n")
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "a.py").write_text(READ)
    (root / "pyproject.toml").symlink_to(shared)
    chdir(root)
    result = lint(runner, "--write-baseline", "b.json", ".")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
    assert result.stderr == (f"error: {root / 'pyproject.toml'}: a symlink to {shared}, outside the project {root}; "
                             "not followed, edit the target yourself; add baseline = \"b.json\" under its "
                             "[tool.seqguard] yourself (nothing written)\n")
    assert shared.read_text() == "[tool.seqguard]\n" and not (root / "b.json").exists()


@pytest.mark.parametrize("target", ["missing.toml", "folder"])
def test_a_pyproject_link_to_nothing_readable_is_one_error_not_settings_skipped(runner, tmp_path, chdir, target):
    # the settings a broken link hides (a preset, a baseline) would change every finding
    (tmp_path / "proj" / "folder").mkdir(parents=True)
    (tmp_path / "proj" / "a.py").write_text(READ)
    (tmp_path / "pyproject.toml").write_text("[tool.seqguard]\nselect = [\"SG001\"]\n")  # not the project's
    (tmp_path / "proj" / "pyproject.toml").symlink_to(target)
    chdir(tmp_path / "proj")
    result = lint(runner, ".")
    assert result.exit_code == 2 and result.stdout == "" and result.stderr == (
        f"error: {tmp_path / 'proj' / 'pyproject.toml'}: a symlink to {target}, which is not a file seqguard can "
        "read; the project's settings are there: fix the link or remove it\n")


def test_a_pyproject_linked_inside_the_project_is_edited_through_the_link(runner, tmp_path, chdir):
    (tmp_path / ".git").mkdir()
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "pyproject.toml").write_text("[tool.seqguard]\n")
    (tmp_path / "pyproject.toml").symlink_to("config/pyproject.toml")
    (tmp_path / "a.py").write_text(READ)
    chdir(tmp_path)
    assert lint(runner, "--write-baseline", "b.json", ".").exit_code == 0
    assert (tmp_path / "pyproject.toml").is_symlink()
    assert (tmp_path / "config" / "pyproject.toml").read_text() == '[tool.seqguard]\nbaseline = "b.json"\n'


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
    result = lint(runner, "--config", shared, "--output-format", "json", ".")
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
    result = lint(runner, "--output-format", "json", ".")
    chdir(engine_copy)
    reference = lint(runner, "--preset", "models/engine.toml", "--output-format", "json", "engine/managers")
    assert result.exit_code == reference.exit_code == 1
    assert [(f["code"], f["line"]) for f in json.loads(result.stdout)] == \
        [(f["code"], f["line"]) for f in json.loads(reference.stdout)]
    # the model file's values are the fixture's own table's
    (engine_copy / "pyproject.toml").write_text("[tool.seqguard]\n" + (engine_copy / "models" / "engine.toml")
                                               .read_text())
    same = lint(runner, "--output-format", "json", "engine/managers")
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

@pytest.mark.parametrize("line, python", [
    (b"#!/usr/bin/env python3", True), (b"#!/usr/bin/python3.11", True), (b"#!/usr/bin/env python3 -u", True),
    (b"#!/usr/bin/env -S python -X dev", True), (b"#! /usr/local/bin/python", True), (b"#!python2.7", True),
    (b"#!/bin/sh", False), (b"#!/usr/bin/env bash", False), (b"#!/usr/bin/env pythonista", False),
    (b"# python3", False), (b"", False), (b"#!", False), (b"#!/usr/bin/env", False),
])
def test_a_python_shebang_is_read_as_identify_reads_it(line, python):
    assert is_python_shebang(line) is python


def test_files_named_that_are_not_python_are_skipped_with_one_warning_each(runner, tmp_path, chdir):
    (tmp_path / "pyproject.toml").write_text("[tool.seqguard]\n")
    (tmp_path / "METADATA").write_text("Metadata-Version: 2.1\nName: x\n")
    (tmp_path / "notes.txt").write_text("x = 1\n")
    (tmp_path / "script").write_text("#!/usr/bin/env python3\n" + READ)
    (tmp_path / "stub.pyi").write_text("def f(b) -> int: ...\n")
    chdir(tmp_path)
    result = lint(runner, "--output-format", "json", "METADATA", "pyproject.toml", "notes.txt", "script", "stub.pyi")
    assert [(f["path"], f["code"]) for f in json.loads(result.stdout)] == [("script", "SG002")]
    warned = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warned == [f"warning: {name}: not checked: not a Python file (its name does not end in .py or .pyi, and it "
                      "has no python shebang)" for name in ("METADATA", "pyproject.toml", "notes.txt")]
    assert "2 files checked" in result.stderr
    for command in (["codemod", "--diff"], ["graph"]):
        other = runner.invoke(main, [*command, "--no-cache", "METADATA", "script"])
        assert other.stderr.count("METADATA: not checked: not a Python file") == 1, (command, other.output)
    explained = runner.invoke(main, ["explain", "--no-cache", "METADATA:1", "script:3"])
    assert explained.exit_code == 2 and "script:3:12: `b.seq_lens_cpu` (read): may be None" in explained.stdout
    assert explained.stderr == ("error: METADATA: not a Python file (its name does not end in .py or .pyi, and it "
                                "has no python shebang); nothing to explain\n")


def test_a_buffer_named_without_a_python_suffix_is_still_linted(runner, tmp_path, chdir):
    (tmp_path / "pyproject.toml").write_text("[tool.seqguard]\n")
    (tmp_path / "notes").write_text("x = 1\n")
    chdir(tmp_path)
    result = runner.invoke(main, ["lint", "--no-cache", "-", "--stdin-filename", "notes"], input=READ)
    assert result.exit_code == 1 and "notes:2:12: SG002" in result.stdout and "warning:" not in result.stderr
