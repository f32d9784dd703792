from m import f

LABEL = "＂#"; TABLE = [f]


def step(fb):
    return TABLE[0](fb)
