def make_plain():
    from eng.split import Splitter as S
    return S()
