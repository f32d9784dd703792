"""Every rule's own good and bad examples, as one parametrised test."""

from textwrap import dedent

import pytest

from seqguard.config import config_from_table
from seqguard.lint.cst_edits import insert_statements
from seqguard.lint.rule import Valid
from seqguard.lint.rules import RULES
from seqguard.lint.runner import lint_source, source_context

CASES = [
    pytest.param(rule, case, id=f"{rule.CODE}-{kind}-{i}")
    for rule in RULES
    for kind, cases in (("valid", rule.VALID), ("invalid", rule.INVALID))
    for i, case in enumerate(cases)
]


@pytest.mark.parametrize("rule, case", CASES)
def test_rule_examples(rule, case):
    config = config_from_table(dedent(case.model)) if case.model else None
    found = lint_source(dedent(case.code), rules=[rule], config=config)
    assert [d.line for d in found] == ([] if isinstance(case, Valid) else [case.line])
    assert all(d.code == rule.CODE and d.name == rule.NAME for d in found)


FIXABLE = [
    pytest.param(rule, case, id=f"{rule.CODE}-fix-{i}")
    for rule in RULES if rule.FIXABLE
    for i, case in enumerate(rule.INVALID) if case.fixed is not None
]


@pytest.mark.parametrize("rule, case", FIXABLE)
def test_fix_examples(rule, case):
    config = config_from_table(dedent(case.model)) if case.model else None
    fixes = [f.fix for f in rule().check(source_context(case.code, config)) if f.fix]
    fixed = insert_statements(case.code.encode(), fixes).decode()
    assert fixed == case.fixed
    assert lint_source(fixed, rules=[rule], config=config) == []


def test_every_rule_is_documented_and_has_examples():
    codes = [r.CODE for r in RULES]
    assert codes == sorted(codes) and len(set(codes)) == len(codes)
    for rule in RULES:
        doc = rule.describe()
        assert "Why" in doc and "Fix" in doc, rule.CODE
        assert rule.VALID and rule.INVALID, rule.CODE
        assert rule.NAME == rule.NAME.lower() and " " not in rule.NAME
        assert not rule.NAME.startswith(("no-", "use-"))


def test_each_rule_s_class_and_module_are_named_after_the_rule():
    """One name per rule: `assert-mirror-not-none` lives in `assert_mirror_not_none.py`
    as `AssertMirrorNotNone`, so finding a code's source needs no lookup table."""
    for rule in RULES:
        words = rule.NAME.split("-")
        assert rule.__name__ == "".join(w.capitalize() for w in words), rule.CODE
        assert rule.__module__ == f"seqguard.lint.rules.{'_'.join(words)}", rule.CODE


def test_a_rule_that_reads_findings_gets_every_other_rule_s_and_no_marker_silences_it(monkeypatch):
    """The checker's hook for a rule about findings (SG007's): it runs after the others,
    with what each found on each line, deselected and suppressed ones included; nothing
    in the checker names SG007."""
    from seqguard.lint import checking
    from seqguard.lint.rule import Finding, Rule
    from seqguard.lint.rules import MirrorTruthiness, UnguardedMirrorRead

    seen = []

    class CountFindings(Rule):
        CODE, NAME, MESSAGE = "SG007", "count-findings", "{codes}"
        READS_FINDINGS = True

        def check(self, ctx):
            seen.append(dict(ctx.fired))
            for line, codes in sorted(ctx.fired.items()):
                yield Finding(line, 0, self.MESSAGE.format(codes=",".join(sorted(codes))))

    monkeypatch.setattr(checking, "_ALL_RULES", [CountFindings(), UnguardedMirrorRead(), MirrorTruthiness()])
    code = ("def f(b):\n"
            "    return b.seq_lens_cpu.max()  # seqguard: ignore\n"
            "def g(b):\n"
            "    return 1 if b.seq_lens_cpu else 0\n")
    found = lint_source(code, rules=[CountFindings, MirrorTruthiness])
    assert seen == [{2: {"SG002"}, 4: {"SG005"}}]
    assert sorted((d.line, d.code, d.message if d.code == "SG007" else "") for d in found) == [
        (2, "SG007", "SG002"), (4, "SG005", ""), (4, "SG007", "SG005")]


def test_every_rule_says_what_its_findings_are_about():
    # explain shows a finding beside the use, pull, class or marker its rule judges
    from seqguard.lint.rule import Subject
    assert {rule.CODE: rule.SUBJECT for rule in RULES} == {
        "SG001": Subject.CLASS, "SG002": Subject.USE, "SG003": Subject.USE, "SG004": Subject.PULL,
        "SG005": Subject.USE, "SG006": Subject.CLASS, "SG007": Subject.MARKER, "SG008": Subject.CLASS,
        "SG009": Subject.USE, "SG010": Subject.USE}
