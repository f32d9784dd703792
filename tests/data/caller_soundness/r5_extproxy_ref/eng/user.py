from eng.batch import FB
from eng.runner import Runner
from eng.wrap import Spy


def main():
    run = Spy(wraps=Runner()).execute
    return run(FB())
