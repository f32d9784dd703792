class FB:
    def __init__(self):
        self.seq_lens_cpu = None


def f(fb):
    return fb.seq_lens_cpu.max()  # READ


def g(fb):
    if fb.seq_lens_cpu is not None:
        f(fb)
