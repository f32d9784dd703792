from __future__ import annotations

from typing import Iterator

from seqguard.lint.model import DeclKind
from seqguard.lint.rule import FileContext, Finding, Invalid, Rule, Subject, Valid


class FlagIsAMethod(Rule):
    """Flags a class that defines `needs_cpu_seq_lens` as a plain method.

    Why: the aggregator reads the flag with `getattr(backend, "needs_cpu_seq_lens", True)`
    and tests its truth. A method (even a classmethod returning False) is a bound method
    there, always truthy, so the backend keeps the host sync whatever it returns.

    Fix: make it a class attribute (`needs_cpu_seq_lens = False`), or a `@property` when
    the value depends on the instance.

    Options: `flag-attribute`.
    """

    CODE = "SG008"
    SUBJECT = Subject.CLASS
    NAME = "flag-is-a-method"
    MESSAGE = "`{cls}.{flag}` is a method, which is always truthy; make it an attribute or a @property"
    REASON = "`getattr(backend, \"{flag}\")` gives the bound method, not what it returns"
    VALID = [
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"),
        Valid("class B(AttentionBackend):\n    @property\n    def needs_cpu_seq_lens(self):\n        return False\n"),
        # a property with a setter is still a property: getattr gives its value
        Valid("class B(AttentionBackend):\n    @property\n    def needs_cpu_seq_lens(self):\n"
              "        return self._n\n\n    @needs_cpu_seq_lens.setter\n    def needs_cpu_seq_lens(self, value):\n"
              "        self._n = value\n"),
    ]
    INVALID = [
        Invalid("class B(AttentionBackend):\n    @classmethod\n    def needs_cpu_seq_lens(cls):\n"
                "        return False\n", line=3),
        Invalid("class B:\n    def needs_cpu_seq_lens(self):\n        return False\n", line=2),
        # a lambda class attribute is a function too: a bound method on the instance
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = lambda self: False\n", line=2),
    ]

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        for cls in ctx.index.classes_in(ctx.relpath).values():
            for decl in cls.facts.decls:
                if decl.kind == DeclKind.FUNCTION:
                    yield Finding(decl.line, decl.col, self.MESSAGE.format(cls=cls.name, flag=ctx.flag),
                                  scope=cls.facts.qualname, reason=self.REASON.format(flag=ctx.flag))
