from eng.split import Splitter \
    as S


def make_plain():
    return S()
