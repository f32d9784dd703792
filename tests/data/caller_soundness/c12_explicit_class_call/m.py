class FB:
    def __init__(self):
        self.seq_lens_cpu = None


class A:
    def __init__(self):
        self.seq_lens_cpu = [1]

    def m(self, fb):
        return fb.seq_lens_cpu[0]  # READ


class B(A):
    def m(self, fb):
        return A.m(self, fb)


def main():
    B().m(FB())
