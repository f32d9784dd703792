from eng.batch import FB
from eng.other import Other


def main():
    run = Other().execute
    return run(FB())
