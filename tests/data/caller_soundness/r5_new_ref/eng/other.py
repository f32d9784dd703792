from eng.runner import Runner


class Other:
    def __new__(cls):
        return Runner()

    def execute(self, fb):
        return 0
