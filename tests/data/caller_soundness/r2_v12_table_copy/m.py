class FB:
    def __init__(self):
        self.seq_lens_cpu = None


def f(fb):
    return fb.seq_lens_cpu.max()  # READ


def g(fb):
    if fb.seq_lens_cpu is not None:
        HANDLERS["decode"](fb)


HANDLERS = {"decode": f}


def step(fb, mode):
    table = HANDLERS.copy()
    return table[mode](fb)


def main():
    step(FB(), "decode")


if __name__ == "__main__":
    main()
