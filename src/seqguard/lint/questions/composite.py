"""Does this backend hand its work to others (SG006)? A composite backend (a primary
and a draft, a list of backends) is judged by the backends it holds, not by its own
reads."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

from seqguard.lint.analysis.names import dotted
from seqguard.lint.analysis.source import split_lines

if TYPE_CHECKING:
    from seqguard.lint.contract.model import Contract


class Composite:
    def __init__(self, contract: "Contract") -> None:
        self.index = contract.index

    def delegates(self, cls) -> Optional[str]:
        """The first method of `cls` that hands its work to another object's method of
        the same name (`self.primary.init_forward_metadata(fb)`, `for b in self.backends:
        b.forward(...)`): a composite backend, judged by the backends it holds."""
        prefix = cls.facts.qualname + "."
        source = self.index.source(cls.relpath) or ""
        lines = split_lines(source)  # as Python numbers them (str.splitlines splits at form feeds)
        # only a method whose text calls `.<its own name>(` is parsed to look closer
        methods = [q for q, first, last in self.index.function_spans(cls.relpath)
                   if q.startswith(prefix) and "." not in q[len(prefix):]
                   and any(f".{q[len(prefix):]}(" in line for line in lines[first - 1:last])]
        for qualname, (function, _) in ((q, self.index.functions_of(cls.relpath).get(q, (None, None)))
                                        for q in methods):
            if function is None or not function.args.args:
                continue
            own = function.args.args[0].arg
            for node in ast.walk(function):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == function.name and not function.name.startswith("__")):
                    receiver = node.func.value
                    if isinstance(receiver, ast.Name) and receiver.id == own:
                        continue
                    if isinstance(receiver, ast.Call) and dotted(receiver.func) == "super":
                        continue
                    return qualname
        return None
