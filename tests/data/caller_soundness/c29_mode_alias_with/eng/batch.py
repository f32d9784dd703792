class FB:
    def __init__(self, mode, values=None):
        self.forward_mode = mode
        self.seq_lens_cpu = values
