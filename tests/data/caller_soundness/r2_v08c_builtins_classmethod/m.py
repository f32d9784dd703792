class FB:
    def __init__(self):
        self.seq_lens_cpu = None


class A:
    def __init__(self):
        self.seq_lens_cpu = [1]

    def m(self, fb):
        return fb.seq_lens_cpu[0]  # READ

    @classmethod
    def run(klass, fb):
        k = klass
        return k.m(klass(), fb)


def main():
    A.run(FB())


if __name__ == "__main__":
    main()
