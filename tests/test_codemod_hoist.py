"""A host copy bound once before a loop (`seq_lens_cpu_fallback = ...`) is right only when
nothing the loop runs can rebind the object it was taken from: a closure it calls that
rebinds the name through `nonlocal` or `global`, a `match` capture, a method that stores
a new object into the attribute. Each program below is rewritten by `seqguard codemod`
and run with the mirror None: it must give each batch's own lengths, not the first's."""

import sys
import textwrap
import types

import pytest

from seqguard.cli import main


class _Host(list):
    """The host copy: a list with `.max()`."""

    def max(self):
        return max(self)


class _Device(list):
    """The device lengths: `.cpu()` is the host copy (the sync the fallback does)."""

    def cpu(self):
        return _Host(self)


class Batch:
    def __init__(self, lengths, mirror=False):
        self.seq_lens = _Device(lengths)
        self.seq_lens_cpu = _Host(lengths) if mirror else None


class Holder:
    __match_args__ = ("batch",)

    def __init__(self, batch):
        self.batch = batch


STALE = {
    "a closure rebinds it through nonlocal": """
        def lengths(batches):
            out = []
            batch = batches[0]

            def advance(i):
                nonlocal batch
                batch = batches[i]

            for i in range(len(batches)):
                advance(i)
                out.append(batch.seq_lens_cpu.max())
            return out
        """,
    "a match capture rebinds it": """
        def lengths(batches):
            out = []
            batch = batches[0]
            for item in batches:
                match item:
                    case batch:
                        pass
                out.append(batch.seq_lens_cpu.max())
            return out
        """,
    "a class pattern's keyword captures it": """
        def lengths(batches):
            out = []
            batch = batches[0]
            for item in batches:
                match Holder(item):
                    case Holder(batch=batch):
                        pass
                out.append(batch.seq_lens_cpu.max())
            return out
        """,
    "an `as` pattern captures it": """
        def lengths(batches):
            out = []
            batch = batches[0]
            for item in batches:
                match item:
                    case Batch() as batch:
                        pass
                out.append(batch.seq_lens_cpu.max())
            return out
        """,
    "a function it calls rebinds the global": """
        batch = None


        def advance(b):
            global batch
            batch = b


        def lengths(batches):
            global batch
            out = []
            batch = batches[0]
            for item in batches:
                advance(item)
                out.append(batch.seq_lens_cpu.max())
            return out
        """,
    "a function it calls rebinds the global the loop reads without declaring it": """
        batch = None


        def advance(b):
            global batch
            batch = b


        def lengths(batches):
            out = []
            advance(batches[0])
            for item in batches:
                advance(item)
                out.append(batch.seq_lens_cpu.max())
            return out
        """,
    "a method's loop calls a module function that rebinds the global": """
        current = None


        def set_current(b):
            global current
            current = b


        class Runner:
            def lengths(self, batches):
                out = []
                set_current(batches[0])
                for b in batches:
                    set_current(b)
                    out.append(current.seq_lens_cpu.max())
                return out


        def lengths(batches):
            return Runner().lengths(batches)
        """,
    "a callback the loop runs rebinds the global": """
        batch = None


        def advance(b):
            global batch
            batch = b


        def lengths(batches, hooks=(advance,)):
            out = []
            advance(batches[0])
            for item in batches:
                for hook in hooks:
                    hook(item)
                out.append(batch.seq_lens_cpu.max())
            return out
        """,
    "the loop writes globals()": """
        batch = None


        def lengths(batches):
            out = []
            globals()["batch"] = batches[0]
            for item in batches:
                globals()["batch"] = item
                out.append(batch.seq_lens_cpu.max())
            return out
        """,
    "a method it calls stores a new object into the attribute": """
        class Runner:
            def __init__(self, batches):
                self.batches = batches
                self.batch = batches[0]

            def advance(self, i):
                self.batch = self.batches[i]

            def lengths(self):
                out = []
                for i in range(len(self.batches)):
                    self.advance(i)
                    out.append(self.batch.seq_lens_cpu.max())
                return out


        def lengths(batches):
            return Runner(batches).lengths()
        """,
    "the loop's own variable indexes it": """
        def lengths(batches):
            out = []
            for i in range(len(batches)):
                out.append(batches[i].seq_lens_cpu.max())
            return out
        """,
    "the loop moves the index it goes through": """
        class Runner:
            def __init__(self, batches):
                self.batches = batches
                self.idx = 0

            def lengths(self):
                out = []
                while self.idx < len(self.batches):
                    out.append(self.batches[self.idx].seq_lens_cpu.max())
                    self.idx += 1
                return out


        def lengths(batches):
            return Runner(batches).lengths()
        """,
}


def _rewritten(runner, project, chdir, source: str) -> str:
    root = project({"m.py": textwrap.dedent(source)})
    chdir(root)
    result = runner.invoke(main, ["codemod", "--no-cache", "--formatter", "none", "."])
    assert result.exit_code == 0, result.stderr
    return (root / "m.py").read_text()


def _run(code: str, batches):
    namespace = {"Batch": Batch, "Holder": Holder}
    exec(compile(code, "m.py", "exec"), namespace)
    return namespace["lengths"](batches)


@pytest.mark.parametrize("source", list(STALE.values()), ids=list(STALE))
def test_a_loop_that_can_rebind_the_object_takes_a_copy_every_turn(runner, project, chdir, source):
    code = _rewritten(runner, project, chdir, source)
    assert code != textwrap.dedent(source)  # the read was guarded
    assert _run(code, [Batch([3, 1]), Batch([7, 2]), Batch([5])]) == [3, 7, 5]
    assert _run(code, [Batch([3, 1], mirror=True), Batch([7, 2], mirror=True)]) == [3, 7]
    assert "_fallback = " not in code


def test_a_module_level_loop_whose_name_exec_rebinds_takes_a_copy_every_turn(runner, project, chdir):
    source = """
        batch = batches[0]
        for i in range(len(batches)):
            exec(f"batch = batches[{i}]")
            out.append(batch.seq_lens_cpu.max())
        """
    code = _rewritten(runner, project, chdir, source)
    assert code != textwrap.dedent(source) and "_fallback = " not in code
    namespace = {"batches": [Batch([3, 1]), Batch([7, 2])], "out": []}
    exec(compile(code, "m.py", "exec"), namespace)
    assert namespace["out"] == [3, 7]


def test_a_loop_that_sets_its_module_global_through_setattr_takes_a_copy_every_turn(runner, project, chdir,
                                                                                    monkeypatch):
    source = """
        import sys

        batch = None


        def lengths(batches):
            out = []
            module = sys.modules[__name__]
            module.batch = batches[0]
            for item in batches:
                setattr(module, "batch", item)
                out.append(batch.seq_lens_cpu.max())
            return out
        """
    code = _rewritten(runner, project, chdir, source)
    assert code != textwrap.dedent(source) and "_fallback = " not in code
    module = types.ModuleType("sg_hoist_setattr")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(code, "m.py", "exec"), module.__dict__)
    assert module.lengths([Batch([3, 1]), Batch([7, 2])]) == [3, 7]


def test_a_global_declared_elsewhere_leaves_a_local_of_the_same_name_hoisted(runner, project, chdir):
    # `batch` is the function's parameter: `advance`'s `global batch` cannot rebind it
    source = """
        batch = None


        def advance(b):
            global batch
            batch = b


        def lengths(batch, n):
            out = []
            for i in range(n):
                advance(None)
                out.append(batch.seq_lens_cpu.max() + i)
            return out
        """
    code = _rewritten(runner, project, chdir, source)
    assert code.count("seq_lens_cpu_fallback = ") == 1
    namespace = {}
    exec(compile(code, "m.py", "exec"), namespace)
    assert namespace["lengths"](Batch([3, 1]), 2) == [3, 4]


def test_a_loop_nothing_can_rebind_in_still_takes_one_copy_before_it(runner, project, chdir):
    source = """
        def lengths(batches):
            out = []
            batch = batches[0]

            def show(i):
                return i

            for i in range(len(batches)):
                show(i)
                out.append(batch.seq_lens_cpu.max() + i)
            return out
        """
    code = _rewritten(runner, project, chdir, source)
    assert code.count("seq_lens_cpu_fallback = ") == 1
    assert _run(code, [Batch([3, 1]), Batch([7, 2])]) == [3, 4]
