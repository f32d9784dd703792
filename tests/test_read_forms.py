"""Reads the walk once missed, guards it once kept too long, and a guard it once lost
(issue 37): each case is a file of its own, linted without an engine model (every
unguarded read is reported), and its whole set of findings is asserted. The lines were
written from Python's semantics: a read is reported where the value it reads can be
None at run time, and only there."""

from __future__ import annotations

from textwrap import dedent

import pytest

from seqguard.lint.runner import lint_source

# name -> (source, the (line, code) findings it must give)
CASES = {
    # ---- a guard that stops holding when the index moves --------------------------
    "index_attribute_augmented": ("""
        class Runner:
            def step(self):
                if self.batches[self.idx].seq_lens_cpu is None:
                    return 0
                self.idx += 1
                return self.batches[self.idx].seq_lens_cpu.max()
        """, {(7, "SG002")}),
    "index_attribute_assigned": ("""
        class Runner:
            def step(self, other):
                if self.batches[self.idx].seq_lens_cpu is None:
                    return 0
                self.idx = other.pick()
                return self.batches[self.idx].seq_lens_cpu.max()
        """, {(7, "SG002")}),
    "index_name_assigned_unknown": ("""
        def step(bs, i, j):
            if bs[i].seq_lens_cpu is None:
                return 0
            i = j
            return bs[i].seq_lens_cpu.max()
        """, {(6, "SG002")}),
    # ... or when a method of the object moves it (`self.advance()` doing `self.idx += 1`,
    # itself or through another method), wherever in the statement or the loop it is called
    "index_attribute_moved_by_method": ("""
        class Runner:
            def step(self):
                if self.batches[self.idx].seq_lens_cpu is None:
                    return 0
                self.advance()
                return self.batches[self.idx].seq_lens_cpu.max()

            def nested(self, ready):
                if self.batches[self.idx].seq_lens_cpu is None:
                    return 0
                if ready:
                    self.skip()
                return self.batches[self.idx].seq_lens_cpu.max()

            def looped(self):
                if self.batches[self.idx].seq_lens_cpu is None:
                    return 0
                total = 0
                for _ in range(3):
                    total += self.batches[self.idx].seq_lens_cpu.sum()
                    self.advance()
                return total

            def kept(self):
                if self.batches[self.idx].seq_lens_cpu is None:
                    return 0
                self.log()
                return self.batches[self.idx].seq_lens_cpu.max()

            def advance(self):
                self.idx += 1

            def skip(self):
                self.advance()

            def log(self):
                self.count = 1
        """, {(7, "SG002"), (14, "SG002"), (21, "SG002")}),
    # ... and keeps holding when something else moves
    "index_attribute_other_moved": ("""
        class Runner:
            def step(self):
                if self.batches[self.idx].seq_lens_cpu is None:
                    return 0
                self.idx_other += 1
                self.id = 3
                return self.batches[self.idx].seq_lens_cpu.max()
        """, set()),
    # ---- a guard that stops holding when a called closure rebinds the object -----------
    "nonlocal_rebind_called": ("""
        def step(b, other):
            def advance():
                nonlocal b
                b = other

            if b.seq_lens_cpu is None:
                return 0
            advance()
            return b.seq_lens_cpu.max()
        """, {(10, "SG002")}),
    # through a second closure that calls the first
    "nonlocal_rebind_called_twice_removed": ("""
        def step(b, other):
            def advance():
                nonlocal b
                b = other

            def tick():
                advance()

            if b.seq_lens_cpu is None:
                return 0
            tick()
            return b.seq_lens_cpu.max()
        """, {(13, "SG002")}),
    # called where the guard is tested: the test is of the new object
    "nonlocal_rebind_in_test": ("""
        def step(b, other):
            def advance():
                nonlocal b
                b = other
                return True

            if b.seq_lens_cpu is not None and advance():
                return b.seq_lens_cpu.max()
            return 0
        """, {(9, "SG002")}),
    # handed out: any later call may run it
    "nonlocal_rebind_escapes": ("""
        def step(b, other, run):
            def advance():
                nonlocal b
                b = other

            hook = advance
            if b.seq_lens_cpu is None:
                return 0
            run(hook)
            return b.seq_lens_cpu.max()
        """, {(11, "SG002")}),
    # the caller's guard no longer holds where it hands the batch on
    "nonlocal_rebind_before_a_call": ("""
        def helper(b):
            return b.seq_lens_cpu.max()


        def caller(b, other):
            def advance():
                nonlocal b
                b = other

            if b.seq_lens_cpu is None:
                return 0
            advance()
            return helper(b)
        """, {(3, "SG002")}),
    # a closure that rebinds another name, or is never called after the guard, changes nothing
    "nonlocal_rebind_other_name": ("""
        def step(b, other):
            count = 0

            def tick():
                nonlocal count
                count += 1

            if b.seq_lens_cpu is None:
                return 0
            tick()
            return b.seq_lens_cpu.max()
        """, set()),
    # ---- reads through a nested function's default argument ---------------------------
    "default_passed_then_read": ("""
        def outer(b):
            def inner(x=b.seq_lens_sum):
                return x + 1
            return inner()
        """, {(4, "SG002")}),
    "default_keyword_only_then_read": ("""
        def outer(b):
            async def inner(*, lens=b.seq_lens_cpu):
                return lens.max()
            return inner
        """, {(4, "SG002")}),
    "default_arithmetic": ("""
        def outer(b):
            def inner(x=b.seq_lens_sum + 1):
                return x
            return inner
        """, {(3, "SG002")}),
    "default_call": ("""
        def outer(b):
            def inner(x=int(b.seq_lens_sum), y=b.seq_lens_cpu.tolist()):
                return x, y
            return inner
        """, {(3, "SG002")}),
    # evaluated where the function is defined: under the guard there
    "default_under_guard": ("""
        def outer(b):
            if b.seq_lens_sum is None:
                return None

            def inner(x=b.seq_lens_sum):
                return x + 1
            return inner
        """, set()),
    # ---- `match` captures of a mirror ---------------------------------------------------
    "match_class_keyword": ("""
        def f(x):
            match x:
                case Batch(seq_lens_cpu=lens):
                    return lens.max()
        """, {(5, "SG002")}),
    "match_class_keyword_nested": ("""
        def f(x):
            match x:
                case Outer(batch=Batch(seq_lens_sum=total)):
                    return total + 1
        """, {(5, "SG002")}),
    # ... of a class whose mirror no store makes None: the pattern names the type
    "match_class_keyword_typed": ("""
        import torch


        class Buffers:
            def __init__(self):
                self.seq_lens_cpu = torch.zeros(3)


        def f(x):
            match x:
                case Buffers(seq_lens_cpu=lens):
                    return lens.max()
        """, set()),
    "match_capture_subject": ("""
        def f(b):
            match b.seq_lens_cpu:
                case lens:
                    return lens.max()
        """, {(5, "SG002")}),
    "match_as_object": ("""
        def f(b):
            match b.seq_lens_cpu:
                case object() as lens:
                    return lens.max()
        """, {(5, "SG002")}),
    "match_sequence_display": ("""
        def f(b, n):
            match (n, b.seq_lens_cpu):
                case (k, lens):
                    return lens.max() + k
        """, {(5, "SG002")}),
    "match_mapping_display": ("""
        def f(b):
            match {"lens": b.seq_lens_cpu, "n": 1}:
                case {"lens": lens}:
                    return lens.max()
        """, {(5, "SG002")}),
    "match_or": ("""
        def f(b):
            match b.seq_lens_cpu:
                case (Tensor() as lens) | (None as lens):
                    return lens.max()
        """, {(5, "SG002")}),
    # a pattern that None cannot match, or a guard on the capture: never None there
    "match_excludes_none": ("""
        def f(x, b):
            match b.seq_lens_cpu:
                case Tensor() as lens:
                    return lens.max()
            match x:
                case Batch(seq_lens_cpu=lens) if lens is not None:
                    return lens.max()
                case Batch(seq_lens_cpu=Tensor() as lens):
                    return lens.max()
        """, set()),
    # a capture rebinds the name: it is no alias of the mirror any more
    "match_capture_rebinds_alias": ("""
        def f(b, x):
            lens = b.seq_lens_cpu
            match x:
                case [*lens]:
                    return len(lens)
        """, set()),
    # a name a capture, a loop or an untyped assignment rebinds is not of the type an
    # earlier assignment gave it (`Safe` never holds None; what else it may hold can)
    "typed_local_rebound": ("""
        import torch


        class Safe:
            def __init__(self):
                self.seq_lens_cpu = torch.zeros(3)


        def captured(x):
            fb = Safe()
            match x:
                case Batch() as fb:
                    pass
            return fb.seq_lens_cpu.max()


        def looped(bs):
            fb = Safe()
            for fb in bs:
                fb.seq_lens_cpu.max()


        def assigned(bs):
            fb = Safe()
            fb = bs[0]
            return fb.seq_lens_cpu.max()


        def kept():
            fb = Safe()
            return fb.seq_lens_cpu.max()
        """, {(15, "SG002"), (21, "SG002"), (27, "SG002")}),
    # ---- a later case runs only where the earlier ones did not match --------------------
    "match_none_case_first": ("""
        class Batch:
            seq_lens_cpu = None


        def captured(b):
            match b:
                case Batch(seq_lens_cpu=None):
                    return 0
                case Batch(seq_lens_cpu=lens):
                    return lens.max()


        def through_subject(b):
            match b:
                case Batch(seq_lens_cpu=None):
                    pass
                case Batch(seq_lens_sum=_):
                    return b.seq_lens_cpu.max()


        def mirror_subject(b):
            match b.seq_lens_cpu:
                case None:
                    return 0
                case lens:
                    return lens.max()
        """, set()),
    # ... but not after a case of another class, one with a guard, or one that failing
    # says nothing of the mirror (another keyword may have failed instead)
    "match_none_case_not_telling": ("""
        class Batch:
            seq_lens_cpu = None


        class Other(Batch):
            pass


        def f(b, flag):
            match b:
                case Other(seq_lens_cpu=None):
                    return 0
                case Batch(seq_lens_cpu=None) if flag:
                    return 0
                case Batch(seq_lens_cpu=None, seq_lens_sum=0):
                    return 0
                case Batch(seq_lens_cpu=lens):
                    return lens.max()


        def g(b, flag):
            match b.seq_lens_cpu:
                case None if flag:
                    return 0
                case lens:
                    return lens.max()
        """, {(19, "SG002"), (27, "SG002")}),
    "splat_mapping_display": ("""
        def build(total):
            return total * 2


        def f(b):
            return build(**{"total": b.seq_lens_sum})
        """, {(7, "SG002")}),
    "splat_dict_call": ("""
        def build(n, total):
            return total * n


        def f(b):
            return build(1, **dict(total=b.seq_lens_sum))
        """, {(7, "SG002")}),
    "splat_sequence_display": ("""
        def build(n, total):
            return total * n


        def f(b):
            return build(1, *[b.seq_lens_sum])
        """, {(7, "SG002")}),
    "splat_tuple_display_first": ("""
        def build(total, n):
            return total * n


        def f(b):
            return build(*(b.seq_lens_sum, 2))
        """, {(7, "SG002")}),
    "splat_mapping_display_later_display": ("""
        def build(total, n=1):
            return total * n


        def f(b):
            return build(**{"total": b.seq_lens_sum, **{}, **{"n": 2}})
        """, {(7, "SG002")}),
    "splat_mapping_in_a_local": ("""
        def build(total, n=1):
            return total * n


        def f(b):
            d = {"total": b.seq_lens_sum}
            return build(**d)


        def g(b):
            kw = dict(total=b.seq_lens_sum, n=2)
            return build(1, **kw)
        """, {(7, "SG002"), (12, "SG002")}),
    # ... but not where the entry may be replaced first, the local rebound or changed, or
    # the mirror guarded where the mapping was built
    "splat_mapping_in_a_local_replaced": ("""
        def build(total, n=1):
            return total * n


        def f(b, extra):
            build(**{"total": b.seq_lens_sum, **extra, "n": 1})
            d = {"total": b.seq_lens_sum}
            d["total"] = 0
            build(**d)
            e = {"total": b.seq_lens_sum}
            e.update(extra)
            build(**e)
            g = {"total": b.seq_lens_sum}
            g = {"total": 0}
            build(**g)
            if b.seq_lens_sum is None:
                return 0
            h = {"total": b.seq_lens_sum}
            b = extra
            return build(**h)
        """, set()),
    # into a parameter the callee does not read, or a position after another splat
    "splat_not_read": ("""
        def build(total, n):
            return n * 2


        def f(b, rest):
            build(**{"total": b.seq_lens_sum, "n": 1})
            build(*rest, *[b.seq_lens_sum])
        """, set()),
    # ---- a chained comparison compares before it tests for None -------------------------
    "chained_comparison_reads": ("""
        def f(b):
            return 0 < b.seq_lens_sum is not None
        """, {(3, "SG002")}),
    "chained_comparison_tests": ("""
        def f(b, c):
            return c is not b.seq_lens_sum is not None
        """, set()),
    # ... and each link runs only where those before it held: `None is not x > 0` is
    # `None is not x and x > 0`
    "chained_comparison_none_first": ("""
        def f(b):
            if None is not b.seq_lens_sum > 0:
                return b.seq_lens_sum + 1
            return 0
        """, set()),
    "chained_comparison_none_after": ("""
        def f(b):
            if 0 < b.seq_lens_sum is not None:
                return 1
            return b.seq_lens_cpu is not None != 2 < b.seq_lens_sum
        """, {(3, "SG002"), (5, "SG002")}),
    # ---- a try whose guard is passed before anything in it can raise --------------------
    "try_guard_first": ("""
        def f(b, work):
            try:
                if b.seq_lens_cpu is None:
                    return 0
                work()
            except ValueError:
                pass
            return b.seq_lens_cpu.max()
        """, set()),
    "try_guard_first_else": ("""
        def f(b, work):
            gpu_only = b.seq_lens_cpu is None
            try:
                if gpu_only:
                    return 0
                work()
            except (ValueError, KeyError) as e:
                print(e)
            else:
                work()
            return b.seq_lens_cpu.max()
        """, set()),
    # ... but not where something before the guard may raise, nor where what follows it
    # rebinds the object before raising, nor where the handler catches what any step raises
    "try_raise_before_guard": ("""
        def f(b, work):
            try:
                work()
                if b.seq_lens_cpu is None:
                    return 0
            except ValueError:
                pass
            return b.seq_lens_cpu.max()
        """, {(9, "SG002")}),
    "try_rebound_after_guard": ("""
        def f(b, other, work):
            try:
                if b.seq_lens_cpu is None:
                    return 0
                if other:
                    b = other
                    work()
            except ValueError:
                pass
            return b.seq_lens_cpu.max()
        """, {(11, "SG002")}),
    "try_truth_test_may_raise": ("""
        def f(b):
            try:
                if not b.seq_lens_cpu:
                    return 0
            except RuntimeError:
                pass
            return b.seq_lens_cpu.max()
        """, {(4, "SG005"), (8, "SG002")}),
    "try_broad_handler": ("""
        def f(b, work):
            try:
                if b.seq_lens_cpu is None:
                    return 0
                work()
            except Exception:
                pass
            return b.seq_lens_cpu.max()
        """, {(9, "SG002")}),
    "try_handler_nulls": ("""
        def f(b, work):
            try:
                if b.seq_lens_cpu is None:
                    return 0
                work()
            except ValueError:
                b.seq_lens_cpu = None
            return b.seq_lens_cpu.max()
        """, {(9, "SG002")}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_read_forms(name):
    source, expected = CASES[name]
    compile(dedent(source), name, "exec")  # each case is Python a program could run
    found = {(d.line, d.code) for d in lint_source(dedent(source))}
    assert found == expected
