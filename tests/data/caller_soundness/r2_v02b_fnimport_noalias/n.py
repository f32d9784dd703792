def step(fb):
    from m import f
    return f(fb)
