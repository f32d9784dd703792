class Mixin:
    def go(self, fb):
        run = self.execute
        return run(fb)
