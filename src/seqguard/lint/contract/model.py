"""The engine model of one run: its three layers over one project index, and the
questions (`lint.questions`) asked of them, one instance each.

- `point.EngineAtPoint`: what holds at a point of the code (layer 1);
- `sites.CallSites`: where a function is called, with each call's path facts (layer 2);
- `fixpoint.Fixpoint`: `why_safe(function, question)` over the calls (layer 3).
A question is a class taking this model (`ask(MirrorPresent)`): a new one needs no
edit here, nor to any other question."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Iterable, TypeVar

from seqguard.config import Config
from seqguard.lint.contract.fixpoint import Fixpoint
from seqguard.lint.contract.point import EngineAtPoint
from seqguard.lint.contract.sites import CallSites

if TYPE_CHECKING:
    from seqguard.lint.index import ProjectIndex

Q = TypeVar("Q")


class Contract:
    """The engine model's layers on one project index, and the questions asked of them."""

    def __init__(self, index: "ProjectIndex", config: Config, whole_project: bool = True) -> None:
        """`whole_project`: the index holds every file of the project. Without it, what
        the files not seen store or call is unknown, and only the code around a read
        (its path, its backend) can clear it."""
        self.index = index
        self.config = config
        self.whole_project = whole_project
        self.point = EngineAtPoint(index, config, whole_project)
        self._questions: dict[type, object] = {}

    @functools.cached_property
    def sites(self) -> CallSites:
        return CallSites(self.point)

    @functools.cached_property
    def fixpoint(self) -> Fixpoint:
        return Fixpoint(self.sites)

    def ask(self, question: type[Q]) -> Q:
        """The one instance of `question` for this run (it keeps what it works out)."""
        found = self._questions.get(question)
        if found is None:
            found = self._questions[question] = question(self)
        return found  # type: ignore[return-value]

    def prepare(self, questions: Iterable[type] = ()) -> None:
        """Build what every judgement reads, before forked judges share it: the point's
        tables, the import index and what each of `questions` builds once (`prepare`)."""
        _ = self.point.nullability, self.point.forced, self.point.modes
        if self.whole_project:
            self.sites.index_imports()
            for question in questions:
                prepare = getattr(self.ask(question), "prepare", None)
                if prepare is not None:
                    prepare()
