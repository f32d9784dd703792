from eng import base
from eng.util import helper

B = base.Backend


class Reader(B):  # hands fb (and its seq_lens_cpu) to the helper
    def forward_extend(self, fb):
        return helper(fb)
