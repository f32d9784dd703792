from .m import f as read_lens
