class FB:
    def __init__(self, values=None):
        self.seq_lens_cpu = values


DRAFT = FB()
