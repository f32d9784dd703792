"""Fallback templates (`fallbacks = { seq_lens_sum = "..." }`): read from the
configuration or the command line, checked to be one expression, substituted where a
read was with its meaning kept, and asked whether they pull a value to the host."""

from __future__ import annotations

import ast
import json
from typing import Iterable, Mapping, Union

from seqguard.config import template_problem
from seqguard.lint.analysis.usage import host_pull


def template_syncs(template: str) -> bool:
    """Whether a fallback template pulls a value to the host (`.cpu()`, `.item()`,
    `.to("cpu")`, `int(...)`, `list(...)`: lint's own test of a pull, so a template
    the codemod uses where a backend opted out is never one SG004 reports).
    Unparsable templates count as syncing (the safe side)."""
    try:
        tree = ast.parse(template.replace("{obj}", "obj").replace("{device}", "seq_lens"), mode="eval")
    except SyntaxError:
        return True
    return any(isinstance(node, ast.Call) and host_pull(node) is not None for node in ast.walk(tree))


def quote(text: str) -> str:
    """A double-quoted Python string literal (the quotes Black and Ruff write)."""
    return json.dumps(text, ensure_ascii=False)


def is_pure(expression: str) -> bool:
    """Evaluating it twice is harmless: names, attributes, constant subscripts."""
    try:
        node = ast.parse(expression, mode="eval").body
    except SyntaxError:
        return False
    return all(isinstance(sub, (ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.Load))
               for sub in ast.walk(node))


def parse_templates(template: Union[None, Mapping[str, str], Iterable[str]]) -> dict[str, str]:
    if template is None:
        return {}
    if isinstance(template, Mapping):
        result = dict(template)
    else:
        result = {}
        for item in template:
            attr, sep, expression = item.partition("=")
            if not sep or not attr.strip() or not expression.strip():
                raise ValueError(f"--template {item!r}: expected ATTR=EXPRESSION, e.g. "
                                 f"'seq_lens_sum={{obj}}.seq_lens.sum()'")
            result[attr.strip()] = expression.strip()
    for attr, expression in result.items():
        problem = template_problem(expression)
        if problem:
            raise ValueError(f"template for {attr}: {problem}")
    return result


# Expressions that bind tighter than any operator around them: substituted as they are.
_ATOMIC = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant, ast.List, ast.Tuple, ast.Dict,
           ast.Set, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def substituted(expression: str) -> str:
    """`expression` as it may stand where a read was: parenthesised unless it is atomic,
    so `{obj}.a - {obj}.b` in `x * 2` keeps its meaning (`(b.a - b.b) * 2`)."""
    try:
        node = ast.parse(expression.strip(), mode="eval").body
    except SyntaxError:
        return f"({expression})"
    if isinstance(node, _ATOMIC):
        return expression.strip()
    return f"({expression.strip()})"
