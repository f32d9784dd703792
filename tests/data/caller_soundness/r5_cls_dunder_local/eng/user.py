from eng.batch import FB
from eng.runner import Runner


def main():
    r = Runner()
    return r.__class__.execute(r, FB())
