class FB:
    def __init__(self, seq_lens_cpu=None):
        self.seq_lens_cpu = seq_lens_cpu
