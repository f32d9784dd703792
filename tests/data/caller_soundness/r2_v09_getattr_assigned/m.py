class FB:
    def __init__(self, values=None):
        self.seq_lens_cpu = values


class Inner:
    def first(self, fb):
        return fb.seq_lens_cpu[0]  # READ


def _delegate(self, name):
    return getattr(self.inner, name)


class Wrapper:
    __getattr__ = _delegate

    def __init__(self, inner: Inner):
        self.inner = inner


def g(inner: Inner, fb):
    if fb.seq_lens_cpu is not None:
        return inner.first(fb)


def h(w: Wrapper, fb):
    return w.first(fb)


def main():
    h(Wrapper(Inner()), FB())


if __name__ == "__main__":
    main()
