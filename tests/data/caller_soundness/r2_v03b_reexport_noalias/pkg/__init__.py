from .m import f
