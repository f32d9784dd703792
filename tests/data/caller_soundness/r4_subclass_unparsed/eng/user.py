from eng.batch import FB
from eng.sub import FastRunner


def main():
    # Runner.run, inherited, on a batch whose mirror is None
    return FastRunner().run(FB())
