import contextlib


@contextlib.contextmanager
def swapped(x):
    yield x


def f(fb, other):
    mode = fb.forward_mode
    with swapped(other) as fb:
        if not mode.is_decode():
            return fb.seq_lens_cpu[0]  # READ


def g(fb, other):
    mode = fb.forward_mode
    try:
        raise ValueError(other)
    except ValueError as fb:
        pass
    for _ in [0]:
        fb = other
    if not mode.is_decode():
        return fb.seq_lens_cpu[0]  # READ


def h(fb, other):
    mode = fb.forward_mode
    match other:
        case fb:
            pass
    if not mode.is_decode():
        return fb.seq_lens_cpu[0]  # READ
