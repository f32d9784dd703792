class FB:
    def __init__(self):
        self.seq_lens_cpu = [3]


def lens(fb):
    yield fb.seq_lens_cpu[0]  # READ


def g(fb):
    if fb.seq_lens_cpu is None:
        return None
    it = lens(fb)
    fb.seq_lens_cpu = None
    return next(it)


def main():
    g(FB())
