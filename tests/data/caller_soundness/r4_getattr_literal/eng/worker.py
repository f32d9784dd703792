from eng.batch import FB
from eng.runner import Runner


def step(fb):
    if fb.seq_lens_cpu is None:
        return None
    return Runner().execute(fb)


def by_name(fb):
    # the method looked up by its literal name: a call of Runner.execute
    return getattr(Runner(), "execute")(fb)


def handed_out(fb):
    run = getattr(Runner(), "execute", None)
    return run(fb)


def main():
    return by_name(FB())
