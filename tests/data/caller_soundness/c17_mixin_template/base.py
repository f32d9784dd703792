class Base:
    def run(self, fb):
        return self.hook(fb)
