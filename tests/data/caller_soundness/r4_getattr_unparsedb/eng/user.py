from eng.batch import FB
from eng.runner import Runner
from eng.wrap import Wrap


def main():
    wrapped: Wrap = Wrap(Runner())
    fb = FB()
    if fb.seq_lens_cpu is None:
        return None
    return wrapped.execute(fb)
