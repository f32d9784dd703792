from eng import factory
from eng.batch import FB


class Job:
    def execute(self):
        return 1


def run(fb):
    # the factory's runner, called where the mirror is tested first
    runner = factory.make()
    if fb.seq_lens_cpu is not None:
        runner.execute(fb)


def other(thing):
    # `Runner.execute` cannot be called without its batch (a TypeError): this is `Job`'s
    return thing.execute()


def main():
    run(FB())
    other(Job())
