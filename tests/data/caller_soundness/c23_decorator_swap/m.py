import functools


class FB:
    def __init__(self, values=None):
        self.seq_lens_cpu = values


def on_draft_batch(fn):
    @functools.wraps(fn)
    def wrapper(self, fb):
        return fn(self, self.draft_batch)
    return wrapper


class Runner:
    def __init__(self):
        self.draft_batch = FB()

    @on_draft_batch
    def max_len(self, fb):
        return fb.seq_lens_cpu[0]  # READ


def g(fb: FB):
    if fb.seq_lens_cpu is not None:
        return Runner().max_len(fb)


def main():
    g(FB([1]))
