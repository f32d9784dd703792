class FB:
    def __init__(self):
        self.seq_lens_cpu = None


class A:
    def __init__(self):
        self.seq_lens_cpu = [1]

    def m(self, fb):
        return fb.seq_lens_cpu[0]  # READ

    def o(self, fb):
        klass = type(self)
        return klass.m(self, fb)


def main():
    A().o(FB())


if __name__ == "__main__":
    main()
