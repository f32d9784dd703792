import enum


class Mode(enum.IntEnum):
    EXTEND = 1
    DECODE = 2

    def is_decode(self):
        return self == Mode.DECODE
