# names no mirror: before, never parsed, so its __getattr__ was not seen
class Wrap:
    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)
