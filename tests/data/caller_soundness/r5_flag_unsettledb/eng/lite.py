# seq_lens_cpu (a mention: this file is parsed up front, its flags settled)
from eng import mixins
from eng.reader import Reader

M = mixins.NoMirror


class Lite(M, Reader):
    pass
