"""Answers as values: a reason tree says what clears a question, or what leaves it open,
and what that rests on. The fixpoint builds it, the questions add their leaves, and
`explain` renders it (text and JSON from the same tree); nothing parses it back."""

from __future__ import annotations

import dataclasses
import enum
from typing import Iterator, Optional


class Kind(str, enum.Enum):
    """What a node of a reason tree says; `meaning` is its entry in the published schema,
    `requires` the fields a node of the kind always has (a leaf: its `fact`)."""
    meaning: str
    requires: tuple[str, ...]

    def __new__(cls, value: str, meaning: str, requires: tuple[str, ...] = ("fact",)) -> "Kind":
        kind = str.__new__(cls, value)
        kind._value_ = value
        kind.meaning = meaning
        kind.requires = requires
        return kind

    # leaves that clear: a fact of the engine model at one point, in its own words (`fact`)
    TYPE = "type", "Clears: the object's type never has the attribute None (`fact`)."
    PATH = "path", "Clears: a test on the path rules the skip out (`fact`)."
    IMPLIED = "implied", "Clears: a call on the path does so only where the mirror is present (`fact`)."
    MODES = "modes", "Clears: no mode the skip runs in is possible there (`fact`)."
    BACKEND = "backend", "Clears: it runs inside a backend whose own flag keeps the mirror (`fact`)."
    CAPTURE = "capture", "Clears: CUDA-graph capture code, whose batches are never skipped (`fact`)."
    TESTED = "tested", "Clears: the object the call passes was tested not to be None there (`fact`)."
    COPY = "copy", "Clears: the object was built by a copy of one whose mirror was tested (`fact`)."
    TYPED = "typed", "Clears: the object the call passes has the attribute present by its type (`fact`)."
    CLASS = "class", "Clears: the class is only created where the mirror is kept (`fact`)."
    SYNC_ALLOWED = "sync-allowed", "Clears: a host sync there is not the per-step one (`fact`)."
    NEVER_NONE = "never-none", "Clears: the pull runs only where a parameter is None, which no call passes (`fact`)."
    HOST_VALUE = "host-value", "Clears: what is pulled is a host value, so nothing is copied (`fact`)."
    MODEL = "model", "Clears: a fact of the engine model (`models`) about the code holding it (`fact`)."
    # inner nodes that clear
    CALLS = "calls", ("Clears: every one of `calls` calls of `function` is made where `question` holds; "
                      "`site` is the first, and `rests_on` why it holds."), \
        ("function", "calls", "question", "site", "rests_on")
    CALLER = "caller", "Clears: the call is made in `function`, every call of which holds (`rests_on`).", \
        ("function", "rests_on")
    CLOSURE = "closure", ("Clears: the call is made in a nested function closing over `function`'s "
                          "`argument`, every call of which holds (`rests_on`)."), \
        ("function", "argument", "site", "rests_on")
    CYCLE = "cycle", ("Assumed (`assumed`): a call back into a question still being answered; the calls "
                      "into the cycle decide."), ("function", "assumed")
    # what leaves a question open
    CALL = "call", ("Open: the call at `site` is not known to hold, with `modes` the skip modes still possible "
                    "there; `rests_on` is what is open above it (the calls of `function`, for a nested function "
                    "closing over its `argument`)."), ("site",)
    MODULE_LEVEL = "module-level", "Open: the call is made at module level or in a nested function: not followed.", ()
    DEFERRED = "deferred", ("Open: the call is bound by `functools.partial` (`fact`): the function runs wherever the "
                            "partial is called, which is not followed.")
    DEPTH = "depth", "Open: callers are followed `limit` calls up at most.", ("limit",)
    UNBOUNDED = "unbounded", "Open: the calls of `function` cannot all be found (`fact` says why).", \
        ("function", "fact")
    NO_CALLS = "no-calls", "Open: no call of `function` is found in the project: it is judged on its own.", \
        ("function",)
    CYCLE_ONLY = "cycle-only", ("Open: `function` is reached only from inside its own cycle of calls "
                                "(`rests_on`: the calls round it, each assumed)."), ("function", "rests_on")
    BUDGET = "budget", "Open: the calls above `function` take more than `limit` questions to follow.", \
        ("function", "limit")

def _field(schema: dict, description: str, default=dataclasses.MISSING):
    """A field of `Reason`, with its JSON schema and description for the published
    schema of the tree (docs/schemas/reason-tree.schema.json)."""
    return dataclasses.field(default=default, metadata={"schema": schema, "description": description})


_TEXT = {"type": "string"}
_COUNT = {"type": "integer", "minimum": 1}


@dataclasses.dataclass(frozen=True)
class Site:
    """A call: where it is made, and in which function (`scope`)."""
    relpath: str
    line: int
    scope: str


@dataclasses.dataclass(frozen=True)
class Reason:
    """A node of a reason tree: `holds` when it clears the question asked."""
    kind: Kind = _field({"enum": [k.value for k in Kind]}, "What the node says: one of the kinds.")
    holds: bool = _field({"type": "boolean"}, "True where the node clears the question, False where it leaves "
                                              "it open.")
    fact: str = _field(_TEXT, "A leaf's statement, in the engine model's words.", "")
    function: str = _field(_TEXT, "The function the node is about (its name).", "")
    site: Optional[Site] = _field(
        {"type": "object", "properties": {"path": _TEXT, "line": _COUNT, "scope": _TEXT},
         "required": ["path", "line", "scope"], "additionalProperties": False},
        "The call the node is about: its file (relative to the project root), line, and the function making it.",
        None)
    calls: int = _field(_COUNT, "How many calls of `function` there are (`calls`).", 0)
    limit: int = _field(_COUNT, "How far the callers are followed (`depth`, `budget`).", 0)
    modes: tuple[str, ...] = _field({"type": "array", "items": _TEXT},
                                    "The skip modes still possible at the call (`call`).", ())
    argument: str = _field(_TEXT, "The name a nested function closes over (`closure`, `call`).", "")
    question: str = _field(_TEXT, "What every call is made where (`calls`): the question asked.", "")
    rests_on: tuple["Reason", ...] = _field({"type": "array", "items": {"$ref": "#"}, "minItems": 1},
                                            "What the node rests on: the first reason below it.", ())
    assumed: bool = _field({"const": True}, "It rests only on a call back into a question still being answered.",
                           False)

    def chain(self) -> Iterator["Reason"]:
        """This node and the first reason each rests on, down to a leaf."""
        node: Optional[Reason] = self
        while node is not None:
            yield node
            node = node.rests_on[0] if node.rests_on else None


    def as_json(self) -> dict:
        """The tree as JSON: `kind` and `holds` always, the other fields where set."""
        out: dict = {"kind": self.kind.value, "holds": self.holds}
        for field in ("fact", "function", "calls", "limit", "modes", "argument", "question"):
            value = getattr(self, field)
            if value:
                out[field] = list(value) if isinstance(value, tuple) else value
        if self.site is not None:
            out["site"] = {"path": self.site.relpath, "line": self.site.line, "scope": self.site.scope}
        if self.assumed:
            out["assumed"] = True
        if self.rests_on:
            out["rests_on"] = [r.as_json() for r in self.rests_on]
        return out


def leaf(kind: Kind, fact: str) -> Reason:
    """A fact of the engine model that clears."""
    return Reason(kind, True, fact=fact)


@dataclasses.dataclass(frozen=True)
class Step:
    """One location of a finding's explanation (a SARIF codeFlow location)."""
    relpath: str
    line: int
    col: int                   # 0-based
    message: str
