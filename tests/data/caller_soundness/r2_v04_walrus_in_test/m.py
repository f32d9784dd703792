class FB:
    def __init__(self, values=None):
        self.seq_lens_cpu = values


def f(fb, other):
    if fb.seq_lens_cpu is not None and (fb := other):
        return fb.seq_lens_cpu[0]  # READ


def g(fb, other):
    assert fb.seq_lens_cpu is not None and (fb := other)
    return fb.seq_lens_cpu[0]  # READ


def h(fb, other):
    return fb.seq_lens_cpu[0] if fb.seq_lens_cpu is not None and (fb := other) else 0  # READ


def k(fb, other):
    if fb.seq_lens_cpu is not None:
        if (fb := other):
            return fb.seq_lens_cpu[0]  # READ


def main():
    for fn in (f, g, h, k):
        try:
            fn(FB([1]), FB())
        except Exception as e:
            print(fn.__name__, type(e).__name__, e)


if __name__ == "__main__":
    main()
