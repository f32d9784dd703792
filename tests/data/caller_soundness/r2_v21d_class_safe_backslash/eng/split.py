def decide(args, backends):
    if args.enable_two_batch_overlap:
        return True
    return any(getattr(b, 'needs_cpu_seq_lens', True) for b in backends)


class FB:
    def __init__(self, values=None):
        self.seq_lens_cpu = values


class Splitter:
    def run(self, batch):
        return batch.seq_lens_cpu.sum()  # READ


def make(args):
    if args.enable_two_batch_overlap:
        return Splitter()
