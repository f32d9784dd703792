"""`seqguard explain PATH:LINE`: why a line is reported or not, as a user calls it, on
the example engine (its pyproject.toml holds its engine model)."""

import json
import shutil

import pytest

from seqguard.cli import main
from conftest import ENGINE


@pytest.fixture
def engine(tmp_path, chdir):
    tree = tmp_path / "engine"
    shutil.copytree(ENGINE, tree)
    chdir(tree)
    return tree


def test_a_reported_read_gives_the_store_and_the_read(runner, engine):
    # engine/managers/schedule_batch.py:44 `self.seq_lens_cpu.add_(1)`; from_reqs stores
    # `lens.clone() if with_mirror else None` at line 38
    result = runner.invoke(main, ["explain", "engine/managers/schedule_batch.py:44"])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "engine/managers/schedule_batch.py:44:9: `self.seq_lens_cpu` (read): may be None  [SG002]"
    assert "set to None at engine/managers/schedule_batch.py:38" in lines[1]
    assert "1. engine/managers/schedule_batch.py:38:" in lines[2]
    assert lines[3].strip().startswith("2. engine/managers/schedule_batch.py:44:9:")
    # nothing in the example engine calls prepare_for_decode: judged on its own
    assert lines[4] == ("    not cleared by its callers: no call of `prepare_for_decode` is found in the project, "
                        "so it is judged on its own") and len(lines) == 5


def test_a_cleared_read_says_what_cleared_it(runner, engine):
    # engine/model_executor/cuda_graph_runner.py:29 reads the runner's own buffer, built
    # by SimpleNamespace(seq_lens_cpu=torch.full(...)) at line 13: never None, but
    # refilled only while the mirror is there (SG010, not SG002)
    result = runner.invoke(main, ["explain", "--format", "json", "engine/model_executor/cuda_graph_runner.py:29"])
    assert result.exit_code == 0, result.stderr
    [document] = json.loads(result.stdout)
    [use] = document["uses"]
    assert (use["subject"], use["verdict"], use["cleared_by"], use["codes"]) == (
        "self.buffers.seq_lens_cpu", "cannot be None", "its object's type", ["SG010"])
    # a leaf of the engine model: the object's type, whose stores are all tensors
    assert (use["why"]["kind"], use["why"]["holds"]) == ("type", True) and "rests_on" not in use["why"]
    assert use["reason"] == use["why"]["fact"]
    assert "SimpleNamespace built at engine/model_executor/cuda_graph_runner.py:13" in use["why"]["fact"]


def test_a_line_without_a_mirror_use_says_so(runner, engine):
    result = runner.invoke(main, ["explain", "engine/managers/overlap.py:1"])
    assert result.exit_code == 0
    assert result.stdout == ("engine/managers/overlap.py:1: no use of a host mirror and no host pull "
                             "of the device lengths on this line\n")


@pytest.mark.parametrize("location, message", [
    ("engine/managers/metrics.py", "engine/managers/metrics.py: expected PATH:LINE"),
    ("engine/managers/metrics.py:0", "engine/managers/metrics.py:0: expected PATH:LINE"),
    ("engine/managers/metrics.py:x", "engine/managers/metrics.py:x: expected PATH:LINE"),
    ("engine/managers/nope.py:3", "engine/managers/nope.py: no such file"),
    ("engine/managers/metrics.py:999", "engine/managers/metrics.py:999: engine/managers/metrics.py has 11 line(s)"),
])
def test_a_bad_location_is_one_error(runner, engine, location, message):
    result = runner.invoke(main, ["explain", location])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {message}") and result.stderr.count("\n") == 1
    assert result.stdout == ""


def test_an_unparsable_file_is_named_and_the_others_still_explained(runner, engine):
    (engine / "engine" / "broken.py").write_text("def f(:\n    pass\n")
    result = runner.invoke(main, ["explain", "engine/broken.py:1", "engine/managers/schedule_batch.py:44"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: engine/broken.py:1:") and "cannot be parsed" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout.startswith("engine/managers/schedule_batch.py:44:9: `self.seq_lens_cpu` (read)")


CALLERS = """
def helper(b):
    return b.seq_lens_cpu.max()


def caller(b, c):
    if c:
        return helper(b)


def safe_caller(b):
    if b.seq_lens_cpu is not None:
        return helper(b)


def registers(table):
    table.append(helper)
"""


def test_a_reported_read_says_which_call_leaves_it_open(runner, project, chdir):
    root = project({"m.py": CALLERS.replace("\n\n\ndef registers(table):\n    table.append(helper)\n", "")})
    chdir(root)
    result = runner.invoke(main, ["explain", "--format", "json", "m.py:3"])
    assert result.exit_code == 0, result.stderr
    [use] = json.loads(result.stdout)[0]["uses"]
    assert use["verdict"] == "may be None"
    # safe_caller tests the mirror first; caller's `if c:` says nothing about it
    assert use["callers"] == _open_call(8, "caller", {"kind": "no-calls", "holds": False, "function": "caller"})
    text = runner.invoke(main, ["explain", "m.py:3"]).stdout
    assert text.splitlines()[-1].startswith("    not cleared by its callers: the call at m.py:8 (in `caller`)")


def test_a_function_used_as_a_value_is_named_as_why_its_callers_are_not_followed(runner, project, chdir):
    root = project({"m.py": CALLERS})
    chdir(root)
    [use] = json.loads(runner.invoke(main, ["explain", "--format", "json", "m.py:3"]).stdout)[0]["uses"]
    assert use["callers"] == {"kind": "unbounded", "holds": False, "function": "helper",
                              "fact": "`helper` is used other than by a call (m.py:17: passed or stored as a value)"}


def test_a_mirror_handed_on_through_a_local_mapping_has_one_answer(runner, project, chdir):
    # stored into `d`, then handed to build's `total` by `build(**d)`: one use, a pass to
    # build (which reads it), not also "handed on unchanged"
    root = project({"m.py": "def build(total):\n    return total * 2\n\n\n"
                            "def f(b):\n    d = {\"total\": b.seq_lens_sum}\n    return build(**d)\n"})
    chdir(root)
    [use] = json.loads(runner.invoke(main, ["explain", "--format", "json", "m.py:6"]).stdout)[0]["uses"]
    assert (use["subject"], use["verdict"]) == ("b.seq_lens_sum", "may be None")
    assert "`build` reads it at m.py:2" in use["reason"]


def test_a_read_its_callers_clear_has_no_open_call(runner, project, chdir):
    root = project({"m.py": CALLERS.split("\n\n\ndef caller")[0] + "\n\n\n" + CALLERS.split("\n\n\n")[2]})
    chdir(root)
    [use] = json.loads(runner.invoke(main, ["explain", "--format", "json", "m.py:3"]).stdout)[0]["uses"]
    assert (use["verdict"], use["cleared_by"], use["callers"]) == ("cannot be None", "its callers", None)
    # its one call, in safe_caller (m.py:8), is made under the test of the mirror (m.py:7)
    assert (use["why"]["kind"], use["why"]["function"], use["why"]["site"]) == (
        "calls", "helper", {"path": "m.py", "line": 8, "scope": "safe_caller"})


def test_steps_are_shown_as_the_location_is_from_another_directory(runner, engine, chdir):
    """Run from above the project, the header and every step name files the same way
    (relative to where the command runs), as lint's own flow does."""
    chdir(engine.parent)
    result = runner.invoke(main, ["explain", "engine/engine/managers/schedule_batch.py:44"])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("engine/engine/managers/schedule_batch.py:44:9: ")
    assert lines[2].strip().startswith("1. engine/engine/managers/schedule_batch.py:38:")
    assert lines[3].strip().startswith("2. engine/engine/managers/schedule_batch.py:44:9:")


MODES_PROJECT = {
    "example.py": (
        "import enum\n\n\nclass ForwardMode(enum.IntEnum):\n    EXTEND = 1\n    DECODE = 2\n    TARGET_VERIFY = 3\n\n"
        "    def is_extend(self):\n        return self == ForwardMode.EXTEND or self == ForwardMode.TARGET_VERIFY\n\n\n"
        "def helper(fb):\n    return fb.seq_lens_cpu.tolist()\n\n\n"
        "def plan(fb):\n    if fb.forward_mode.is_extend():\n        return helper(fb)\n"),
}
MODES_MODEL = '[tool.seqguard]\nmode-enum = "example.ForwardMode"\nskip-modes = ["DECODE", "TARGET_VERIFY"]\n'


def test_the_open_call_names_the_skip_modes_it_leaves_possible(runner, project, chdir):
    # example.py:19 calls helper under `is_extend()` (line 18), which TARGET_VERIFY passes too
    root = project(MODES_PROJECT, MODES_MODEL)
    chdir(root)
    [use] = json.loads(runner.invoke(main, ["explain", "--format", "json", "example.py:14"]).stdout)[0]["uses"]
    assert use["verdict"] == "may be None"
    assert use["callers"] == _open_call(19, "plan", {"kind": "no-calls", "holds": False, "function": "plan"},
                                        path="example.py", modes=["TARGET_VERIFY"])


def test_a_per_step_pull_says_why_its_callers_do_not_clear_it(runner, engine):
    # engine/layers/attention/draft_backend.py:9 pulls `forward_batch.seq_lens.sum()` in a
    # backend that opted out; line 29 calls it on `b`, whose type is not told (so it may
    # be this backend), on a batch that can be in a skip mode
    result = runner.invoke(main, ["explain", "--format", "json", "engine/layers/attention/draft_backend.py:9"])
    pulls = [u for u in json.loads(result.stdout)[0]["uses"] if u["use"].startswith("host pull")]
    assert [u["verdict"] for u in pulls] == ["per-step sync"]
    opened = pulls[0]["callers"]
    assert (opened["kind"], opened["site"], opened["modes"]) == (
        "call", {"path": "engine/layers/attention/draft_backend.py", "line": 29,
                 "scope": "TritonMultiStepDraftBackend.init_forward_metadata"}, ["DECODE", "TARGET_VERIFY"])


def test_a_read_cleared_two_calls_up_names_the_test_that_clears_it(runner, project, chdir):
    # the reason at the top of the chain is what a maintainer checks: it must be said
    source = ("def helper(b):\n    return b.seq_lens_cpu.max()\n\n\n"
              "def middle(b):\n    return helper(b)\n\n\n"
              "def top(b):\n    if b.seq_lens_cpu is None:\n        return 0\n    return middle(b)\n")
    chdir(project({"m.py": source}))
    [use] = json.loads(runner.invoke(main, ["explain", "--format", "json", "m.py:2"]).stdout)[0]["uses"]
    assert use["verdict"] == "cannot be None"
    tested = {"kind": "tested", "holds": True, "fact": "`b.seq_lens_cpu` is tested not to be None there"}
    assert use["why"] == _all_calls("helper", 6, "middle", {"kind": "caller", "holds": True, "function": "middle",
                                                            "rests_on": [_all_calls("middle", 12, "top", tested)]})


def test_a_call_back_into_the_chain_is_not_named_while_a_call_from_outside_is_open(runner, project, chdir):
    # helper calls itself (m.py:3) before `caller` calls it (m.py:9); the self-call adds
    # no way in (the callers judge a cycle by the calls into it), so the open call named
    # must be caller's, not "reached only from inside its own cycle"
    source = ("def helper(b, n):\n    if n:\n        return helper(b, n - 1)\n    return b.seq_lens_cpu.max()\n\n\n"
              "def caller(b, c):\n    if c:\n        return helper(b, 3)\n")
    chdir(project({"m.py": source}))
    [use] = json.loads(runner.invoke(main, ["explain", "--format", "json", "m.py:4"]).stdout)[0]["uses"]
    assert use["verdict"] == "may be None"
    assert use["callers"] == _open_call(9, "caller", {"kind": "no-calls", "holds": False, "function": "caller"})


def test_a_function_called_only_from_its_own_cycle_says_so(runner, project, chdir):
    # ping and pong call only each other: no call from outside shows the mirror present
    source = ("def ping(b):\n    pong(b)\n    return b.seq_lens_cpu.max()\n\n\n"
              "def pong(b):\n    ping(b)\n")
    chdir(project({"m.py": source}))
    [use] = json.loads(runner.invoke(main, ["explain", "--format", "json", "m.py:3"]).stdout)[0]["uses"]
    assert use["verdict"] == "may be None"
    # round the cycle: ping is called only by pong (m.py:7), pong only by ping (m.py:2)
    back = {"kind": "cycle", "holds": True, "function": "ping", "assumed": True}
    pong = _all_calls("pong", 2, "ping", {"kind": "caller", "holds": True, "function": "ping", "assumed": True,
                                          "rests_on": [back]}, assumed=True)
    ping = _all_calls("ping", 7, "pong", {"kind": "caller", "holds": True, "function": "pong", "assumed": True,
                                          "rests_on": [pong]}, assumed=True)
    assert use["callers"] == {"kind": "cycle-only", "holds": False, "function": "ping", "rests_on": [ping]}


def _open_call(line: int, scope: str, above: dict, path: str = "m.py", modes=()) -> dict:
    """The tree of a call left open, and what is open above it."""
    node = {"kind": "call", "holds": False, "site": {"path": path, "line": line, "scope": scope},
            "rests_on": [above]}
    return {**node, "modes": list(modes)} if modes else node


def _all_calls(function: str, line: int, scope: str, first: dict, assumed: bool = False) -> dict:
    """The tree of a function every call of which (one, at m.py:LINE) is made where the mirror is present."""
    node = {"kind": "calls", "holds": True, "function": function, "calls": 1, "question": "the mirror is present",
            "site": {"path": "m.py", "line": line, "scope": scope}, "rests_on": [first]}
    return {**node, "assumed": True} if assumed else node


TWO_READS = ["def f(batch, fb):", "    x = 1", "    y = batch.seq_lens_cpu.max() + fb.seq_lens_cpu.max()",
             "    return y"]


def _lint_locations(runner) -> list[str]:
    result = runner.invoke(main, ["lint", "--no-cache", "--output-format", "concise", "."])
    return [line.split(" ")[0].rstrip(":") for line in result.stdout.splitlines() if " SG" in line]


def test_explain_takes_the_location_lint_prints_with_its_column(runner, project, chdir):
    # issue 37: `explain PATH:LINE:COL` answered "no such file"; the column picks one of
    # the two reads on the line
    chdir(project({"reads.py": "\n".join(TWO_READS) + "\n"}))
    locations = _lint_locations(runner)
    assert locations == ["reads.py:3:9", "reads.py:3:36"]
    for location, subject in zip(locations, ("batch.seq_lens_cpu", "fb.seq_lens_cpu")):
        result = runner.invoke(main, ["explain", "--no-cache", "--format", "json", location])
        assert result.exit_code == 0, result.stderr
        [document] = json.loads(result.stdout)
        assert [u["subject"] for u in document["uses"]] == [subject]
        assert [(d["line"], d["column"]) for d in document["findings"]] == [(3, int(location.rsplit(":", 1)[1]))]
        assert document["column"] == int(location.rsplit(":", 1)[1])
    # without a column (or at a column where nothing starts): every use of the line
    for location in ("reads.py:3", "reads.py:3:2"):
        result = runner.invoke(main, ["explain", "--no-cache", "--format", "json", location])
        [document] = json.loads(result.stdout)
        assert [u["subject"] for u in document["uses"]] == ["batch.seq_lens_cpu", "fb.seq_lens_cpu"], location
    text = runner.invoke(main, ["explain", "--no-cache", "reads.py:3:36"]).stdout
    assert text.startswith("reads.py:3:36: `fb.seq_lens_cpu` (read): may be None  [SG002]\n")
    assert "batch.seq_lens_cpu" not in text


@pytest.mark.parametrize("location", ["reads.py:0:3", "reads.py:3:0", "reads.py:3:x", "reads.py:"])
def test_a_malformed_location_with_a_column_says_what_to_give(runner, project, chdir, location):
    chdir(project({"reads.py": "\n".join(TWO_READS) + "\n"}))
    result = runner.invoke(main, ["explain", location])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {location}: expected PATH:LINE or PATH:LINE:COL"), result.stderr


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
def test_explain_numbers_lines_as_lint_does_whatever_ends_them(runner, project, chdir, ending):
    # a file ending its lines in a lone CR: lint reported line 4, explain refused it
    # ("has 1 line(s)"); both number lines as Python does
    source = ending.join(["# head", *TWO_READS, "# tail"]) + ending
    chdir(project({"reads.py": source.encode()}))
    locations = _lint_locations(runner)
    assert locations == ["reads.py:4:9", "reads.py:4:36"]
    for location in locations:
        result = runner.invoke(main, ["explain", "--no-cache", location])
        assert result.exit_code == 0, result.stderr
        assert result.stdout.startswith(f"{location}: `"), result.stdout
    last = runner.invoke(main, ["explain", "--no-cache", "reads.py:6"])
    assert last.exit_code == 0 and "no use of a host mirror" in last.stdout, last.stderr
    beyond = runner.invoke(main, ["explain", "--no-cache", "reads.py:7"])
    assert beyond.exit_code == 2 and "reads.py has 6 line(s)" in beyond.stderr


@pytest.mark.parametrize("data, lines", [(b"", 1), (b"a", 1), (b"a\n", 1), (b"a\rb", 2), (b"a\r\nb\r\n", 2),
                                         (b"a\rb\r\nc\nd", 4), (b"\r\r\n\n", 3)])
def test_line_count_is_pythons(data, lines):
    from seqguard.lint.explain import line_count

    assert line_count(data) == lines
    text = data.decode()
    assert len(text.replace("\r\n", "\n").replace("\r", "\n").split("\n")) - text.endswith(("\n", "\r")) == lines


# ---------------------------------------------------------------- the one renderer of reason trees

def _wording_cases():
    from seqguard.lint.contract.reasons import Kind, Reason, Site
    site, inner = Site("m.py", 8, "caller"), Site("m.py", 2, "ping")
    tested = Reason(Kind.TESTED, True, fact="`b.seq_lens_cpu` is tested not to be None there")
    no_calls = Reason(Kind.NO_CALLS, False, function="caller")
    back = Reason(Kind.CYCLE, True, function="ping", assumed=True)
    return [
        (Reason(Kind.CALLS, True, function="helper", site=site, calls=1, question="the mirror is present",
                rests_on=(tested,)),
         "the one call of `helper` is made where the mirror is present (m.py:8: `b.seq_lens_cpu` is tested not "
         "to be None there)"),
        (Reason(Kind.CALLS, True, function="helper", site=site, calls=3, question="a host sync is not the per-step "
                "one", rests_on=(Reason(Kind.CALLER, True, function="caller", rests_on=(tested,)),)),
         "all 3 calls of `helper` are made where a host sync is not the per-step one (m.py:8: made in `caller`, "
         "and `b.seq_lens_cpu` is tested not to be None there)"),
        (Reason(Kind.CLOSURE, True, function="warmup", site=Site("m.py", 5, "warmup.run"), argument="buffers",
                rests_on=(tested,)),
         "made in `warmup.run`, a closure over `warmup`'s `buffers`, and `b.seq_lens_cpu` is tested not to be "
         "None there"),
        (back, "`ping` is called back from itself there, and its other calls decide"),
        (Reason(Kind.CALL, False, site=site, rests_on=(no_calls,)),
         "the call at m.py:8 (in `caller`) is not known to be safe; above it, no call of `caller` is found in the "
         "project, so it is judged on its own"),
        (Reason(Kind.CALL, False, site=site, modes=("DECODE", "IDLE"),
                rests_on=(Reason(Kind.MODULE_LEVEL, False),)),
         "the call at m.py:8 (in `caller`) leaves DECODE, IDLE possible, and it is made at module level or in a "
         "nested function, whose calls are not followed"),
        (Reason(Kind.CALL, False, site=site, function="warmup", argument="buffers",
                rests_on=(Reason(Kind.DEPTH, False, limit=4),)),
         "the call at m.py:8 (in `caller`) is not known to be safe, a closure over `warmup`'s `buffers`, and "
         "callers are followed 4 calls up at most"),
        (Reason(Kind.CALL, False, site=site), "the call at m.py:8 (in `caller`) is not known to be safe"),
        (Reason(Kind.CALL, False, site=site, rests_on=(Reason(Kind.DEFERRED, False, fact="partial"),)),
         "the call at m.py:8 (in `caller`) is not known to be safe, and it is bound by `partial`: the function runs "
         "wherever the partial is called, which is not followed"),
        (Reason(Kind.UNBOUNDED, False, function="helper", fact="`helper` is a generator: its body runs when the "
                "iterator is advanced, not where it is called"),
         "`helper` is a generator: its body runs when the iterator is advanced, not where it is called"),
        (Reason(Kind.CYCLE_ONLY, False, function="ping", rests_on=(
            Reason(Kind.CALLS, True, function="ping", site=Site("m.py", 7, "pong"), calls=1, assumed=True,
                   rests_on=(Reason(Kind.CALLER, True, function="pong", assumed=True, rests_on=(
                       Reason(Kind.CALLS, True, function="pong", site=inner, calls=1, assumed=True,
                              rests_on=(back,)),)),)),)),
         "`ping` is reached there only from inside its own cycle of calls: m.py:7 (in `pong`), then m.py:2 "
         "(in `ping`)"),
        (Reason(Kind.BUDGET, False, function="forward", limit=2000),
         "the calls above `forward` take more than 2000 questions to follow"),
        (Reason(Kind.HOST_VALUE, True, fact="`total_seq_lens` is declared `int` (m.py:3): a host value, so nothing "
                "is copied from the device"),
         "`total_seq_lens` is declared `int` (m.py:3): a host value, so nothing is copied from the device"),
    ]


def test_reason_trees_are_worded_by_one_renderer():
    from seqguard.lint.explain import reason_text
    cases = _wording_cases()
    assert [reason_text(tree) for tree, _ in cases] == [words for _, words in cases]


def test_a_marker_finding_at_a_reads_column_is_not_the_reads(runner, project, chdir):
    # SG007 (an unused marker) is reported at column 1 of its line, where a module-level
    # read starts too: it is the marker's finding, shown on its own, not the read's code
    chdir(project({"m.py": "import x\n\nb = x.make()\nb.seq_lens_cpu.max()  # seqguard: ignore[SG005]\n"}))
    lint = json.loads(runner.invoke(main, ["lint", "--no-cache", "--output-format", "json", "."]).stdout)
    assert sorted((f["code"], f["line"], f["column"]) for f in lint) == [("SG002", 4, 1), ("SG007", 4, 1)]
    [document] = json.loads(runner.invoke(main, ["explain", "--no-cache", "--format", "json", "m.py:4"]).stdout)
    [use] = document["uses"]
    assert use["codes"] == ["SG002"] and [f["code"] for f in document["findings"]] == ["SG002", "SG007"]


def test_a_value_handed_to_a_method_is_named_as_the_code_writes_it(runner, project, chdir):
    # the callee was spelled `<self>.reads` inside; a message names what the code says
    chdir(project({"m.py": "class Base:\n    def reads(self, lens):\n        return lens.max()\n\n\n"
                           "class Thing(Base):\n    def go(this, fb):\n        return this.reads(fb.seq_lens_cpu)\n\n"
                           "    def go2(self, fb):\n        return super().reads(fb.seq_lens_cpu)\n"}))
    lint = json.loads(runner.invoke(main, ["lint", "--no-cache", "--output-format", "json", "."]).stdout)
    messages = sorted(f["message"] for f in lint if f["code"] == "SG002")
    assert len(messages) == 2
    assert "is passed to `super().reads`, which reads it" in messages[0]
    assert "is passed to `this.reads`, which reads it" in messages[1]
