from eng.runner import Runner


class FastRunner\
(Runner):
    pass
