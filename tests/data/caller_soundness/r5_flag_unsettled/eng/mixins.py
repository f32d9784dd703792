class NoMirror:
    needs_cpu_seq_lens = False
