from base import Base
from mixin import Mixin


class Impl(Mixin, Base):
    pass


def warm(fb):
    if fb.seq_lens_cpu is not None:
        Impl().hook(fb)
