from m import f

LABEL = "x#"; TABLE = [f]


def step(fb):
    return TABLE[0](fb)
