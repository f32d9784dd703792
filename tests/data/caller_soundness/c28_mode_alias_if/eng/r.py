def plain(fb):
    return fb.seq_lens_cpu[0]  # READ


def direct(fb, other, flag):
    if not fb.forward_mode.is_decode():
        return fb.seq_lens_cpu[0]  # READ


def f(fb, other, flag):
    mode = fb.forward_mode
    if flag:
        fb = other
    if not mode.is_decode():
        return fb.seq_lens_cpu[0]  # READ
