from pkg import read_lens
from pkg.m import FB


def step(fb):
    return read_lens(fb)


def main():
    step(FB())
