from eng.batch import FB
from eng.runner import Runner


class Fast:
    pass


def main():
    class Fast(Runner):
        pass
    run = Fast().execute
    return run(FB())
