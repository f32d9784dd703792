"""The rule base: a rule's metadata and its own good and bad examples are class
attributes; `check` turns one file's analysed facts into findings."""

from __future__ import annotations

import dataclasses
import enum
import inspect
from typing import TYPE_CHECKING, ClassVar, Iterator, Mapping, Optional, TypeVar

from seqguard.config import DEFAULT_DEVICE_ATTRIBUTE, DEFAULT_FLAG, Config
from seqguard.diagnostics import Severity
from seqguard.lint.index import CalleeRead, ProjectIndex, ResolvedClass
from seqguard.lint.model import DeepFacts, MirrorAccess, Usage

if TYPE_CHECKING:
    from seqguard.lint.contract.model import Contract

Q = TypeVar("Q")


@dataclasses.dataclass(frozen=True)
class Valid:
    code: str
    model: str = ""           # [tool.seqguard] lines the example is linted under (the engine model)


@dataclasses.dataclass(frozen=True)
class Invalid:
    code: str
    line: int                 # 1-based line of the single expected finding
    fixed: Optional[str] = None  # the source after `--fix`, for fixable rules
    model: str = ""           # [tool.seqguard] lines the example is linted under (the engine model)


@dataclasses.dataclass(frozen=True)
class Finding:
    line: int
    col: int                  # 0-based
    message: str              # what is wrong with the flagged code, short (the rule's MESSAGE)
    scope: str = "<module>"
    fix: Optional[tuple[int, str]] = None  # (line to insert before, text) for `--fix`
    steps: tuple = ()         # the explanation's locations (`contract.reasons.Step`): SARIF codeFlows
    detail: str = ""          # what the baseline key adds to the line (SG001: the value it inherits)
    reason: str = ""          # why it holds, one clause (the rule's REASON): behind --show-reasons
    end_col: Optional[int] = None  # 0-based end of the flagged expression on `line`, when known


@dataclasses.dataclass
class FileContext:
    """What a rule sees of one file: its facts, the resolved project hierarchy, and the
    engine model of the project (built by the runner from the configuration), which
    answers the questions a rule asks (`ask`)."""
    relpath: str
    facts: DeepFacts
    index: ProjectIndex
    contract: "Contract"
    device_attribute: str = DEFAULT_DEVICE_ATTRIBUTE
    flag: str = DEFAULT_FLAG   # the attribute a backend declares (`flag-attribute`)
    # line -> the codes the other rules found there, selected or not, suppressed or not:
    # filled in for the rules that read findings (`Rule.READS_FINDINGS`) only
    fired: Mapping[int, frozenset[str]] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, relpath: str, facts: DeepFacts, index: ProjectIndex, contract: "Contract",
           config: Config) -> "FileContext":
        """The context of a file linted under `config` (its device attribute and flag)."""
        return cls(relpath, facts, index, contract, config.device_attribute, config.flag_attribute)

    def class_of(self, access: MirrorAccess) -> Optional[ResolvedClass]:
        if access.class_qualname is None:
            return None
        return self.index.classes_in(self.relpath).get(access.class_qualname)

    def backend_of(self, access: MirrorAccess) -> Optional[ResolvedClass]:
        """The backend (or configured base) whose body or methods hold `access`."""
        cls = self.class_of(access)
        return cls if cls is not None and (cls.is_backend or cls.is_root) else None

    def backends(self) -> Iterator[ResolvedClass]:
        return (c for c in self.index.classes_in(self.relpath).values() if c.is_backend)

    def ask(self, question: type[Q]) -> Q:
        """The run's instance of a question (`lint.questions`) of the engine model."""
        return self.contract.ask(question)

    def unguarded_reads(self) -> Iterator[tuple[MirrorAccess, Optional[CalleeRead]]]:
        """Reads of a mirror with no None guard: direct ones, and values handed to a
        project function that reads that parameter unguarded (with where it does)."""
        for access in self.facts.accesses:
            if access.guarded:
                continue
            if access.usage == Usage.READ:
                yield access, None
            elif access.usage == Usage.PASS and access.passed_to is not None:
                through = self.index.read_through_call(self.relpath, access)
                if through is not None:
                    yield access, through


def subject_of(access: MirrorAccess) -> str:
    """`lens` (alias of `b.seq_lens_cpu`) or `b.seq_lens_cpu`, quoted, for messages."""
    if access.alias_of is not None:
        return f"`{access.subject}` (alias of `{access.alias_of}`)"
    return f"`{access.subject}`"


def read_words(read: Optional[CalleeRead]) -> str:
    """How a message says the value is read: "is read" where it is, "is passed to
    `f`, which reads it" for a read through a call."""
    return "is read" if read is None else f"is passed to `{read.callee}`, which reads it"


def through_call(read: Optional[CalleeRead]) -> str:
    """"; `f` reads it at path:line" for a read through a call, for reasons."""
    if read is None:
        return ""
    return f"; `{read.callee}` reads it at {read.relpath}:{read.line}"


def span_end(access: MirrorAccess) -> Optional[int]:
    """The 0-based column where the flagged expression ends, when it ends on its line."""
    return access.end_col if access.end_line == access.line else None


class Subject(enum.Enum):
    """What a rule's findings are about, so `explain` shows each finding beside the thing
    it explains."""
    USE = "a use of a mirror"          # a read, a pass, a truthiness test, an assert
    PULL = "a host pull"               # a device-to-host pull of lengths
    CLASS = "a class"                  # a backend's declaration
    MARKER = "a suppression marker"


class Rule:
    CODE: ClassVar[str]
    SUBJECT: ClassVar[Subject]
    NAME: ClassVar[str]
    # What is wrong with the flagged code, as Ruff words it: short, no analysis in it.
    MESSAGE: ClassVar[str]
    # Why the analysis holds the finding (a store, a base, the modes possible there);
    # shown with --show-reasons, always in JSON and SARIF. "" when the message says it all.
    REASON: ClassVar[str] = ""
    SEVERITY: ClassVar[Severity] = Severity.ERROR
    FIXABLE: ClassVar[bool] = False
    VALID: ClassVar[list[Valid]] = []
    INVALID: ClassVar[list[Invalid]] = []
    # A rule about the other rules' findings (SG007: a marker that silenced nothing):
    # it runs after every other rule, with what they found in `ctx.fired`, and no marker
    # silences it (the markers are what it judges).
    READS_FINDINGS: ClassVar[bool] = False
    # The questions of the engine model the rule asks (`lint.questions`): each builds
    # what it needs of the whole project once, before the judging is forked.
    QUESTIONS: ClassVar[tuple[type, ...]] = ()

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        raise NotImplementedError

    @classmethod
    def describe(cls) -> str:
        """The docstring, dedented (the first line has no indentation, the rest does)."""
        return inspect.cleandoc(cls.__doc__ or "")
