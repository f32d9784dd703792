from fbmod import FB
from impl import Impl


def main():
    Impl().run(FB())
