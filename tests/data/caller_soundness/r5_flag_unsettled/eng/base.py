class Backend:
    needs_cpu_seq_lens = True

    def forward_extend(self, fb):
        return None
