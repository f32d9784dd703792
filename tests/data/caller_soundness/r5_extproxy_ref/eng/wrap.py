from unittest import mock


class Spy(mock.Mock):
    pass
