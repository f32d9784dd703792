"""Facts as models (issue 39): what the code cannot tell the analysis, written in the
engine model with the code it rests on, checked against that code on every run."""

import json

import pytest

from seqguard.cli import main

ENUM = ("import enum\n\n\nclass ForwardMode(enum.IntEnum):\n    EXTEND = 1\n    DECODE = 2\n    TARGET_VERIFY = 3\n\n"
        "    def is_decode(self):\n        return self == ForwardMode.DECODE\n")
# A graph runner whose gate refuses decode and verify batches in one method, and whose
# replay reads the mirror in another: nothing on replay's path says the batch is
# prefill, so only a fact about the runner can.
RUNNER = ("class PrefillGraphRunner:\n"
          "    def can_run(self, fb):\n"
          "        return fb.forward_mode == ForwardMode.EXTEND  # the gate: prefill batches only\n\n"
          "    def replay(self, fb):\n"
          "        return self.plan(fb) + fb.seq_lens_cpu.max()\n\n"
          "    def plan(self, fb):\n"
          "        return fb.seq_lens_sum + 1\n\n\n"
          "def plan_outside(fb):\n"
          "    return fb.seq_lens_sum + 1\n\n\n"
          "class Other:\n"
          "    def step(self, fb, runner):\n"
          "        plan_outside(fb)\n"
          "        return runner.replay(fb)\n")
MODEL = ('[tool.seqguard]\nmode-enum = "eng.modes.ForwardMode"\nskip-modes = ["DECODE", "TARGET_VERIFY"]\n'
         'models = [{{ about = "{about}", modes = ["EXTEND"], cites = [{cites}], '
         'why = "can_run replays only EXTEND batches (eng/runner.py:6)" }}]\n')
GATE = '"fb.forward_mode == ForwardMode.EXTEND"'


def _project(project, about="eng.runner.PrefillGraphRunner", cites=GATE, model=None):
    files = {"eng/__init__.py": "", "eng/modes.py": ENUM, "eng/runner.py": "from eng.modes import ForwardMode\n\n\n"
             + RUNNER}
    return project(files, MODEL.format(about=about, cites=cites) if model is None else model)


def _lint(runner) -> tuple[set, str]:
    """(code, line) of each finding, and the warnings (stderr less the summary line)."""
    result = runner.invoke(main, ["lint", "--no-cache", "--output-format", "json", "."])
    assert result.exit_code in (0, 1), result.stderr
    warnings = "".join(line for line in result.stderr.splitlines(keepends=True) if line.startswith("warning: "))
    return {(f["code"], f["line"]) for f in json.loads(result.stdout)}, warnings


# the reads: replay's own (line 9), plan's (line 12, called only from replay), and
# plan_outside's (line 16, called from Other.step, which no fact covers)
ALL_READS = {("SG002", 9), ("SG002", 12), ("SG002", 16)}


def test_without_the_fact_every_read_is_reported(runner, project, chdir):
    chdir(_project(project, model='[tool.seqguard]\nmode-enum = "eng.modes.ForwardMode"\n'
                                  'skip-modes = ["DECODE", "TARGET_VERIFY"]\n'))
    assert _lint(runner) == (ALL_READS, "")


def test_a_fact_about_a_class_clears_its_reads_and_the_calls_it_makes(runner, project, chdir):
    chdir(_project(project))
    found, stderr = _lint(runner)
    assert found == {("SG002", 16)} and stderr == ""   # plan_outside is called from outside the runner
    [use] = json.loads(runner.invoke(main, ["explain", "--no-cache", "--format", "json", "eng/runner.py:9"]
                                     ).stdout)[0]["uses"]
    assert (use["verdict"], use["why"]["kind"]) == ("cannot be None", "path")
    assert "`eng.runner.PrefillGraphRunner` runs only with batches in EXTEND: can_run replays only EXTEND " \
           "batches (eng/runner.py:6) (models)" in use["why"]["fact"]
    # plan is a method of the class too
    [plan] = json.loads(runner.invoke(main, ["explain", "--no-cache", "--format", "json", "eng/runner.py:12"]
                                      ).stdout)[0]["uses"]
    assert plan["why"]["kind"] == "path" and "(models)" in plan["why"]["fact"]


def test_a_fact_about_one_method_covers_that_method_only(runner, project, chdir):
    chdir(_project(project, about="eng.runner.PrefillGraphRunner.replay", cites='"self.plan(fb)"'))
    assert _lint(runner)[0] == {("SG002", 16)}   # plan is called only from replay: cleared through it
    [plan] = json.loads(runner.invoke(main, ["explain", "--no-cache", "--format", "json", "eng/runner.py:12"]
                                      ).stdout)[0]["uses"]
    assert (plan["why"]["kind"], plan["why"]["site"]["scope"]) == ("calls", "PrefillGraphRunner.replay")
    assert plan["why"]["rests_on"][0]["kind"] == "path" and "(models)" in plan["why"]["rests_on"][0]["fact"]
    chdir(_project(project, about="eng.runner.PrefillGraphRunner.plan", cites='"return fb.seq_lens_sum"'))
    assert _lint(runner)[0] == {("SG002", 9), ("SG002", 16)}


def test_a_fact_whose_cited_code_is_gone_is_stale_and_clears_nothing(runner, project, chdir):
    chdir(_project(project, cites='"fb.forward_mode.is_extend()"'))
    found, stderr = _lint(runner)
    assert found == ALL_READS
    assert stderr.count("\n") == 1 and stderr.startswith("warning: ") and "[tool.seqguard] models: stale fact, " \
        "entry 1 (`eng.runner.PrefillGraphRunner`): its code no longer has 'fb.forward_mode.is_extend()'" in stderr


def test_a_fact_about_code_that_is_gone_or_a_mode_the_enum_lacks_is_stale(runner, project, chdir):
    chdir(_project(project, about="eng.runner.DecodeGraphRunner"))
    found, stderr = _lint(runner)
    assert found == ALL_READS and "no function, method or class of the project is " \
        "eng.runner.DecodeGraphRunner" in stderr
    chdir(_project(project, model=MODEL.format(about="eng.runner.PrefillGraphRunner", cites=GATE)
                   .replace('modes = ["EXTEND"]', 'modes = ["PREFILL"]')))
    found, stderr = _lint(runner)
    assert found == ALL_READS and "PREFILL is not a member of eng.modes.ForwardMode" in stderr


def test_a_fact_may_cite_the_gate_in_its_callers_code(runner, project, chdir):
    # plan_outside's only caller tests nothing; say its caller is a gate it is not: the
    # cited code must be where the fact says it is
    caller_gate = '{ in = "eng.runner.Other.step", code = "plan_outside(fb)" }'
    chdir(_project(project, about="eng.runner.plan_outside", cites=caller_gate))
    assert _lint(runner) == ({("SG002", 9), ("SG002", 12)}, "")
    moved = '{ in = "eng.runner.Other.step", code = "if fb.forward_mode == ForwardMode.EXTEND:" }'
    chdir(_project(project, about="eng.runner.plan_outside", cites=moved))
    found, warnings = _lint(runner)
    assert found == ALL_READS and "the code of eng.runner.Other.step no longer has 'if fb.forward_mode" in warnings
    gone = '{ in = "eng.runner.Scheduler.step", code = "plan_outside(fb)" }'
    chdir(_project(project, about="eng.runner.plan_outside", cites=gone))
    found, warnings = _lint(runner)
    assert found == ALL_READS and "it cites the code of eng.runner.Scheduler.step, but no function" in warnings


def test_the_cited_code_is_matched_whatever_its_line_breaks(runner, project, chdir):
    chdir(_project(project, cites='"fb.forward_mode ==\\n    ForwardMode.EXTEND"'))
    assert _lint(runner)[0] == {("SG002", 16)}


def test_a_fact_without_the_code_it_rests_on_is_a_configuration_error(runner, project, chdir):
    chdir(_project(project, model='[tool.seqguard]\nmodels = [{ about = "eng.runner.PrefillGraphRunner", '
                                  'modes = ["EXTEND"], why = "trust me" }]\n'))
    result = runner.invoke(main, ["lint", "--no-cache", "."])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "models: entry 1: missing cites; a fact has about, modes (or present), cites, why" in result.stderr
    assert "Traceback" not in result.stderr


SYNCING = ("class AttentionBackend:\n    needs_cpu_seq_lens = True\n\n\n"
           "class PrefillBackend(AttentionBackend):\n    needs_cpu_seq_lens = False\n\n"
           "    def init_forward_metadata(self, fb):\n"
           "        assert not fb.forward_mode.is_decode()  # the only caller runs prefill\n"
           "        return fb.seq_lens.max().item()\n")


def test_a_fact_clears_a_host_pull_it_confines_to_prefill(runner, project, chdir):
    model = ('[tool.seqguard]\nbackend-bases = ["AttentionBackend"]\nmode-enum = "eng.modes.ForwardMode"\n'
             'skip-modes = ["DECODE", "TARGET_VERIFY"]\n')
    fact = ('models = [{ about = "eng.backend.PrefillBackend.init_forward_metadata", modes = ["EXTEND"], '
            'cites = ["assert not fb.forward_mode.is_decode()"], why = "verify batches never reach it (m.py:1)" }]\n')
    files = {"eng/__init__.py": "", "eng/modes.py": ENUM, "eng/backend.py": SYNCING}
    chdir(project(files, model))
    assert _lint(runner)[0] == {("SG004", 10)}
    chdir(project(files, model + fact))
    assert _lint(runner)[0] == set()


PRESENT_RUNNER = ("class DraftGraphRunner:\n"
                  "    def execute(self, fb):\n"
                  "        return fb.seq_lens_sum + fb.seq_lens_cpu.max()\n\n\n"
                  "class DraftWorker:\n"
                  "    def draft(self, fb, runner):\n"
                  "        fb.seq_lens_sum = int(fb.seq_lens.sum())\n"
                  "        return runner.execute(fb)\n")


def test_a_fact_that_the_worker_fills_in_an_attribute_clears_reads_of_it_only(runner, project, chdir):
    # the worker sets the sum before the runner reads it; the runner is also reachable,
    # for all the analysis can tell, from elsewhere, so only a fact can say so
    model = ('[tool.seqguard]\nmodels = [{ about = "eng.draft.DraftGraphRunner.execute", present = ["seq_lens_sum"], '
             'cites = [{ in = "eng.draft.DraftWorker.draft", code = "fb.seq_lens_sum = int(fb.seq_lens.sum())" }], '
             'why = "draft() sets the sum before it replays (eng/draft.py:8)" }]\n')
    files = {"eng/__init__.py": "", "eng/draft.py": PRESENT_RUNNER, "eng/other.py":
             "def replay(fb, runner):\n    return runner.execute(fb)\n"}
    chdir(project(files))
    assert _lint(runner)[0] == {("SG002", 3)}   # two reads on one line, each a finding
    found = json.loads(runner.invoke(main, ["lint", "--no-cache", "--output-format", "json", "."]).stdout)
    assert sorted(f["column"] for f in found) == [16, 34]
    chdir(project(files, model))
    found = json.loads(runner.invoke(main, ["lint", "--no-cache", "--output-format", "json", "."]).stdout)
    assert [(f["line"], f["column"]) for f in found] == [(3, 34)]   # seq_lens_cpu stays: the fact is the sum's
    [use] = [u for u in json.loads(runner.invoke(main, ["explain", "--no-cache", "--format", "json",
                                                         "eng/draft.py:3:16"]).stdout)[0]["uses"]]
    assert (use["verdict"], use["why"]["kind"], use["cleared_by"]) == ("cannot be None", "model", "a fact of the model")
    chdir(project(files, model.replace('present = ["seq_lens_sum"]', 'present = ["seq_lens"]')))
    found, warnings = _lint(runner)
    assert "seq_lens is not a mirror attribute (seq_lens_cpu, seq_lens_sum)" in warnings


def test_a_fact_about_a_module_the_project_lacks_warns_only_where_the_project_wrote_it(runner, project, chdir):
    # a model file (`--preset PATH`) describes more of an engine than one project holds;
    # a fact in the project's own table is about this project
    fact = ('models = [{ about = "absent.runner.Runner.replay", modes = ["EXTEND"], cites = ["x"], '
            'why = "absent.py:1" }]\n')
    root = _project(project, model='[tool.seqguard]\nmode-enum = "eng.modes.ForwardMode"\n'
                                   'skip-modes = ["DECODE", "TARGET_VERIFY"]\n' + fact)
    chdir(root)
    found, warnings = _lint(runner)
    assert found == ALL_READS and "no function, method or class of the project is absent.runner.Runner.replay" \
        in warnings
    (root / "pyproject.toml").write_text('[tool.seqguard]\nmode-enum = "eng.modes.ForwardMode"\n'
                                         'skip-modes = ["DECODE", "TARGET_VERIFY"]\n')
    (root / "model.toml").write_text(fact)
    result = runner.invoke(main, ["lint", "--no-cache", "--preset", "model.toml", "--output-format", "json", "."])
    assert result.exit_code == 1 and "stale fact" not in result.stderr


@pytest.mark.parametrize("runner_code, fact, cleared", [
    # a gate that is only a comment now: the fact is stale (cites match code tokens only)
    ("class PrefillGraphRunner:\n    def can_run(self, fb):\n"
     "        # was: return fb.forward_mode == ForwardMode.EXTEND\n"
     "        return True\n\n    def replay(self, fb):\n        return fb.seq_lens_cpu.max()\n",
     ['"return fb.forward_mode == ForwardMode.EXTEND"', 'modes = ["EXTEND"]', "eng.runner.PrefillGraphRunner"], False),
    # a piece of a longer token matches nothing
    ("class PrefillGraphRunner:\n    def can_run(self, fb):\n        return fb.forward_mode == ForwardMode.EXTEND\n\n"
     "    def replay(self, fb):\n        return fb.seq_lens_cpu.max()\n",
     ['"orward_mode == ForwardMode.EXTEN"', 'modes = ["EXTEND"]', "eng.runner.PrefillGraphRunner"], False),
    # a class attribute is the class's code too
    ("class PrefillGraphRunner:\n    admits = ForwardMode.EXTEND\n\n"
     "    def replay(self, fb):\n        return fb.seq_lens_cpu.max()\n\n    def mode(self, fb):\n"
     "        return fb.forward_mode\n",
     ['"admits = ForwardMode.EXTEND"', 'modes = ["EXTEND"]', "eng.runner.PrefillGraphRunner"], True),
])
def test_a_cite_is_code_where_it_is_cited(runner, project, chdir, runner_code, fact, cleared):
    cites, claim, about = fact
    model = ('[tool.seqguard]\nmode-enum = "eng.modes.ForwardMode"\nskip-modes = ["DECODE", "TARGET_VERIFY"]\n'
             f'models = [{{ about = "{about}", {claim}, cites = [{cites}], why = "eng/runner.py:2" }}]\n')
    chdir(project({"eng/__init__.py": "", "eng/modes.py": ENUM,
                   "eng/runner.py": "from eng.modes import ForwardMode\n\n\n" + runner_code}, model))
    found, warnings = _lint(runner)
    assert (not found, "stale fact" in warnings) == (cleared, not cleared)


def test_facts_about_a_class_and_its_method_hold_together(runner, project, chdir):
    # each holds, so a read there sees the modes both allow, and the attributes either keeps
    code = ("class Runner:\n    def execute(self, fb):\n        return fb.seq_lens_sum + fb.seq_lens_cpu.max()\n\n"
            "    def mode(self, fb):\n        return fb.forward_mode\n")
    facts = ('models = [{ about = "eng.runner.Runner", modes = ["EXTEND", "DECODE"], cites = ["def execute"], '
             'why = "r.py:1" }, { about = "eng.runner.Runner.execute", modes = ["EXTEND", "TARGET_VERIFY"], '
             'cites = ["return fb.seq_lens_sum"], why = "r.py:2" }]\n')
    model = '[tool.seqguard]\nmode-enum = "eng.modes.ForwardMode"\nskip-modes = ["DECODE", "TARGET_VERIFY"]\n'
    files = {"eng/__init__.py": "", "eng/modes.py": ENUM,
             "eng/runner.py": "from eng.modes import ForwardMode\n\n\n" + code}
    chdir(project(files, model + facts))
    assert _lint(runner) == (set(), "")
    present = ('models = [{ about = "eng.runner.Runner", present = ["seq_lens_cpu"], cites = ["def execute"], '
               'why = "r.py:1" }, { about = "eng.runner.Runner.execute", present = ["seq_lens_sum"], '
               'cites = ["return fb.seq_lens_sum"], why = "r.py:2" }]\n')
    chdir(project(files, model + present))
    assert _lint(runner) == (set(), "")


def test_a_fact_names_code_inside_a_module(runner, project, chdir):
    chdir(_project(project, about="execute"))
    result = runner.invoke(main, ["lint", "--no-cache", "."])
    assert result.exit_code == 2 and "about: expected a qualified name like pkg.module.Class.method, got " \
        "'execute'" in result.stderr
