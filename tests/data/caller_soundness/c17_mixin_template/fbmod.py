class FB:
    def __init__(self):
        self.seq_lens_cpu = None
