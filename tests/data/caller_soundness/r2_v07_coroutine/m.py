import asyncio


class FB:
    def __init__(self, values=None):
        self.seq_lens_cpu = values


async def first(fb):
    return fb.seq_lens_cpu[0]  # READ


async def agen(fb):
    yield fb.seq_lens_cpu[0]  # READ


async def g(fb):
    if fb.seq_lens_cpu is None:
        return None
    pending = first(fb)
    fb.seq_lens_cpu = None
    return await pending


def main():
    asyncio.run(g(FB([1])))


if __name__ == "__main__":
    main()
