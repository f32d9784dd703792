from eng.batch import FB
from eng.runner import Runner
from eng.wrap import Wrap


def main():
    wrapped: Wrap = Wrap(Runner())
    return wrapped.execute(FB())  # Runner.execute, through __getattr__
