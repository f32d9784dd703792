"""Applying the rules: each target's facts through every rule, then through the rules
that read the others' findings (the unused-suppression check), as `Diagnostic`s. Judging a read can follow its callers
through the project, so files with reads to judge are spread over forked workers that
share the index the parent built."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable, Optional

from seqguard.config import Config
from seqguard.diagnostics import Diagnostic, unreadable
from seqguard.lint.analysis.source import is_suppressed
from seqguard.lint.discovery import Target
from seqguard.lint.index import ProjectIndex
from seqguard.lint.model import DeepFacts, Usage
from seqguard.lint.rule import FileContext, Finding, Rule
from seqguard.lint.rules import RULES
from seqguard.workers import can_fork, collector_paused, process_pool

if TYPE_CHECKING:
    from seqguard.lint.contract.model import Contract

_ALL_RULES = [rule() for rule in RULES]

# Below this many files with reads to judge, forking judges costs more than it saves.
POOL_MIN_JUDGED = 8


def check_files(targets: list[Target], deep: dict, failures: dict, index: ProjectIndex, contract: "Contract",
                config: Config, rules: list[Rule], jobs: int,
                meanwhile: Optional[Callable[[], None]] = None) -> list[Diagnostic]:
    """Every target's findings. The state every judgement needs is built once, before
    the fork. `meanwhile` runs in this process while forked judges work (saving the
    fact cache: the parent is idle then).

    Only the files the run analysed up front are checked: judging a read parses other
    files on demand, and checking those too would make what is reported depend on the
    order the reads were judged in."""
    deep = dict(deep)   # as gathered, before any judge parses more

    def work(target: Target) -> int:
        facts = deep.get(target.relpath)
        if facts is None or facts.error is not None:
            return 0
        pulls = sum(len(c.facts.host_pulls) for c in index.classes_in(target.relpath).values())
        return pulls + sum(1 for a in facts.accesses if not a.guarded and a.usage != Usage.GUARD)

    costs = [work(t) for t in targets]
    heavy = sorted((i for i, c in enumerate(costs) if c), key=lambda i: -costs[i])
    results: dict[int, list[Diagnostic]] = {}
    if jobs > 1 and can_fork() and len(heavy) >= POOL_MIN_JUDGED:
        contract.prepare({q for rule in rules for q in rule.QUESTIONS})
        state = (targets, deep, failures, index, contract, config, rules)
        with process_pool(min(jobs, len(heavy)), _become_judge, (state,)) as executor:
            # one file per task, dearest first: a file whose reads send the judge up
            # its callers can cost 100x its neighbour, and the count of reads cannot
            # tell which (each worker keeps what it learnt about callers across tasks)
            futures = [executor.submit(_judge_job, [i]) for i in heavy]
            if meanwhile is not None:
                meanwhile()
            for future in futures:
                results.update(future.result())
    for i, target in enumerate(targets):
        if i not in results:
            results[i] = check_file(target, deep.get(target.relpath), failures.get(target.relpath),
                                    index, contract, config, rules)
    return [d for i in range(len(targets)) for d in results[i]]


_JUDGE_STATE: Optional[tuple] = None  # in a forked judge only: what `check_files` shared with it


def _become_judge(state: tuple) -> None:
    global _JUDGE_STATE
    _JUDGE_STATE = state


def _judge_job(indices: list[int]) -> dict[int, list[Diagnostic]]:
    targets, deep, failures, index, contract, config, rules = _JUDGE_STATE
    with collector_paused():
        return {i: check_file(targets[i], deep.get(targets[i].relpath), failures.get(targets[i].relpath),
                              index, contract, config, rules) for i in indices}


def check_file(target: Target, facts: Optional[DeepFacts], failure: Optional[str], index: ProjectIndex,
               contract: "Contract", config: Config, rules: list[Rule]) -> list[Diagnostic]:
    if failure is not None:
        return [unreadable(target.display, failure)]
    if facts is None:
        return []  # scanned, and nothing in it can match a rule
    if facts.error is not None:
        line, col, message = facts.error
        return [unreadable(target.display, message, line, col)]
    suppressed = dict(facts.suppressions)
    ctx = FileContext.of(target.relpath, facts, index, contract, config)
    wanted = {rule.CODE for rule in rules}
    found, fired = [], {}
    # Every rule runs, selected or not, so a marker for a deselected code is not "unused";
    # then the rules that read what the others found.
    for rule in [r for r in _ALL_RULES if not r.READS_FINDINGS]:
        for finding in rule.check(ctx):
            fired.setdefault(finding.line, set()).add(rule.CODE)
            if rule.CODE not in wanted or not config.is_code_enabled(rule.CODE, target.relpath):
                continue
            if is_suppressed(suppressed, finding.line, rule.CODE):
                continue
            found.append(_diagnostic(target, rule, finding, config))
    readers = [r for r in _ALL_RULES if r.READS_FINDINGS
               and r.CODE in wanted and config.is_code_enabled(r.CODE, target.relpath)]
    if readers:
        ctx = dataclasses.replace(ctx, fired={line: frozenset(codes) for line, codes in fired.items()})
        found.extend(_diagnostic(target, rule, finding, config) for rule in readers for finding in rule.check(ctx))
    return found


def _diagnostic(target: Target, rule, finding: Finding, config: Optional[Config] = None) -> Diagnostic:
    return Diagnostic(target.display, finding.line, finding.col + 1, rule.CODE, rule.NAME, finding.message,
                      rule.SEVERITY, finding.scope, finding.fix if rule.FIXABLE else None,
                      tuple((target.show(step.relpath, config.root if config else None), step.line, step.col + 1,
                             step.message) for step in finding.steps), finding.detail, finding.reason,
                      None if finding.end_col is None else finding.end_col + 1)
