class FB:
    def __init__(self):
        self.seq_lens_cpu = None


class A:
    def m(self, fb):
        return fb.seq_lens_cpu[0]  # READ

    def o(self, fb):
        return self.__class__.m(self, fb)


def main():
    A().o(FB())
