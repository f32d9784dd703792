class FB:
    def __init__(self):
        self.seq_lens_cpu = None


class Base:
    def run(self, fb):
        return self.hook(fb)


class Mixin:
    def hook(self, fb):
        return fb.seq_lens_cpu.max()  # READ


class Impl(Mixin, Base):
    pass


def warm(fb):
    if fb.seq_lens_cpu is not None:
        Impl().hook(fb)


def main():
    Impl().run(FB())
