class FB:
    def __init__(self, values=None):
        self.seq_lens_cpu = values


def f(fb, other):
    if fb.seq_lens_cpu is None:
        return None
    print(fb := other)
    return fb.seq_lens_cpu[0]  # READ


def g(fb, other):
    if fb.seq_lens_cpu is None:
        return None
    ok = len(other.seq_lens_cpu or []) > 9 or (fb := other)
    return fb.seq_lens_cpu[0]  # READ


def h(fb, other):
    if fb.seq_lens_cpu is None:
        return None
    x = [fb := o for o in other]
    return fb.seq_lens_cpu[0]  # READ


def main():
    f(FB([1]), FB())
