from pkg import f
from pkg.m import FB


def step(fb):
    return f(fb)
