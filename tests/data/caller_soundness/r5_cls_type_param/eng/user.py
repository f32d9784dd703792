from eng.batch import FB
from eng.runner import Runner


def go(r, fb):
    return type(r).execute(r, fb)


def main():
    return go(Runner(), FB())
