from eng import runner, mixin

R = runner.Runner


class Impl(mixin.Mixin, R):
    pass
