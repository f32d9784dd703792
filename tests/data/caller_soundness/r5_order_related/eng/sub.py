from eng.runner import Runner


class FastRunner(  # a runner (faster)
    Runner,
):
    pass
