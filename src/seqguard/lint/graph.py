"""`seqguard graph`: the attention-backend hierarchy lint resolved, with where each
backend's `needs_cpu_seq_lens` comes from and which ones keep the host sync alive."""

from __future__ import annotations

from typing import Callable, Iterable, Optional

from seqguard.config import DEFAULT_FLAG
from seqguard.lint.index import ProjectIndex, ResolvedClass
from seqguard.lint.model import FlagState


def _nodes(index: ProjectIndex) -> list[ResolvedClass]:
    return sorted((c for c in index.classes.values() if c.is_backend or c.is_root), key=lambda c: c.id)


def _value(cls: ResolvedClass) -> str:
    return {FlagState.CONDITIONAL: "conditional", FlagState.UNKNOWN: "unknown"}.get(cls.flag, str(cls.flag))


def _origin(cls: ResolvedClass) -> str:
    if cls.is_root and cls.flag_source == "default":
        return "base"
    return cls.flag_source


def keeps_sync(cls: ResolvedClass) -> bool:
    """True or conditional: the FutureMap may have to copy lengths every step for it."""
    return cls.flag is not False


def _edges(index: ProjectIndex, nodes: Iterable[ResolvedClass]) -> list[tuple[ResolvedClass, ResolvedClass]]:
    """(parent, child) for every base of a backend that is itself a backend or a root."""
    edges = []
    for cls in nodes:
        for base in cls.bases:
            parent = index.classes.get(base)
            if parent is not None and (parent.is_backend or parent.is_root):
                edges.append((parent, cls))
    return edges


def _children(index: ProjectIndex, nodes: Iterable[ResolvedClass]) -> dict[str, list[ResolvedClass]]:
    children: dict[str, list[ResolvedClass]] = {}
    for parent, child in _edges(index, nodes):
        children.setdefault(parent.id, []).append(child)
    return children


def render_tree(index: ProjectIndex, path_of: Optional[Callable[[str], str]] = None,
                flag: str = DEFAULT_FLAG) -> str:
    """`path_of` turns a root-relative path into the one printed (the CLI prints paths
    relative to the current directory, as lint does)."""
    path_of = path_of or (lambda relpath: relpath)
    nodes = _nodes(index)
    children = _children(index, nodes)
    has_parent = {c.id for kids in children.values() for c in kids}
    lines: list[str] = []

    def walk(cls: ResolvedClass, prefix: str, last: bool, top: bool, seen: set[str]) -> None:
        mark = "  [keeps host sync]" if keeps_sync(cls) and not cls.is_root else ""
        where = f"{path_of(cls.relpath)}:{cls.facts.line}"
        label = f"{cls.name} ({where}): {flag}={_value(cls)}, {_origin(cls)}{mark}"
        lines.append(label if top else f"{prefix}{'└── ' if last else '├── '}{label}")
        if cls.id in seen:
            return
        kids = sorted(children.get(cls.id, []), key=lambda c: c.id)
        child_prefix = "" if top else prefix + ("    " if last else "│   ")
        for i, kid in enumerate(kids):
            walk(kid, child_prefix, i == len(kids) - 1, False, seen | {cls.id})

    roots = [c for c in nodes if c.id not in has_parent]
    for root in roots:
        walk(root, "", True, True, set())
    if not nodes:
        lines.append("no attention backends found (configure backend-bases?)")
    return "\n".join(lines) + "\n"


def _node_ids(nodes: list[ResolvedClass]) -> dict[str, str]:
    """Class name as node id, or its module path too where two backends share a name."""
    names = [c.name for c in nodes]
    return {c.id: "".join(ch if ch.isalnum() else "_" for ch in (c.id if names.count(c.name) > 1 else c.name))
            for c in nodes}


def render_mermaid(index: ProjectIndex, path_of: Optional[Callable[[str], str]] = None,
                   flag: str = DEFAULT_FLAG) -> str:
    nodes = _nodes(index)
    ids = _node_ids(nodes)
    lines = ["graph TD"]
    for cls in nodes:
        lines.append(f'    {ids[cls.id]}["{cls.name}<br/>{flag}={_value(cls)}<br/>{_origin(cls)}"]')
    lines += [f"    {ids[parent.id]} --> {ids[child.id]}" for parent, child in _edges(index, nodes)]
    lines.append("    classDef sync fill:#fde2e1,stroke:#c0392b")
    lines.append("    classDef nosync fill:#e3f4e1,stroke:#27ae60")
    for cls in nodes:
        if not cls.is_root:
            lines.append(f"    class {ids[cls.id]} {'sync' if keeps_sync(cls) else 'nosync'}")
    return "\n".join(lines) + "\n"


def render_dot(index: ProjectIndex, path_of: Optional[Callable[[str], str]] = None,
               flag: str = DEFAULT_FLAG) -> str:
    nodes = _nodes(index)
    ids = _node_ids(nodes)
    lines = ["digraph backends {", "    rankdir=TB;", '    node [shape=box, style="rounded,filled", fillcolor=white];']
    for cls in nodes:
        colour = "white" if cls.is_root else ("#fde2e1" if keeps_sync(cls) else "#e3f4e1")
        label = f"{cls.name}\\n{flag}={_value(cls)}\\n{_origin(cls)}"
        lines.append(f'    {ids[cls.id]} [label="{label}", fillcolor="{colour}"];')
    lines += [f"    {ids[parent.id]} -> {ids[child.id]};" for parent, child in _edges(index, nodes)]
    lines.append("}")
    return "\n".join(lines) + "\n"


# Each takes (index, path_of, flag: the name backends declare, `flag-attribute`); only
# the tree prints paths.
RENDERERS = {"tree": render_tree, "mermaid": render_mermaid, "dot": render_dot}
