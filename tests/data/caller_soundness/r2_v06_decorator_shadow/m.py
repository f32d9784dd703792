class FB:
    def __init__(self, values=None):
        self.seq_lens_cpu = values


DRAFT = FB()


def override(fn):
    # a project decorator that happens to be called `override`: it swaps the batch
    def wrapper(fb):
        return fn(DRAFT)
    return wrapper


@override
def first(fb):
    return fb.seq_lens_cpu[0]  # READ


def g(fb):
    if fb.seq_lens_cpu is not None:
        return first(fb)


def main():
    g(FB([1]))


if __name__ == "__main__":
    main()
