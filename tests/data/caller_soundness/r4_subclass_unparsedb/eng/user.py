from eng.batch import FB
from eng.sub import FastRunner


def main():
    fb = FB()
    if fb.seq_lens_cpu is not None:
        return FastRunner().run(fb)
    return None
