class FB:
    def __init__(self, values=None):
        self.seq_lens_cpu = values


def f(fb, other):
    fb = other
    return fb.seq_lens_cpu[0]  # READ


def g(fb):
    if fb.seq_lens_cpu is not None:
        return f(fb, FB())


def main():
    g(FB([1]))
