from eng.batch import FB
from eng.runner import Runner


def main():
    r = Runner()
    return type(r).execute(r, FB())
