from eng.batch import FB
from eng.sub import FastRunner


def main():
    run = getattr(FastRunner(), "execute", None)
    return run(FB())
