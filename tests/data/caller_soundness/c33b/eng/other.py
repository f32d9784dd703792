from eng.split import Splitter


def make_plain():
    return Splitter()
