def make_plain():
    from eng.split import Splitter
    return Splitter()
