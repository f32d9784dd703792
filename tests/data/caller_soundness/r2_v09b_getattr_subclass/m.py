class FB:
    def __init__(self, values=None):
        self.seq_lens_cpu = values


class Inner:
    def first(self, fb):
        return fb.seq_lens_cpu[0]  # READ


class Runner:
    def run(self, fb):
        return self.first(fb)


class Wrapper(Runner):
    def __init__(self, inner: Inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)


def g(inner: Inner, fb):
    if fb.seq_lens_cpu is not None:
        return inner.first(fb)


def main():
    Wrapper(Inner()).run(FB())


if __name__ == "__main__":
    main()
