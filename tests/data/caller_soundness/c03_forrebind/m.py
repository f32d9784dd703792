import torch


class FB:
    def __init__(self):
        self.seq_lens_cpu = None


class Safe:
    def __init__(self, seq_lens_cpu):
        self.seq_lens_cpu = seq_lens_cpu


def f(fb):
    return fb.seq_lens_cpu.max()  # READ


def g(others):
    fb = Safe(seq_lens_cpu=torch.zeros(3))
    for fb in others:
        f(fb)


def h(other):
    fb = Safe(seq_lens_cpu=torch.zeros(3))
    try:
        raise ValueError(other)
    except ValueError as fb:
        f(fb.args[0])


def main():
    g([FB()])
