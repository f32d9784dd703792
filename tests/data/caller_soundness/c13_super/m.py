class FB:
    def __init__(self):
        self.seq_lens_cpu = None


class A:
    def m(self, fb):
        return fb.seq_lens_cpu[0]  # READ


class B(A):
    def m(self, fb):
        return super().m(fb)


class C(A):
    def n(self, fb):
        if fb.seq_lens_cpu is not None:
            return self.m(fb)


def main():
    B().m(FB())
