"""The documentation the code holds (issue 37, item 6): the rule pages, the
configuration reference and the two JSON schemas are generated (scripts/generate_docs.py)
and fail here when stale; the schemas accept what seqguard accepts and reject what its
validators reject; the README stays short and every relative link in the docs resolves."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import jsonschema
import pytest

from seqguard.cli import main
from seqguard.config import KEYS, ConfigError, config_from_table, is_preset_path, preset_names
from seqguard.diagnostics import JSON_FIELDS, Diagnostic, Severity

REPO = Path(__file__).resolve().parent.parent
if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def generator():
    spec = importlib.util.spec_from_file_location("generate_docs", REPO / "scripts" / "generate_docs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gen():
    return generator()


def schema(path: str) -> jsonschema.Draft7Validator:
    document = json.loads((REPO / path).read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(document)
    return jsonschema.Draft7Validator(document)


# ---------------------------------------------------------------- generated files

def test_every_generated_page_and_schema_is_up_to_date(gen, capsys):
    """CI fails here when a rule, a key or an output field changed without
    `python scripts/generate_docs.py`."""
    assert gen.stale() == []
    assert gen.main(["--check"]) == 0
    assert capsys.readouterr().out.startswith("up to date: ")


def test_check_names_a_stale_page_and_a_page_of_no_code(gen, tmp_path, capsys):
    for path, text in gen.generated().items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    assert gen.stale(tmp_path) == []
    page = tmp_path / "docs/rules/SG002.md"
    page.write_text(page.read_text() + "hand edit\n")
    (tmp_path / "docs/rules/SG999.md").write_text("# gone\n")
    (tmp_path / "seqguard.schema.json").unlink()
    assert gen.stale(tmp_path) == ["docs/rules/SG002.md", "seqguard.schema.json",
                                   "docs/rules/SG999.md (no such code)"]
    assert sorted(gen.write(tmp_path)) == ["docs/rules/SG002.md", "docs/rules/SG999.md (removed)",
                                           "seqguard.schema.json"]
    assert gen.stale(tmp_path) == []


def test_a_rule_page_has_rufs_sections_in_order(gen):
    page = (REPO / "docs/rules/SG002.md").read_text()
    assert page.startswith("# SG002 unguarded-mirror-read\n")
    headings = re.findall(r"^## (.+)$", page, flags=re.M)
    assert headings == ["What it does", "Why is this bad?", "Example", "Fix", "Fix availability", "Options",
                        "Examples"]
    assert "Use instead:" in page
    # every example of the rule is on its page, each as its test lints it
    from seqguard.lint.rules import RULES_BY_CODE
    rule = RULES_BY_CODE["SG002"]
    assert page.count("### Flagged (") == len(rule.INVALID) and page.count("### Not flagged (") == len(rule.VALID)
    fixable = (REPO / "docs/rules/SG001.md").read_text()
    assert "Use instead (what `--fix` writes):" in fixable and "needs_cpu_seq_lens = True" in fixable


def test_a_docstring_without_why_or_naming_no_key_is_refused(gen):
    with pytest.raises(SystemExit, match="SG900: its docstring needs .* `Why:` and `Fix:`"):
        gen.sections("SG900", "Flags x.\n\nFix: y.")
    with pytest.raises(SystemExit, match="SG900: `Options:` names skip-mode, not a"):
        gen.option_names("SG900", "`skip-modes`, `skip-mode`")
    assert gen.sections("SG900", "Flags x.\n\nMore.\n\nWhy: a.\n\nFix: b.\n\nOptions: `src`.") == {
        "what": "Flags x.\n\nMore.", "why": "A.", "fix": "B.", "options": "`src`."}


def test_the_preset_values_beside_the_keys_carry_their_citations(gen):
    entries = gen.preset_entries("sglang")
    assert entries["aggregator"][0] == "sglang.srt.managers.overlap_utils.decide_needs_cpu_seq_lens"
    assert "managers/overlap_utils.py:39-46" in entries["aggregator"][1]
    # written right under mode-enum: its comment covers both
    assert entries["mode-attribute"][1] == entries["mode-enum"][1]
    # a key after a blank line does not borrow the comment of the key above
    assert entries["present-when"][1] == ""
    page = (REPO / "docs/configuration.md").read_text()
    assert "(managers/overlap_utils.py:594-600)" in page  # a present-when entry's own `why`


# ---------------------------------------------------------------- the [tool.seqguard] schema

def tables() -> dict[str, dict]:
    """The [tool.seqguard] tables the schema must accept: this repository's, the example
    engine's, the bundled preset's keys, the reference's example of every key."""
    found = {}
    for name in ("pyproject.toml", "fixtures/engine/pyproject.toml"):
        found[name] = tomllib.loads((REPO / name).read_text())["tool"]["seqguard"]
    found["preset sglang"] = tomllib.loads((REPO / "src/seqguard/presets/sglang.toml").read_text())
    page = (REPO / "docs/configuration.md").read_text()
    block = page.split("## Every key at once", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    found["every key"] = tomllib.loads(block)["tool"]["seqguard"]
    for name, key in KEYS.items():
        found[f"example of {name}"] = tomllib.loads(f"{name} = {key.example}")
    return found


@pytest.mark.parametrize("name", list(tables()))
def test_the_schema_accepts_what_seqguard_accepts(name, gen):
    table = tables()[name]
    config_from_table(_toml(gen, table))  # seqguard takes it
    assert list(schema("seqguard.schema.json").iter_errors(table)) == []


@pytest.mark.parametrize("value, accepted", [
    ("sglang", True), ("models/fork.toml", True), ("fork.toml", True), ("..\\models\\fork", True),
    ("vllm-someday", False), ("fork.tomlx", False)])
def test_the_schema_takes_a_preset_as_seqguard_does_a_bundled_name_or_a_model_file(value, accepted):
    assert (value in preset_names() or is_preset_path(value)) == accepted
    assert (list(schema("seqguard.schema.json").iter_errors({"preset": value})) == []) == accepted


def test_the_every_key_example_sets_every_key(gen):
    table = tables()["every key"]
    assert list(table) == list(KEYS)
    config = config_from_table(_toml(gen, table))
    assert config.present_when[0].test == "*.spec_algorithm.is_none()"
    assert config.capture_functions == ("capture_one_*",)


BAD = [
    'select = ["SG9"]', 'select = ["E501"]', 'ignore = ["SG011"]', 'select = "SG002"',
    'per-file-ignores = { "x/*" = ["E501"] }', 'per-file-ignores = ["x"]',
    'baseline = ""', 'baseline = 3',
    'src = ["/abs"]', 'src = ["../up"]', 'src = ["a/../b"]', 'include = "x"', 'exclude = [1]',
    'max-file-size = 0', 'max-file-size = true', 'max-file-size = 4294967297', 'max-file-size = "4M"',
    'fallbacks = { seq_lens_sum = "no placeholder" }', 'fallbacks = { "not a name" = "{obj}.x" }',
    'fallbacks = { seq_lens_sum = 3 }', 'formatter = "yapf"',
    'preset = "vllm-someday"', 'backend-bases = ["a.b c"]', 'backend-classes = ["a-b"]',
    'flag-attribute = "not one"', 'mirror-attributes = ["seq_lens_cpu", "1x"]', 'device-attribute = 5',
    'aggregator = "not a name"', 'mode-enum = "a..b"', 'mode-attribute = ["forward_mode"]',
    'skip-modes = "DECODE"', 'skip-modes = ["not a mode"]',
    'present-when = [{ test = "a", because = "b" }]', 'present-when = [{ why = "b" }]',
    'present-when = [{ test = "a", outside-modes = "DECODE" }]',
    'present-when = [{ test = "a", outside-modes = ["not a mode"] }]', 'present-when = [3]',
    'sync-allowed-when = [{ test = "a", outside-modes = ["DECODE"] }]',
    'device-lengths = ["a.b"]', 'capture-functions = ["a.b"]', 'test-paths = "tests"',
    'no-such-key = 1',
]


@pytest.mark.parametrize("line", BAD)
def test_the_schema_rejects_what_the_validators_reject(line):
    with pytest.raises(ConfigError):
        config_from_table(line)
    assert list(schema("seqguard.schema.json").iter_errors(tomllib.loads(line))) != []


def test_an_editor_association_checks_the_table_inside_a_whole_pyproject():
    validator = schema("docs/schemas/pyproject.schema.json")
    for name in ("pyproject.toml", "fixtures/engine/pyproject.toml"):
        assert list(validator.iter_errors(tomllib.loads((REPO / name).read_text()))) == []
    bad = tomllib.loads('[project]\nname = "x"\n[tool.seqguard]\nformatter = "yapf"\n')
    assert [e.json_path for e in validator.iter_errors(bad)] == ["$.tool.seqguard.formatter"]


def _toml(gen, table: dict) -> str:
    """A table back as TOML text (the generator's writer), for config_from_table."""
    return "\n".join(f"{k} = {gen.toml_value(v)}" for k, v in table.items()) + "\n"


# ---------------------------------------------------------------- the lint output schema

def test_lint_json_on_the_example_engine_validates_against_the_output_schema(runner, chdir):
    chdir(REPO)
    result = runner.invoke(main, ["lint", "--no-cache", "--output-format", "json", "fixtures/engine"])
    assert result.exit_code == 1
    findings = json.loads(result.stdout)
    assert len(findings) > 20 and {f["code"] for f in findings} >= {"SG001", "SG002", "SG003", "SG004"}
    assert any(f["fixable"] for f in findings) and {f["severity"] for f in findings} == {"error", "warning", "info"}
    assert list(schema("docs/schemas/lint-output.schema.json").iter_errors(findings)) == []


def test_as_json_writes_exactly_the_documented_fields():
    d = Diagnostic("a.py", 3, 5, "SG002", "unguarded-mirror-read", "m", Severity.WARNING, fix=(1, "x = 1"),
                   reason="r")
    assert d.as_json() == {"path": "a.py", "line": 3, "column": 5, "code": "SG002", "name": "unguarded-mirror-read",
                           "message": "m", "reason": "r", "severity": "warning", "fixable": True}
    assert list(d.as_json()) == [f.name for f in JSON_FIELDS]
    output = schema("docs/schemas/lint-output.schema.json")
    assert list(output.iter_errors([d.as_json()])) == []
    assert list(output.iter_errors([{**d.as_json(), "extra": 1}])) != []  # a new field goes through JSON_FIELDS


# ---------------------------------------------------------------- the README and links

def test_the_readme_is_short_and_points_at_every_guide():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for page in ("adoption", "lint", "codemod", "runtime", "engine-model"):
        assert f"](docs/guides/{page}.md)" in readme
    for page in ("docs/rules/index.md", "docs/configuration.md", "docs/architecture.md", "docs/history.md",
                 "BENCHMARKS.md", "CHANGELOG.md", "seqguard.schema.json"):
        assert f"]({page})" in readme


def test_the_engine_model_guide_quotes_the_example_engines_model_as_it_is():
    guide = (REPO / "docs/guides/engine-model.md").read_text()
    block = guide.split("## Writing a model for a fork or another engine", 1)[1].split("```toml\n", 1)[1]
    quoted = tomllib.loads(block.split("```", 1)[0])["tool"]["seqguard"]
    assert quoted == tomllib.loads((REPO / "fixtures/engine/pyproject.toml").read_text())["tool"]["seqguard"]


def markdown_files() -> list[Path]:
    return [REPO / "README.md", REPO / "BENCHMARKS.md", REPO / "CHANGELOG.md",
            *sorted((REPO / "docs").rglob("*.md"))]


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens,
    a repeated heading numbered."""
    seen: dict[str, int] = {}
    found = set()
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S)
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def test_every_relative_link_in_the_docs_resolves():
    checked = 0
    for page in markdown_files():
        text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
        text = re.sub(r"`[^`\n]*`", "", text)  # code spans: `x[i](fb)` is no link
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            resolved = (page.parent / file).resolve() if file else page
            assert resolved.exists(), f"{page.relative_to(REPO)}: {target}"
            if anchor and resolved.suffix == ".md":
                assert anchor in anchors(resolved), f"{page.relative_to(REPO)}: {target}"
            checked += 1
    assert checked > 50


# ---------------------------------------------------------------- the reason-tree schema

def test_every_reason_tree_explain_writes_on_the_example_engine_validates_against_its_schema(runner, chdir):
    chdir(REPO)
    facts = runner.invoke(main, ["lint", "--no-cache", "--output-format", "json", "fixtures/engine"])
    locations = sorted({f"{f['path']}:{f['line']}" for f in json.loads(facts.stdout)})
    result = runner.invoke(main, ["explain", "--no-cache", "--format", "json", *locations])
    uses = [u for document in json.loads(result.stdout) for u in document["uses"]]
    trees = [u[key] for u in uses for key in ("why", "callers") if u[key] is not None]
    assert len(trees) >= 5 and {t["holds"] for t in trees} == {True, False}
    tree_schema = schema("docs/schemas/reason-tree.schema.json")
    assert [list(tree_schema.iter_errors(t)) for t in trees] == [[] for _ in trees]
    assert list(tree_schema.iter_errors({"kind": "calls", "holds": True, "rests_on": [{"kind": "nope"}]})) != []
    # each kind's fields: a `calls` node names its first call, a leaf its fact
    complete = {"kind": "calls", "holds": True, "function": "f", "calls": 1, "question": "q",
                "site": {"path": "m.py", "line": 3, "scope": "g"}, "rests_on": [{"kind": "path", "holds": True,
                                                                               "fact": "x"}]}
    assert list(tree_schema.iter_errors(complete)) == []
    assert list(tree_schema.iter_errors({k: v for k, v in complete.items() if k != "site"})) != []
    assert list(tree_schema.iter_errors({"kind": "path", "holds": True})) != []
