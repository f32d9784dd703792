from m import f \
    as read_lens


def step(fb):
    return read_lens(fb)
