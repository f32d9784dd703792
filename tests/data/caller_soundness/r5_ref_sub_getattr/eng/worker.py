from eng.runner import Runner


def step(fb):
    if fb.seq_lens_cpu is None:
        return None
    return Runner().execute(fb)
