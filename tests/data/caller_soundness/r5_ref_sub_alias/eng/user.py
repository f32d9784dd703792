from eng.batch import FB
from eng.sub import FastRunner


def main():
    run = FastRunner().execute
    return run(FB())
