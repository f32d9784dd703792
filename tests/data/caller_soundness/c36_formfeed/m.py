class FB:
    def __init__(self, values=None):
        self.seq_lens_cpu = values


def first(fb):
    return fb.seq_lens_cpu[0]


def g(fb):
    if fb.seq_lens_cpu is not None:
        return first(fb)


def h(fb):
    n = 1
    return first(fb)


def main():
    h(FB())
