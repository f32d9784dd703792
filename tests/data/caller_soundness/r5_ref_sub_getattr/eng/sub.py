from eng import runner

Base = runner.Runner


class FastRunner(Base):
    pass
