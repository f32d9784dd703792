def step(fb):
    from m import f as read_lens
    return read_lens(fb)
