import contextlib
import torch


class FB:
    def __init__(self):
        self.seq_lens_cpu = None


class Safe:
    def __init__(self, seq_lens_cpu):
        self.seq_lens_cpu = seq_lens_cpu


def f(fb):
    return fb.seq_lens_cpu.max()  # READ


@contextlib.contextmanager
def batch_of(x):
    yield x


def g(other):
    fb = Safe(seq_lens_cpu=torch.zeros(3))
    with batch_of(other) as fb:
        f(fb)


def main():
    g(FB())
