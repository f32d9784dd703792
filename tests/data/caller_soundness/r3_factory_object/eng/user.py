from eng import factory
from eng.batch import FB


def run():
    # the runner comes from a factory: this file names nothing of its class
    runner = factory.make()
    runner.execute(FB())


def main():
    run()
