import contextlib


class FB:
    def __init__(self, values=None):
        self.seq_lens_cpu = values


@contextlib.contextmanager
def swapped(x):
    yield x


def f(fb, other):
    ok = fb.seq_lens_cpu is not None
    with swapped(other) as fb:
        if ok:
            return fb.seq_lens_cpu[0]  # READ


def g(fb, other):
    if fb.seq_lens_cpu is not None:
        with swapped(other) as fb:
            return fb.seq_lens_cpu[0]  # READ
