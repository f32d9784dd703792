from deco import on_draft as cache
from m_fb import FB


@cache
def first(fb):
    return fb.seq_lens_cpu[0]  # READ


def g(fb):
    if fb.seq_lens_cpu is not None:
        return first(fb)


def main():
    g(FB([1]))


if __name__ == "__main__":
    main()
