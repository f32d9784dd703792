"""Who calls a function, and with what: names a method imports for itself, and test
harnesses, which are not the engine's callers."""

from pathlib import Path

from seqguard.config import load_config
from seqguard.lint.runner import lint_paths

# A runner whose read is safe only through its one engine caller, which tested the
# mirror first; `execute` is a method of two classes, so a call on an object of unknown
# type may be of either.
RUNNER = """\
class GraphRunner:
    def execute(self, fb):
        return fb.seq_lens_sum + 1


class OtherRunner:
    def execute(self, fb):
        return 0
"""
WORKER = """\
class Worker:
    def setup(self):
        from .runner import GraphRunner as Runner
        self.runner = Runner()

    def step(self, fb):
        if fb.seq_lens_sum is None:
            return None
        return self.runner.execute(fb)
"""
HARNESS = """\
def check(runner, fb):
    return runner.execute(fb)
"""


def _reads(root: Path, pyproject: str = "[tool.seqguard]\n") -> set[tuple[str, int]]:
    config = load_config([root])
    result = lint_paths([root], config, use_cache=False, jobs=1)
    return {(Path(d.path).relative_to(root).as_posix() if Path(d.path).is_absolute() else d.path, d.line)
            for d in result.diagnostics if d.code == "SG002"}


def test_a_class_a_method_imports_for_itself_types_the_attribute_it_builds(project):
    root = project({"eng/__init__.py": "", "eng/runner.py": RUNNER, "eng/worker.py": WORKER})
    assert _reads(root) == set()


def test_without_that_import_the_attribute_is_of_unknown_type_and_the_read_stays(project):
    # the same worker, building the runner through a factory nobody can read
    worker = WORKER.replace("        from .runner import GraphRunner as Runner\n", "")
    worker = worker.replace("Runner()", "make_runner()")
    root = project({"eng/__init__.py": "", "eng/runner.py": RUNNER, "eng/worker.py": worker})
    assert _reads(root) == {("eng/runner.py", 3)}


def test_a_local_import_of_a_function_types_what_it_returns(project):
    # (the worker names the runner's class where it imports for annotations only: the
    # calls of a method are looked for in the files that import its class or module)
    factory = "from .runner import GraphRunner\n\n\ndef make_runner():\n    return GraphRunner()\n"
    worker = WORKER.replace("from .runner import GraphRunner as Runner", "from .factory import make_runner")
    worker = "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .runner import GraphRunner\n\n\n" + \
        worker.replace("Runner()", "make_runner()")
    root = project({"eng/__init__.py": "", "eng/runner.py": RUNNER, "eng/factory.py": factory,
                    "eng/worker.py": worker})
    assert _reads(root) == set()


def test_a_test_harness_calling_on_an_unknown_object_does_not_hide_the_engine_callers(project):
    files = {"eng/__init__.py": "", "eng/runner.py": RUNNER, "eng/worker.py": WORKER,
             "eng/tests/__init__.py": "", "eng/tests/kit.py": "from eng.runner import GraphRunner\n\n\n" + HARNESS}
    root = project(files)
    assert _reads(root) == set()
    # ... unless the project says test code is engine code
    root = project(files, pyproject="[tool.seqguard]\ntest-paths = []\n")
    assert _reads(root) == {("eng/runner.py", 3)}


def test_test_paths_match_folders_and_file_names_not_lookalikes():
    config = load_config([Path(".")])
    assert config.is_test_path("sglang/test/kits/dsa_metadata_kit.py")
    assert config.is_test_path("tests/conftest.py")
    assert config.is_test_path("pkg/test_runner.py") and config.is_test_path("pkg/runner_test.py")
    assert not config.is_test_path("sglang/srt/test_time_scaling/runner.py")
    assert not config.is_test_path("sglang/srt/testing.py")
    assert not config.is_test_path("sglang/srt/layers/attention/contest.py")


def test_a_harness_s_own_helpers_count_its_calls(project):
    # a function of the test code is called by test code: those calls are its callers
    kit = ("def helper(b):\n    return b.seq_lens_cpu.max()\n\n\n"
           "def caller(b):\n    if b.seq_lens_cpu is None:\n        return 0\n    return helper(b)\n")
    root = project({"eng/__init__.py": "", "tests/__init__.py": "", "tests/kit.py": kit})
    assert _reads(root) == set()


def test_a_bad_test_paths_value_is_one_error_naming_the_key(project, runner, chdir):
    from seqguard.cli import main
    root = project({"eng/__init__.py": ""}, pyproject="[tool.seqguard]\ntest-paths = \"tests\"\n")
    chdir(root)
    result = runner.invoke(main, ["lint", "--no-cache", "eng"])
    assert result.exit_code == 2
    assert "test-paths" in result.output and "Traceback" not in result.output


def test_a_test_creating_a_class_does_not_undo_that_the_engine_creates_it_only_under_a_forced_feature(project):
    engine = ("def decide(args, backends):\n    if args.enable_two_batch_overlap:\n        return True\n"
              "    return any(getattr(b, 'needs_cpu_seq_lens', True) for b in backends)\n\n\n"
              "class Splitter:\n    def run(self, batch):\n        return batch.seq_lens_cpu.sum()\n\n\n"
              "def make(args):\n    if args.enable_two_batch_overlap:\n        return Splitter()\n")
    files = {"eng/__init__.py": "", "eng/split.py": engine,
             "eng/tests/__init__.py": "", "eng/tests/test_split.py": "from eng.split import Splitter\n\n\n"
                                                                     "def test_run():\n    Splitter()\n"}
    model = '[tool.seqguard]\naggregator = "eng.split.decide"\n'
    assert _reads(project(files, pyproject=model)) == set()
    assert _reads(project(files, pyproject=model + "test-paths = []\n")) == {("eng/split.py", 9)}
