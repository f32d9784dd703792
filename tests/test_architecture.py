"""Dependencies run one way (issue 16, item 1): cli -> {lint, codemods, runtime, bench},
codemods -> lint, bench -> runtime; the shared top-level modules (config, fileio,
diagnostics) sit below lint and codemods; runtime stands alone.

Every import of every module is read with `ast`, function-local ones and
`importlib.import_module("...")` with a literal name included, so a lazy import inside
a function cannot hide an upward edge. Inside the layers, no module imports one that
imports it back, round any loop (issue 38): `import_cycles`."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, NamedTuple

import seqguard
from seqguard.diagnostics import CODES, UNREADABLE_CODE
from seqguard.lint.rules import RULES

SRC = Path(seqguard.__file__).resolve().parent.parent

# layer -> the seqguard layers it must not import. A layer is the package under
# `seqguard` (`lint`, `codemods`, ...), or for a top-level module its own name; every
# top-level module but the command line is shared, below lint and codemods.
ENTRY_POINTS = ("cli", "__main__")
SHARED = "shared (top-level module)"
FORBIDDEN = {
    "lint": {"codemods", "cli", "__main__", "runtime", "bench"},
    "codemods": {"cli", "__main__", "runtime", "bench"},
    # An engine imports the runtime without seqguard's tooling (or its configuration).
    "runtime": {"lint", "codemods", "cli", "__main__", "bench", "config", "roots", "fileio", "diagnostics",
                "formats"},
    SHARED: {"lint", "codemods", "runtime", "bench", "cli", "__main__"},
}
# The demo engine uses the runtime's public API and nothing else of seqguard.
ONLY_ALLOWED = {"bench": {"bench", "runtime"}}


class Edge(NamedTuple):
    module: str     # the importing module
    line: int
    target: str     # the imported module, absolute
    names: tuple[str, ...]   # for `from X import a, b`: a, b


def module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, src: Path) -> Iterator[Edge]:
    """Every import in the file, anywhere in it, with relative ones made absolute."""
    name = module_name(path, src)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_bytes(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Edge(name, node.lineno, alias.name, ())
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            names = tuple(alias.name for alias in node.names)
            yield Edge(name, node.lineno, base, names)
            # `from seqguard import lint` imports the package seqguard.lint
            for alias in node.names:
                yield Edge(name, node.lineno, f"{base}.{alias.name}", ())
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called in ("import_module", "__import__"):
                yield Edge(name, node.lineno, node.args[0].value, ())


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "seqguard":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def is_module(target: str, src: Path) -> bool:
    path = src.joinpath(*target.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file() or path.is_dir()


def violations(src: Path) -> tuple[list[str], dict[str, int]]:
    """(one line per forbidden edge, modules per layer) for the package under `src`."""
    problems: list[str] = []
    counts: dict[str, int] = {}
    for path in sorted((src / "seqguard").rglob("*.py")):
        module = module_name(path, src)
        layer = layer_of(module)
        counts[layer] = counts.get(layer, 0) + 1
        kind = SHARED if path.parent == src / "seqguard" and layer not in ENTRY_POINTS else layer
        for edge in imports_of(path, src):
            target_layer = layer_of(edge.target)
            if target_layer is None or target_layer == layer or not is_module(edge.target, src):
                continue
            where = f"{path.relative_to(src)}:{edge.line}: {module} imports {edge.target}"
            if target_layer in FORBIDDEN.get(kind, ()):
                problems.append(f"{where} ({kind} must not import {target_layer})")
            allowed = ONLY_ALLOWED.get(layer)
            if allowed is not None and target_layer not in allowed:
                problems.append(f"{where} ({layer} may import only {', '.join(sorted(allowed))})")
            if layer == "bench" and target_layer == "runtime":
                private = [n for n in (*edge.target.split(".")[2:], *edge.names) if n.startswith("_")]
                if private:
                    problems.append(f"{where}: private {', '.join(private)} (bench uses the runtime's public API)")
    return problems, counts


def import_graph(src: Path) -> dict[str, dict[str, int]]:
    """module -> {module it imports: the line of the first such import}, for every
    module of the package under `src`. Every import counts: module-level, inside a
    function (a lazy import still needs the other module's shape, and only hides the
    cycle from Python), and under `if TYPE_CHECKING:` (a module that names another's
    class for its types depends on that class). An import names the module it spells
    (`from pkg.mod import Name` -> `pkg.mod`; `from pkg import mod` -> `pkg.mod` too),
    not the packages above it, whose `__init__` Python runs first."""
    modules = {module_name(p, src): p for p in (src / "seqguard").rglob("*.py")}
    graph: dict[str, dict[str, int]] = {}
    for module, path in modules.items():
        uses = graph.setdefault(module, {})
        for edge in imports_of(path, src):
            if edge.target in modules and edge.target != module:
                uses.setdefault(edge.target, edge.line)
    return graph


def import_cycles(src: Path) -> list[str]:
    """One line per set of modules that import each other, directly or round a longer
    loop (a strongly connected component of the import graph, Tarjan's walk): its
    files joined by `<->`, then each import inside it (`file:line -> module`)."""
    graph = import_graph(src)
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for used in sorted(graph[module]):
            if used not in order:
                visit(used)
                low[module] = min(low[module], low[used])
            elif used in stack:
                low[module] = min(low[module], order[used])
        if low[module] == order[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                components.append(sorted(component))

    for module in sorted(graph):
        if module not in order:
            visit(module)

    def file_of(module: str) -> str:
        path = src.joinpath(*module.split("."))
        return str((path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).relative_to(src / "seqguard"))

    return sorted(" <-> ".join(file_of(m) for m in component) + ": " + "; ".join(
        f"{file_of(m)}:{graph[m][used]} -> {file_of(used)}" for m in component for used in sorted(graph[m])
        if used in component) for component in components)


def test_no_module_imports_one_that_imports_it_back():
    """Among all modules of the package, function-local and `TYPE_CHECKING` imports
    included (`import_graph` says why)."""
    cycles = import_cycles(SRC)
    assert cycles == []
    # the walk saw the graph: the shared floor's modules use the one below them
    graph = import_graph(SRC)
    assert "seqguard.roots" in graph["seqguard.config"] and "seqguard.roots" in graph["seqguard.fileio"]


def test_the_cycle_walker_finds_planted_cycles(tmp_path):
    """A cycle through a function-local import, one through `if TYPE_CHECKING:`, one
    round three modules; and what is not a cycle: a package importing its own module
    that imports a sibling, a module importing one that imports neither back."""
    src = _plant(tmp_path, {
        "seqguard/__init__.py": "",
        "seqguard/lint/__init__.py": "from seqguard.lint import a\n",
        "seqguard/lint/a.py": "from seqguard.lint.b import judge\n",
        "seqguard/lint/b.py": "def judge():\n    from .a import helper\n    return helper\n",
        "seqguard/lint/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import D\n",
        "seqguard/lint/d.py": "from seqguard.lint import c\n",
        "seqguard/lint/e.py": "import seqguard.lint.f\n",
        "seqguard/lint/f.py": "def g():\n    import importlib\n    return importlib.import_module('seqguard.lint.g')\n",
        "seqguard/lint/g.py": "\n\nfrom .e import x\n",
        "seqguard/lint/h.py": "from seqguard.lint.a import judge\n",
    })
    assert import_cycles(src) == [
        "lint/a.py <-> lint/b.py: lint/a.py:1 -> lint/b.py; lint/b.py:2 -> lint/a.py",
        "lint/c.py <-> lint/d.py: lint/c.py:3 -> lint/d.py; lint/d.py:1 -> lint/c.py",
        "lint/e.py <-> lint/f.py <-> lint/g.py: lint/e.py:1 -> lint/f.py; lint/f.py:3 -> lint/g.py; "
        "lint/g.py:3 -> lint/e.py",
    ]


def test_dependencies_run_one_way():
    problems, counts = violations(SRC)
    assert problems == []
    # The walk really saw the package: every layer, and enough modules to mean it.
    assert sum(counts.values()) >= 60, counts
    assert counts.get("lint", 0) >= 20 and counts.get("codemods", 0) >= 5, counts
    assert counts.get("runtime", 0) + counts.get("bench", 0) >= 20, counts
    assert {"cli", "config", "fileio", "diagnostics"} <= set(counts), counts


def test_lint_codemods_and_the_shared_modules_never_import_torch_or_triton():
    """So `seqguard lint` starts fast on a machine without them (the CLI imports torch
    only inside `bench`)."""
    heavy = []
    for path in sorted((SRC / "seqguard").rglob("*.py")):
        layer = layer_of(module_name(path, SRC))
        if layer in ("runtime", "bench", "cli"):
            continue
        heavy += [f"{path.relative_to(SRC)}:{e.line}: {e.target}" for e in imports_of(path, SRC)
                  if e.target.split(".")[0] in ("torch", "triton")]
    assert heavy == []


def test_a_plain_lint_run_loads_neither_libcst_nor_torch(tmp_path):
    """libcst costs 0.17 s to import (a warm run's whole budget is 0.2 s): only --fix,
    --diff, --add-ignore and the SARIF of a fixable finding need it."""
    import subprocess
    import sys

    (tmp_path / "pyproject.toml").write_text("[tool.seqguard]\n")
    (tmp_path / "a.py").write_text("class B(AttentionBackend):\n    pass\n\ndef f(b):\n    return "
                                   "b.seq_lens_cpu.max()\n")
    probe = ("import sys\nfrom click.testing import CliRunner\nfrom seqguard.cli import main\n"
             "for fmt in ('full', 'concise', 'json', 'github'):\n"
             "    result = CliRunner().invoke(main, ['lint', '--no-cache', '--output-format', fmt, sys.argv[1]])\n"
             "    assert result.exit_code == 1 and 'SG001 [*]' in CliRunner().invoke(main, ['lint', "
             "sys.argv[1]]).stdout\n"
             "print(sorted(m for m in ('libcst', 'torch', 'triton') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True,
                         env={**__import__("os").environ, "PYTHONPATH": str(SRC)}, check=True).stdout
    assert out == "[]\n"


def test_the_renderers_and_the_fix_logic_live_with_lint():
    assert not (SRC / "seqguard" / "formats.py").exists()
    for name in ("formats.py", "fixes.py", "baseline.py", "suppress.py"):
        assert (SRC / "seqguard" / "lint" / name).is_file(), name


_FILE_CALLS = frozenset({"open", "read_text", "read_bytes", "write_text", "write_bytes", "atomic_write", "unlink",
                         "rmtree", "mkdir", "readlines", "unified_diff", "os.replace", "os.rename", "os.remove"})


def test_the_cli_touches_no_file_but_the_report_it_writes():
    """cli.py parses options, calls, prints: every call that opens, reads, writes or
    diffs a file is inside `_write_output` (the report or diff a user asked to have in
    a file); sources, baselines, caches and findings' files are lint's and the
    codemod's business. The check itself is shown to catch a planted read."""
    def offenders(source: str) -> list:
        tree = ast.parse(source)
        found = []
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or function.name == "_write_output":
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Call):
                    name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                    spelled = ast.unparse(node.func)
                    if (name in _FILE_CALLS or spelled in _FILE_CALLS) and not spelled.startswith("sys.stdin"):
                        found.append((function.name, node.lineno, spelled))
        return found

    cli = (SRC / "seqguard" / "cli.py").read_text()
    assert offenders(cli) == []
    planted = cli + "\n\ndef _peek(path):\n    return open(path).read()\n"
    assert [name for name, _, _ in offenders(planted)] == ["_peek"]


def test_the_code_list_the_configuration_validates_against_is_the_rules():
    assert CODES == (UNREADABLE_CODE, *(rule.CODE for rule in RULES))


def _plant(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_walker_finds_planted_upward_imports(tmp_path):
    """The checker itself, on a tree with one of each forbidden edge: none may pass."""
    src = _plant(tmp_path, {
        "seqguard/__init__.py": "",
        "seqguard/cli.py": "from seqguard.lint import runner\nimport seqguard.runtime\n",
        "seqguard/config.py": "def codes():\n    from seqguard.lint.rules import RULES\n    return RULES\n",
        "seqguard/lint/__init__.py": "",
        "seqguard/lint/rules.py": "RULES = []\n",
        "seqguard/lint/runner.py": "def f():\n    from ..codemods import source_text\n",
        "seqguard/lint/late.py": "import importlib\nm = importlib.import_module('seqguard.cli')\n",
        "seqguard/codemods/__init__.py": "",
        "seqguard/codemods/source_text.py": "from seqguard.lint import runner\nfrom seqguard import runtime\n",
        "seqguard/runtime/__init__.py": "from seqguard.diagnostics import Severity\n",
        "seqguard/runtime/ok.py": "from . import _private\n",
        "seqguard/runtime/_private.py": "",
        "seqguard/diagnostics.py": "",
        "seqguard/formats.py": "from seqguard.lint.rules import RULES\n",
        "seqguard/bench/__init__.py": "from seqguard.runtime import _private\nfrom seqguard.config import X\n",
    })
    problems, counts = violations(src)
    expected = [
        "seqguard/bench/__init__.py:1: seqguard.bench imports seqguard.runtime._private: private _private",
        "seqguard/bench/__init__.py:2: seqguard.bench imports seqguard.config (bench may import only",
        "seqguard/codemods/source_text.py:2: seqguard.codemods.source_text imports seqguard.runtime (codemods must not",
        "seqguard/config.py:2: seqguard.config imports seqguard.lint.rules (shared (top-level module) must not "
        "import lint)",
        "seqguard/formats.py:1: seqguard.formats imports seqguard.lint.rules (shared",
        "seqguard/lint/late.py:2: seqguard.lint.late imports seqguard.cli (lint must not import cli)",
        "seqguard/lint/runner.py:2: seqguard.lint.runner imports seqguard.codemods (lint must not import codemods)",
        "seqguard/runtime/__init__.py:1: seqguard.runtime imports seqguard.diagnostics (runtime must not",
    ]
    for start in expected:
        assert any(p.startswith(start) for p in problems), (start, problems)
    # cli may import anything; codemods may import lint; runtime may import itself
    assert not any(p.startswith(("seqguard/cli.py", "seqguard/runtime/ok.py")) for p in problems), problems
    assert not any("codemods imports seqguard.lint" in p for p in problems), problems
    assert counts["lint"] == 4 and counts["bench"] == 1


def test_the_version_is_written_in_one_place_and_the_ci_lints_the_code():
    import tomllib

    from seqguard import __version__

    ROOT = SRC.parent
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "seqguard.__version__"}
    import importlib.metadata
    assert importlib.metadata.version("seqguard") == __version__
    ci = (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    command = "python -m ruff check . && python -m pytest"
    assert command in ci and command in readme
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.splitlines()[0].strip() == "Apache License" and "Version 2.0, January 2004" in license_text
    assert project["project"]["license"] == "Apache-2.0" and project["project"]["license-files"] == ["LICENSE"]


def test_the_layout_names_every_module_and_only_modules_that_exist():
    """docs/architecture.md's Layout block against the tree: a module moved or added
    without the layout following fails here."""
    import re

    root = SRC.parent
    block = (root / "docs" / "architecture.md").read_text().split("## Layout", 1)[1].split("```", 2)[1]
    named, folder = set(), None
    for line in block.splitlines():
        text = line.strip()
        head = re.match(r"^([\w/]+/)\s+(.*)$", text)
        if head and not line.startswith("    "):
            folder = None if not head.group(1).startswith(("src/", "lint/", "presets/", "codemods/", "runtime/",
                                                           "bench/")) else head.group(1)
            text = head.group(2)
        if folder is None:
            continue
        base = "src/seqguard/" + ("" if folder == "src/seqguard/" else folder)
        for piece in re.findall(r"[\w/]*\{[^}]*\}[\w.]*|[\w/.]+", re.sub(r"\(.*?\)", "", text)):
            braces = re.match(r"([\w/]*)\{([^}]*)\}([\w.]*)", piece)
            for name in ([braces.group(1) + x + braces.group(3) for x in braces.group(2).split(",")]
                         if braces else [piece]):
                if name.endswith((".py", ".toml", "/")):
                    named.add(base + name)
    modules = {str(p.relative_to(root)) for p in SRC.rglob("*.py") if p.name not in ("__init__.py", "__main__.py")}
    folders = {n for n in named if n.endswith("/")}
    assert sorted(m for m in modules if m not in named and not any(m.startswith(f) for f in folders)) == []
    assert sorted(n for n in named if not (root / n).exists()) == []
