class Backend:
    needs_cpu_seq_lens = True
