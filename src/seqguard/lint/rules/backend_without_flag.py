from __future__ import annotations

from typing import Iterator

from seqguard.lint.model import flag_words
from seqguard.lint.rule import FileContext, Finding, Invalid, Rule, Subject, Valid


class BackendWithoutFlag(Rule):
    """Flags an attention backend that does not declare `needs_cpu_seq_lens` itself.

    A backend is a class that subclasses a configured base, transitively and across
    modules, or one the aggregator is handed although it subclasses nothing
    (`backend-classes`). A declaration is any way Python lets the class set the
    attribute: its body, an annotation, `self.needs_cpu_seq_lens = ...` or `setattr` in a
    method, an assignment after the class, a property.

    Why: the flag decides whether every scheduler step pays a device-to-host sync.
    A backend that inherits it silently keeps the sync it may not need, or silently
    loses a mirror it reads when a parent opts out.

    Fix: declare it in the class body (`needs_cpu_seq_lens = True` if any method reads
    `seq_lens_cpu`/`seq_lens_sum`, else `False`). `--fix` writes the inherited value
    after the class docstring, making today's behaviour explicit; where the inherited
    value is conditional or unknown there is nothing true to write, and no fix is offered.

    Options: `backend-bases`, `backend-classes`, `flag-attribute`.
    """

    CODE = "SG001"
    SUBJECT = Subject.CLASS
    NAME = "backend-without-flag"
    MESSAGE = "attention backend `{cls}` does not declare `{flag}`"
    REASON = "it inherits {value} ({source})"
    FIXABLE = True
    VALID = [
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n"),
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens: bool\n"),
        Valid("class B(AttentionBackend):\n    def __init__(self):\n        self.needs_cpu_seq_lens = False\n"),
        Valid("class NotABackend(object):\n    pass\n"),
        # every way Python lets a class set the attribute
        Valid("class B(AttentionBackend):\n    def __init__(self):\n        setattr(self, 'needs_cpu_seq_lens', "
              "False)\n"),
        Valid("class B(AttentionBackend):\n    pass\n\n\nB.needs_cpu_seq_lens = False\n"),
        Valid("class B(AttentionBackend):\n    needs_cpu_seq_lens, other = False, 1\n"),
    ]
    INVALID = [
        Invalid(
            "class B(AttentionBackend):\n    '''Doc.'''\n\n    def f(self):\n        pass\n",
            line=1,
            # spaced as Black and `ruff format` write it
            fixed="class B(AttentionBackend):\n    '''Doc.'''\n\n    needs_cpu_seq_lens = True\n\n    def f(self):\n   "
                  "     pass\n",
        ),
        # a class the aggregator is handed although it subclasses no base: no flag is True
        Invalid("class TritonMultiStepDraftBackend:\n    def __init__(self, steps):\n        self.steps = steps\n",
                line=1, model='backend-classes = ["*MultiStepDraftBackend"]\n',
                fixed="class TritonMultiStepDraftBackend:\n    needs_cpu_seq_lens = True\n"
                      "\n    def __init__(self, steps):\n        self.steps = steps\n"),
        # `del` in the body undoes the class's own value: the runtime sees the base's True
        # (not fixable: a line put before the `del` would be deleted too)
        Invalid("class B(AttentionBackend):\n    needs_cpu_seq_lens = False\n    del needs_cpu_seq_lens\n", line=1),
        Invalid(
            "import base as b\nclass A(b.AttentionBackend):\n    needs_cpu_seq_lens = False\nclass C(A):\n    x = 1\n",
            line=4,
            fixed="import base as b\nclass A(b.AttentionBackend):\n    needs_cpu_seq_lens = False\nclass C(A):\n    "
                  "needs_cpu_seq_lens = False\n    x = 1\n",
        ),
    ]

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        for cls in ctx.backends():
            if cls.declares_flag:
                continue
            value = cls.flag
            fix = None
            if isinstance(value, bool) and cls.facts.insert_line is not None:
                fix = (cls.facts.insert_line, " " * cls.facts.insert_indent + f"{ctx.flag} = {value}")
            inherited = f"{flag_words(value)} ({cls.flag_source})"
            yield Finding(cls.facts.line, cls.facts.col,
                          self.MESSAGE.format(cls=cls.name, flag=ctx.flag), scope=cls.facts.qualname, fix=fix,
                          detail=inherited,
                          reason=self.REASON.format(value=flag_words(value), source=cls.flag_source))
