from eng.batch import FB
from eng.lite import Lite


def main():
    assert Lite.needs_cpu_seq_lens is False
    return Lite().forward_extend(FB())
