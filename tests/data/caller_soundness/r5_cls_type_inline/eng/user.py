from eng.batch import FB
from eng.runner import Runner


def main():
    return type(Runner()).execute(Runner(), FB())
