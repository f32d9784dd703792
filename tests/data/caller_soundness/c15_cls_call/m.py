class FB:
    def __init__(self):
        self.seq_lens_cpu = None


class A:
    def m(self, fb):
        return fb.seq_lens_cpu[0]  # READ


    @classmethod
    def run(cls, fb):
        return cls.m(cls(), fb)


def main():
    A.run(FB())
