class FB:
    def __init__(self, values=None):
        self.seq_lens_cpu = values


def f(fb):
    return fb.seq_lens_cpu[0]  # READ


def g(fb, spare):
    fb = spare
    return f(fb)


def h(fb):
    if fb.seq_lens_cpu is not None:
        return g(fb, FB())


def main():
    h(FB([1]))
