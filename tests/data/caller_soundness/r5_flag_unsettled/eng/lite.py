from eng import mixins
from eng.reader import Reader

M = mixins.NoMirror


class Lite(M, Reader):
    pass
