"""Fallbacks a reviewer accepts (issue 22): one host copy per function and loop, not
one per turn; shapes and device-buffer copies from the device tensor with no copy at
all; a long call guarded in place, not written twice; no fallback from a device
tensor the function changed before the read. Each rewrite is executed with a fake
batch, with the mirror and without, and the host copies are counted."""

import json
import textwrap

import libcst
from libcst.codemod import CodemodContext

from seqguard.cli import main
from seqguard.codemods import GuardMirrorReads


class Lens:
    """A length tensor that counts its host copies."""

    copies = 0

    def __init__(self, values):
        self.values = list(values)

    def cpu(self):
        Lens.copies += 1
        return Lens(self.values)

    def __getitem__(self, key):
        picked = self.values[key]
        return Lens(picked) if isinstance(key, slice) else picked

    def __len__(self):
        return len(self.values)

    def __iter__(self):
        return iter(self.values)

    @property
    def shape(self):
        return (len(self.values),)

    def numel(self):
        return len(self.values)

    def tolist(self):
        return list(self.values)

    def sum(self):
        return Total(sum(self.values))

    def copy_(self, other):
        self.values[:len(other)] = list(other)
        return self


class Total:
    def __init__(self, value):
        self.value = value

    def item(self):
        Lens.copies += 1
        return self.value


class Batch:
    def __init__(self, values, mirror=True):
        self.seq_lens = Lens(values)
        self.seq_lens_cpu = Lens(values) if mirror else None
        self.seq_lens_sum = sum(values) if mirror else None


def rewrite(source: str):
    command = GuardMirrorReads(CodemodContext())
    new = command.transform_module(libcst.parse_module(textwrap.dedent(source))).code
    return new, command


def run(code: str, function: str, *args):
    space: dict = {}
    exec(compile(code, "<rewritten>", "exec"), space)
    Lens.copies = 0
    return space[function](*args), Lens.copies


def same_answers(source: str, function: str, make_args) -> str:
    """The rewrite gives the original's answer with the mirror and without; returns it."""
    new, _ = rewrite(source)
    want, _ = run(textwrap.dedent(source), function, *make_args(True))
    got_with, copies_with = run(new, function, *make_args(True))
    got_without, _ = run(new, function, *make_args(False))
    assert got_with == want and got_without == want, new
    assert copies_with == 0, new  # the mirror is there: nothing copied
    return new


def test_a_per_request_loop_copies_once_not_once_per_turn():
    source = """
        def per_request(batch, n):
            out = []
            for i in range(n):
                out.append(int(batch.seq_lens_cpu[i]))
            return out
        """
    new = same_answers(source, "per_request", lambda m: (Batch([3, 5, 7, 9], m), 4))
    assert run(new, "per_request", Batch([3, 5, 7, 9], False), 4)[1] == 1
    binding = new.index("seq_lens_cpu_fallback = ")
    assert binding < new.index("for i in range(n)")   # bound before the loop, not in it
    assert new.count(".cpu()") == 1


def test_a_comprehension_and_a_while_loop_copy_once():
    source = """
        def comprehension(batch, n):
            return [int(batch.seq_lens_cpu[i]) for i in range(n)]


        def counting(batch, i):
            seen = []
            while i < 3:
                seen.append(batch.seq_lens_cpu[i])
                i += 1
            return seen
        """
    new = same_answers(source, "comprehension", lambda m: (Batch([1, 2, 3], m), 3))
    assert run(new, "comprehension", Batch([1, 2, 3], False), 3)[1] == 1
    assert run(new, "counting", Batch([1, 2, 3], False), 0) == ([1, 2, 3], 1)
    # one name per function: each is `seq_lens_cpu_fallback`, not numbered across the file
    assert new.count("seq_lens_cpu_fallback = ") == 2 and "_fallback_2" not in new


def test_two_loops_of_one_function_share_one_copy():
    source = """
        def two_loops(batch, n):
            total = 0
            for i in range(n):
                total += batch.seq_lens_cpu[i]
            for j in range(n):
                total += 10 * batch.seq_lens_cpu[j]
            return total
        """
    new = same_answers(source, "two_loops", lambda m: (Batch([1, 2], m), 2))
    assert run(new, "two_loops", Batch([1, 2], False), 2)[1] == 1
    assert new.count("seq_lens_cpu_fallback = ") == 1


def test_a_loop_that_changes_what_it_reads_is_not_hoisted():
    """Hoisting would read a stale copy: the loop rebinds the object, or stores into it."""
    source = """
        def each(batches):
            out = []
            for batch in batches:
                out.append(batch.seq_lens_cpu.tolist())
            return out


        def stores(batch, others):
            out = []
            for other in others:
                out.append(batch.seq_lens_cpu.tolist())
                batch.seq_lens = other.seq_lens
            return out
        """
    new, command = rewrite(source)
    assert "_fallback" not in new
    assert all(site.in_loop and site.hoisted_as is None for site in command.sites if site.host_sync)
    batches = lambda m: ([Batch([1], m), Batch([2, 3], m)],)  # noqa: E731
    assert run(new, "each", *batches(False))[0] == run(textwrap.dedent(source), "each", *batches(True))[0]


def test_the_summary_names_one_copy_per_loop_and_the_copies_every_turn(tmp_path, runner, chdir):
    (tmp_path / "pyproject.toml").write_text("[tool.seqguard]\n")
    (tmp_path / "m.py").write_text(textwrap.dedent("""
        def per_request(batch, n):
            return [batch.seq_lens_cpu[i] + batch.seq_lens_cpu[0] for i in range(n)]


        def each(batches):
            return [batch.seq_lens_cpu.tolist() for batch in batches]
        """))
    chdir(tmp_path)
    result = runner.invoke(main, ["codemod", "--no-cache", "--formatter", "none", "m.py"])
    assert result.exit_code == 0, result.output
    assert "seq_lens_cpu_fallback = " in (tmp_path / "m.py").read_text()
    # named at the statement it is bound before, in the file as lint read it (line 3)
    assert "m.py:3  (`seq_lens_cpu_fallback`, once before its loop)" in result.stderr
    assert "host-sync fallbacks (2;" in result.stderr  # two reads, one copy; and the other loop
    assert "(inside a loop that changes what it reads: a copy every turn)" in result.stderr
    report = runner.invoke(main, ["codemod", "--no-cache", "--check", "--format", "json", "m.py"])
    assert json.loads(report.stdout)["files"] == []  # written already: nothing left to do


def test_shapes_and_counts_are_read_from_the_device_tensor():
    source = """
        def sizes(batch):
            lens = batch.seq_lens_cpu
            return (batch.seq_lens_cpu.shape[0], len(batch.seq_lens_cpu), batch.seq_lens_cpu.numel(),
                    lens.shape[0])
        """
    new = same_answers(source, "sizes", lambda m: (Batch([4, 4, 4], m),))
    assert ".cpu()" not in new
    assert run(new, "sizes", Batch([4, 4, 4], False))[1] == 0


def test_a_slice_of_an_alias_is_not_a_shape_of_the_mirror():
    source = """
        def picked(batch, idx):
            lens = batch.seq_lens_cpu
            lens = lens[idx]
            return lens.shape[0]
        """
    new = same_answers(source, "picked", lambda m: (Batch([4, 5, 6], m), slice(0, 2)))
    assert "batch.seq_lens.shape" not in new


def test_a_copy_into_a_device_buffer_takes_the_device_tensor():
    source = """
        class Runner:
            def __init__(self):
                self.seq_lens = Lens([0, 0, 0, 0])

            def replay(self, batch, n):
                self.seq_lens[:n].copy_(batch.seq_lens_cpu[:n])
                return self.seq_lens.tolist()
        """
    new, _ = rewrite(source)
    assert ".cpu()" not in new and "copy_(batch.seq_lens[:n])" in new
    space = {"Lens": Lens}
    exec(compile(new, "<rewritten>", "exec"), space)
    Lens.copies = 0
    # the fake's slice is a copy, so only the call is checked to run, with no host copy
    space["Runner"]().replay(Batch([2, 3], False), 2)
    assert Lens.copies == 0


def test_a_long_call_is_guarded_in_place_not_written_twice():
    source = """
        def allocate(batch, pool, tokens):
            return pool.alloc(
                batch.req_pool_indices,
                batch.seq_lens_cpu.tolist(),
                tokens,
            )


        def short(batch):
            return batch.seq_lens_cpu.tolist()
        """
    new, _ = rewrite(source)
    assert new.count("pool.alloc(") == 1
    assert "( batch.seq_lens_cpu if batch.seq_lens_cpu is not None else batch.seq_lens.cpu() ).tolist()" \
        in " ".join(new.split())
    assert new.count("return batch.seq_lens_cpu.tolist()") == 1 and "if batch.seq_lens_cpu is not None:" in new


def test_no_fallback_from_a_device_tensor_changed_before_the_read():
    """sglang 0.5.23 frozen_kv_mtp_cuda_graph_runner.py:439-453: `forward_batch.seq_lens`
    is the padded view there, so its sum counts the padding the code adds again."""
    source = """
        def replay(forward_batch, buffers, pad):
            forward_batch.seq_lens = buffers.seq_lens[:8]
            return forward_batch.seq_lens_sum + pad


        def grows(forward_batch, n):
            for i in range(n):
                forward_batch.seq_lens.add_(1)
                print(forward_batch.seq_lens_cpu[0])


        def untouched(forward_batch, other):
            other.seq_lens = forward_batch.seq_lens
            return forward_batch.seq_lens_sum + 1
        """
    new, command = rewrite(source)
    body = textwrap.dedent(source)
    replay, grows = body.split("\n\n\n")[0], body.split("\n\n\n")[1]
    assert replay in new and grows in new  # untouched
    manual = dict(command.manual)
    assert set(manual) == {4, 10}
    assert "`forward_batch.seq_lens` is changed at line 3, before this read" in manual[4]
    assert "`forward_batch.seq_lens` is changed at line 9" in manual[10]
    assert "forward_batch.seq_lens.sum().item()" in new.split("def untouched")[1]


def test_a_hoisted_name_never_shadows_one_the_function_uses():
    source = """
        def busy(batch, n):
            seq_lens_cpu_fallback = "mine"
            return [batch.seq_lens_cpu[i] for i in range(n)], seq_lens_cpu_fallback
        """
    new = same_answers(source, "busy", lambda m: (Batch([1, 2], m), 2))
    assert "seq_lens_cpu_fallback_2 = " in new


def test_a_sum_in_a_loop_is_taken_once():
    source = """
        def shares(batch, n):
            return [batch.seq_lens_cpu[i] / batch.seq_lens_sum for i in range(n)]
        """
    new = same_answers(source, "shares", lambda m: (Batch([1, 3], m), 2))
    assert run(new, "shares", Batch([1, 3], False), 2)[1] == 2  # one copy, one sum
    assert "seq_lens_sum_fallback = " in new


def test_one_idea_of_an_in_place_method_for_loops_device_tensors_and_maintenance():
    """`__iadd__`/`__setitem__` change their object as `add_` does; a private `_x_`
    name is no torch in-place method. The loop, the device-tensor and the maintenance
    checks ask the same predicate."""
    from seqguard.codemods.bindings import is_in_place

    assert [m for m in ("add_", "copy_", "__iadd__", "__setitem__", "_cache_", "__len__", "add", "_")
            if is_in_place(m)] == ["add_", "copy_", "__iadd__", "__setitem__"]
    source = """
        def grows(forward_batch, n):
            forward_batch.seq_lens.__iadd__(1)
            return forward_batch.seq_lens_sum + n
        """
    _, command = rewrite(source)
    assert [line for line, _ in command.manual] == [4]
    assert "`forward_batch.seq_lens` is changed at line 3" in dict(command.manual)[4]


def test_every_line_the_report_prints_is_of_the_file_lint_read(tmp_path, runner, chdir):
    """The rewrite of line 2 shifts every later line by three; the manual-fix record of
    line 4 and the line its reason names (the device change at line 3) are both of the
    file as lint read it, in a written run as in a --diff run."""
    source = ("def f(b):\n    x = b.seq_lens_cpu.max()\n    b.seq_lens = b.seq_lens[:2]\n"
              "    return x + b.seq_lens_cpu.sum()\n")
    (tmp_path / "pyproject.toml").write_text("[tool.seqguard]\n")
    (tmp_path / "m.py").write_text(source)
    chdir(tmp_path)

    def entries(result):
        return [line.strip() for line in result.stderr.splitlines() if line.strip().startswith("m.py:")]

    shown = runner.invoke(main, ["codemod", "--no-cache", "--formatter", "none", "--diff", "m.py"])
    written = runner.invoke(main, ["codemod", "--no-cache", "--formatter", "none", "m.py"])
    assert written.exit_code == 0, written.stderr
    assert (tmp_path / "m.py").read_text().count("\n") == source.count("\n") + 3
    listed = entries(written)
    assert listed == entries(shown)
    assert listed[0] == "m.py:2"
    assert listed[1].startswith("m.py:4: `b.seq_lens` is changed at line 3, before this read")
    lines = source.splitlines()
    assert "seq_lens_cpu" in lines[4 - 1] and lines[3 - 1].startswith("    b.seq_lens =")
