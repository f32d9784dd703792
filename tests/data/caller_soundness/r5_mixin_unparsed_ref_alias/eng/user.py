from eng.batch import FB
from eng.impl import Impl


def main():
    return Impl().go(FB())
