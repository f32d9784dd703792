from m import (
    f  # the reader
    as read_lens,
)


def step(fb):
    return read_lens(fb)
