from eng.batch import FB
from eng.sub import FastRunner


def main():
    return FastRunner().run(FB())
