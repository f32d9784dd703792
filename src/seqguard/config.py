"""`[tool.seqguard]` configuration: discovery, validation and CLI overrides.

Every problem is collected (not just the first) and reported as one `ConfigError`
naming the file and key, so a user fixes their config in one pass.
Why one long module: every key's validator sits in one table (`_KEYS`) so the file,
the presets and the command-line options are checked by the same rules."""

from __future__ import annotations

import ast
import dataclasses
import errno
import fnmatch
import functools
import hashlib
import os
import re
import stat
import sys
import types
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from seqguard.diagnostics import CODES, UNREADABLE_CODE
from seqguard.fileio import file_kind, read_file
from seqguard.roots import find_project_root

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEFAULT_BACKEND_BASES = ("AttentionBackend", "BaseAttentionBackend")
DEFAULT_MODE_ATTRIBUTE = "forward_mode"
# The `*` of a condition pattern: any receiver (`*.spec_algorithm.is_none()`).
WILDCARD = "__seqguard_any__"
DEFAULT_MIRRORS = ("seq_lens_cpu", "seq_lens_sum")
DEFAULT_DEVICE_ATTRIBUTE = "seq_lens"
# the attribute each backend declares and the aggregator ORs (SGLang's name)
DEFAULT_FLAG = "needs_cpu_seq_lens"
# Folders on `sys.path`, relative to the project root (Ruff's `src` default): module
# names are computed from them, so `src/pkg/m.py` is `pkg.m`.
DEFAULT_SOURCE_ROOTS = (".", "src")
# Directories no user wants linted; matched on any path component.
DEFAULT_EXCLUDED_DIRS = frozenset(
    {".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", ".eggs", "__pycache__",
     "node_modules", "build", "dist", ".mypy_cache", ".ruff_cache", ".seqguard_cache",
     ".pytest_cache", "site-packages"}
)
# Files above this many bytes are not read (SG000 "too large"). Parsing costs about
# 1.2 s per MB here (a 10 MB file stalled lint 12 s and `codemod --check` 8 min), and
# nothing hand-written comes close: SGLang's largest file is under 0.5 MB, the standard
# library's 0.76 MB (pydoc_data/topics.py), the largest in a typical site-packages
# 3.8 MB (generated data). 4 MiB lets all of those through and bounds the worst case.
DEFAULT_MAX_FILE_SIZE = 4 * 1024 * 1024
# Test code, as pytest and unittest lay it out: a harness that calls a backend with a
# batch of its own making says nothing about the batches the engine hands it.
DEFAULT_TEST_PATHS = ("**/test/**", "**/tests/**", "**/test_*.py", "**/*_test.py", "**/conftest.py")
# Naming conventions the analysis guesses from (SGLang's, and common): a word between
# underscores that says a tensor is a host copy (`seq_lens_cpu_int`, `host_lens`), one
# that says it holds lengths, and text that marks an attribute as device lengths.
DEFAULT_HOST_NAME_WORDS = ("cpu", "host")
DEFAULT_LENGTH_NAME_WORDS = ("len", "lens")
DEFAULT_DEVICE_LENGTH_NAME_PARTS = ("seq_lens",)
CODE_PATTERN = re.compile(r"^SG\d{3}$")
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
NAME_WORD = re.compile(r"^[A-Za-z0-9]+$")      # one word of a snake_case name
NAME_PART = re.compile(r"^[A-Za-z0-9_]+$")     # any run of a name's characters
QUALIFIED_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
# a name inside a module (`pkg.mod.f`): a model fact is about code, which a module holds
IN_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")


class ConfigError(Exception):
    """A configuration problem the user must fix; the message is ready to print."""


@dataclasses.dataclass(frozen=True)
class Condition:
    """A test of the engine model: `test` is a Python expression in which `*` stands for
    any receiver (`*.spec_algorithm.is_none()`, `*.tbo_split_seq_index is not None`,
    `in_capture`); `why` cites the engine code that makes it true."""
    test: str
    why: str = ""
    # the test implies the mirror only where none of these forward modes is possible
    # (a batch in them takes another branch, or returns, before the test)
    outside_modes: tuple[str, ...] = ()

    @property
    def words(self) -> tuple[str, ...]:
        """The name a statement must mention to hold this test: the longest of its
        identifiers (`spec_algorithm` of `*.spec_algorithm.is_none()`; `is_none` is
        everywhere and would make the walk visit every statement)."""
        words = condition_words(self.test)
        return (max(words, key=len),) if words else ()


@dataclasses.dataclass(frozen=True)
class Cite:
    """A piece of the engine's code a model fact rests on: `code` as it is written
    (line breaks and indentation aside), in the code of `within` (a function, method or
    class; "" for the code the fact is about)."""
    code: str
    within: str = ""


@dataclasses.dataclass(frozen=True)
class ModelFact:
    """A fact of the engine that its code cannot tell the analysis (`models`), as
    Infer, Pysa and NullAway ship models: every batch that reaches the code of `about`
    (a function, a method, or every method of a class) is in one of `modes`, or has
    the mirror attributes `present` (never None there: a worker that fills them in). `cites`
    are the pieces of code that make it true (a gate in its own code, or in the code of
    its only callers); the fact is stale, and used for nothing, where one of them no
    longer appears where it is cited. `why` says how the cited code makes it true, with
    its lines."""
    about: str
    modes: tuple[str, ...]
    cites: tuple[Cite, ...]
    why: str
    present: tuple[str, ...] = ()


# A condition is one test a reader takes in at a glance: the preset's longest is 85
# characters and 7 levels deep. The analysis walks a test's tree recursively (matching,
# normalising, the mode interpreter), so these bounds are what keeps a test nested
# hundreds deep from exhausting the stack in the middle of a run (`ast.parse` itself
# gives up near 3,000 levels; Python's recursion limit is 1,000 frames).
MAX_CONDITION_LENGTH = 1000
MAX_CONDITION_DEPTH = 50


class ConditionTooComplex(ValueError):
    """A condition longer or deeper than a test of the engine model can be."""


def parse_condition(test: str) -> "ast.expr":
    """The expression of a condition pattern, `*` as a wildcard name; SyntaxError if it
    is not one expression, ConditionTooComplex past MAX_CONDITION_LENGTH characters or
    MAX_CONDITION_DEPTH levels of nesting."""
    if len(test) > MAX_CONDITION_LENGTH:
        raise ConditionTooComplex(f"expected a test of at most {MAX_CONDITION_LENGTH} characters, "
                                  f"got {len(test)}")
    source = re.sub(r"(?<![\w.])\*(?=\s*\.)|(?<![\w.])\*(?![\w*])", WILDCARD, test.strip())
    try:
        tree = ast.parse(source, mode="eval")
    except (RecursionError, MemoryError):
        raise ConditionTooComplex(f"expected a test at most {MAX_CONDITION_DEPTH} levels deep, "
                                  "got one nested too deeply to parse") from None
    depth = _depth(tree.body)
    if depth > MAX_CONDITION_DEPTH:
        raise ConditionTooComplex(f"expected a test at most {MAX_CONDITION_DEPTH} levels deep, "
                                  f"got one {depth} deep")
    return tree.body


def _depth(node: "ast.AST") -> int:
    """How many levels deep a syntax tree goes (iteratively: it may be deeper than the stack)."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


@functools.lru_cache(maxsize=1024)
def condition_words(test: str) -> tuple[str, ...]:
    try:
        node = parse_condition(test)
    except (SyntaxError, ValueError):   # ConditionTooComplex, a null byte
        return ()
    words = set()
    for part in ast.walk(node):
        if isinstance(part, ast.Name) and part.id != WILDCARD:
            words.add(part.id)
        elif isinstance(part, ast.Attribute):
            words.add(part.attr)
    return tuple(sorted(words))


@dataclasses.dataclass(frozen=True)
class Config:
    root: Path
    source: Path | None = None
    backend_bases: tuple[str, ...] = DEFAULT_BACKEND_BASES
    mirror_attributes: tuple[str, ...] = DEFAULT_MIRRORS
    device_attribute: str = DEFAULT_DEVICE_ATTRIBUTE
    flag_attribute: str = DEFAULT_FLAG   # what a backend declares; the aggregator ORs it
    src: tuple[str, ...] = DEFAULT_SOURCE_ROOTS
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()   # added to `exclude` (Ruff's names and meaning)
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    baseline: Path | None = None
    fallbacks: tuple[tuple[str, str], ...] = ()
    formatter: str = "auto"   # what formats the codemod's edits: auto | ruff | black | none
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    # ---- the engine model: when the mirror can be None (docs/guides/engine-model.md) ----
    preset: str | None = None
    # classes the aggregator counts although they subclass no base (qualified names or
    # globs on the class name: SGLang's `*MultiStepDraftBackend` wrappers)
    backend_classes: tuple[str, ...] = ()
    aggregator: str | None = None          # qualified name of the function that decides the flag
    mode_enum: str | None = None           # qualified name of the forward-mode enum
    mode_attribute: str = DEFAULT_MODE_ATTRIBUTE
    skip_modes: tuple[str, ...] = ()       # members of the enum in which the mirror can be None
    present_when: tuple["Condition", ...] = ()       # tests under which the mirror is always present
    models: tuple["ModelFact", ...] = ()             # facts of the engine its code cannot tell
    sync_allowed_when: tuple["Condition", ...] = ()  # tests under which a host sync is expected (capture)
    device_lengths: tuple[str, ...] = ()   # more device length attributes SG004 watches (`extend_prefix_lens`)
    capture_functions: tuple[str, ...] = ()  # globs of function names that run only at CUDA-graph capture
    # naming conventions the analysis guesses from (a name that says what its value is)
    host_name_words: tuple[str, ...] = DEFAULT_HOST_NAME_WORDS      # `seq_lens_cpu_int`, `host_lens`
    length_name_words: tuple[str, ...] = DEFAULT_LENGTH_NAME_WORDS  # `host_lens`, `cpu_len`
    device_length_name_parts: tuple[str, ...] = DEFAULT_DEVICE_LENGTH_NAME_PARTS  # `meta.seq_lens_dev`
    # test harnesses: their calls are not callers of the code they test (linted as ever)
    test_paths: tuple[str, ...] = DEFAULT_TEST_PATHS
    # (field, "file" | "option" | "preset"): who gave each value set by the file, the
    # command line or the preset (the last one that did), so that the engine-model check
    # (`lint.contract.model_names`) names the right place and holds a preset's name that
    # an older release lacks to a warning, not an error. Two configs that set the same
    # values are equal whoever gave them; the result cache keys on repr(), origins included.
    origins: tuple[tuple[str, str], ...] = dataclasses.field(default=(), compare=False)

    @property
    def analysis_fingerprint(self) -> str:
        """What the per-file facts depend on (the keys marked `facts` in the table); a
        change invalidates the cache. A condition counts whole, though the walk reads only
        its words: editing a `why` costs one cold run, and no mark can be too coarse to
        leave the cache stale."""
        key = repr(tuple(getattr(self, field) for field in FACT_FIELDS)).encode()
        return hashlib.blake2b(key, digest_size=8).hexdigest()

    @property
    def condition_words(self) -> tuple[str, ...]:
        """Names whose tests the walk must see even where no mirror is mentioned: the
        forward-mode attribute and every name in a stated condition."""
        words = {self.mode_attribute} if self.mode_enum else set()
        for condition in (*self.present_when, *self.sync_allowed_when):
            words.update(condition.words)
        return tuple(sorted(words))

    def is_code_enabled(self, code: str, relpath: str) -> bool:
        if code == UNREADABLE_CODE:
            return True  # a file that cannot be read is always said
        if self.select and not matches_code(code, self.select):
            return False
        if matches_code(code, self.ignore):
            return False
        for pattern, codes in self.per_file_ignores:
            if _glob_match(relpath, pattern) and matches_code(code, codes):
                return False
        return True

    def is_test_path(self, relpath: str) -> bool:
        """Whether `relpath` is test code (`test-paths`): a call made there does not
        count among the callers of the project function it calls."""
        return any(_path_glob_match(relpath, p) for p in self.test_paths)

    def is_path_included(self, relpath: str) -> bool:
        return self.exclusion(relpath) is None

    def exclusion(self, relpath: str) -> tuple[str, str] | None:
        """(key, pattern) that skips `relpath` (root-relative); None when it is included.
        For `include`, the pattern is every include pattern (none matched)."""
        if self.include and not any(_glob_match(relpath, p) for p in self.include):
            return "include", ", ".join(self.include)
        for key, patterns in (("exclude", self.exclude), ("extend-exclude", self.extend_exclude)):
            hit = next((p for p in patterns if _glob_match(relpath, p)), None)
            if hit is not None:
                return key, hit
        return None

    def __post_init__(self) -> None:
        # each key's validator sees its own value only; this pair can only be judged
        # together, once the file, the preset and the command line are merged
        if self.device_attribute in self.mirror_attributes:
            raise ConfigError(f"{self.given_at('mirror_attributes')}: holds {self.device_attribute!r}, the device "
                              f"attribute ({self.given_at('device_attribute')}), whose tensor is never None; a mirror "
                              f"attribute names its host copy (seq_lens_cpu): remove it from one of the two")

    def given_at(self, field: str, origin: str | None = None) -> str:
        """Where a field's value was written, as an error names it. `origin`: who gave
        it, when another field's origin decides (default: the field's own)."""
        key = field.replace("_", "-")
        origin = origin or dict(self.origins).get(field)
        if origin is None or origin == "default":
            return f"the default {key}"
        if origin == "option" and field in OPTION_KEYS:
            return OPTION_KEYS[field][1]
        if origin == "preset":
            return f"preset {self.preset}: {key}"
        return f"{self.source}: [tool.seqguard] {key}" if self.source else f"[tool.seqguard] {key}"


def matches_code(code: str, patterns: Iterable[str]) -> bool:
    """`code` is named by one of `patterns` (a code, a prefix of it, or ALL)."""
    return any(p == "ALL" or code.startswith(p) for p in patterns)


def _path_glob_match(relpath: str, pattern: str) -> bool:
    """A glob over '/'-separated paths as shells with globstar read it: `**` is any
    number of folders, every other part is an `fnmatch` pattern of one name (`*`, `?`,
    `[...]` stay inside it): `**/test/**` matches `pkg/test/kit.py`, `**/test_*.py` does
    not match `pkg/test_data/x.py`. Part by part, so no pattern backtracks for long."""
    parts, globs = relpath.split("/"), pattern.split("/")
    # reachable[j]: the first i parts of the path are matched by the first j globs
    reachable = [True] + [False] * len(globs)
    for j, glob in enumerate(globs):
        if glob == "**":
            reachable[j + 1] = reachable[j]
    for part in parts:
        step = [False] * (len(globs) + 1)
        for j, glob in enumerate(globs):
            if not reachable[j] and not (glob == "**" and step[j]):
                continue
            if glob == "**":
                step[j + 1] = step[j + 1] or reachable[j] or step[j]
                step[j] = step[j] or reachable[j]  # `**` takes this part too
            elif reachable[j] and fnmatch.fnmatchcase(part, glob):
                step[j + 1] = True
        for j, glob in enumerate(globs):  # `**` may also take nothing
            if glob == "**" and step[j]:
                step[j + 1] = True
        reachable = step
    return reachable[-1]


def _glob_match(relpath: str, pattern: str) -> bool:
    """Glob on '/'-separated paths; `dir/**` matches everything below dir."""
    if pattern.endswith("/**"):
        prefix = pattern[:-3]
        return relpath == prefix or relpath.startswith(prefix + "/") or fnmatch.fnmatch(relpath, pattern)
    return fnmatch.fnmatch(relpath, pattern) or fnmatch.fnmatch(relpath, "*/" + pattern)


# key -> (field name, validator); validators return (value, problem or None).
def _string_list(value: Any, *, pattern: re.Pattern[str] | None = None, what: str = "string",
                 nonempty: bool = False) -> tuple[Any, str | None]:
    if not isinstance(value, list):
        return None, f"expected a list of strings, got {type(value).__name__}"
    wrong = next((i for i, v in enumerate(value) if not isinstance(v, str)), None)
    if wrong is not None:
        item = value[wrong]
        return None, f"expected a list of strings, got {type(item).__name__} {item!r} at entry {wrong + 1}"
    if nonempty and not value:
        return None, f"expected at least one {what}, got an empty list"
    if pattern is not None:
        bad = [v for v in value if not pattern.match(v)]
        if bad:
            return None, f"expected {what}s, got {bad[0]!r}"
    return tuple(value), None


def known_codes() -> tuple[str, ...]:
    """Every code seqguard reports: SG000 (unreadable file) and each rule's."""
    return CODES


def parse_codes(values: Iterable[str]) -> tuple[tuple[str, ...], list[str]]:
    """Normalise codes or prefixes (case-insensitive: `sg001` is `SG001`) and return
    (codes, the ones that name nothing). A prefix is valid when it starts at least one
    real code, so `SG00` is fine and `SG9` or `E501` (another tool's code) is not."""
    codes = known_codes()
    parsed, unknown = [], []
    for value in values:
        code = value.strip().upper()
        if code and (code == "ALL" or any(c.startswith(code) for c in codes)):
            parsed.append(code)
        else:
            unknown.append(value)
    return tuple(parsed), unknown


def unknown_codes_message(unknown: Sequence[str]) -> str:
    names = ", ".join(repr(u) for u in unknown)
    return (f"expected rule codes or prefixes like 'SG002', 'SG00' or 'ALL', got {names}; "
            f"valid codes: {', '.join(known_codes())}")


def _codes(value: Any) -> tuple[Any, str | None]:
    codes, problem = _string_list(value)
    if problem:
        return None, problem
    parsed, unknown = parse_codes(codes)
    if unknown:
        return None, unknown_codes_message(unknown)
    return parsed, None


def _identifier(value: Any) -> tuple[Any, str | None]:
    if not isinstance(value, str) or not IDENTIFIER.match(value):
        return None, f"expected an attribute name, got {value!r}"
    return value, None


def _per_file_ignores(value: Any) -> tuple[Any, str | None]:
    if not isinstance(value, dict):
        return None, f"expected a table of glob = [codes], got {type(value).__name__}"
    out = []
    for pattern, codes in value.items():
        parsed, problem = _codes(codes)
        if problem:
            return None, f"{pattern!r}: {problem}"
        out.append((pattern, parsed))
    return tuple(out), None


def _path(value: Any) -> tuple[Any, str | None]:
    if not isinstance(value, str) or not value:
        return None, f"expected a file path, got {value!r}"
    return value, None


def _source_roots(value: Any) -> tuple[Any, str | None]:
    roots, problem = _string_list(value)
    if problem:
        return None, problem
    bad = [r for r in roots if not r or Path(r).is_absolute() or ".." in Path(r).parts]
    if bad:
        return None, f"expected folders relative to the project root, got {bad[0]!r}"
    return roots, None


FORMATTERS = ("auto", "ruff", "black", "none")


def _formatter(value: Any) -> tuple[Any, str | None]:
    if value not in FORMATTERS:
        return None, f"expected one of {', '.join(FORMATTERS)}, got {value!r}"
    return value, None


def _fallbacks(value: Any) -> tuple[Any, str | None]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        return None, "expected a table of attribute = \"template using {obj}\""
    for attr, template in value.items():
        if not IDENTIFIER.match(attr):
            return None, f"expected attribute names as keys, got {attr!r}"
        problem = template_problem(template)
        if problem:
            return None, f"{attr!r}: {problem}"
    return tuple(sorted(value.items())), None


# What a fallback template may name besides Python: the object the mirror hangs on,
# and the device attribute (`{obj}.{device}.sum().item()`).
TEMPLATE_PLACEHOLDERS = ("obj", "device")
# A template is evaluated where the read was: a generator, a coroutine, a closure or an
# assignment there would change what the function is, not just the value.
_TEMPLATE_FORBIDDEN = {ast.Yield: "yield", ast.YieldFrom: "yield from", ast.Await: "await",
                       ast.Lambda: "lambda", ast.NamedExpr: "an assignment expression (:=)"}


def template_problem(template: str) -> str | None:
    """Why `template` cannot stand in for a mirror read, or None: it must be one Python
    expression using {obj}, with no other placeholder and nothing that changes what the
    enclosing function is."""
    if "{obj}" not in template:
        return f"the template must use {{obj}} (the object the mirror hangs on), got {template!r}"
    try:
        text = template.format(**{name: name for name in TEMPLATE_PLACEHOLDERS})
    except (KeyError, IndexError, ValueError, AttributeError, TypeError) as e:
        detail = f"unknown placeholder {{{e.args[0]}}}" if isinstance(e, KeyError) else \
            "unbalanced { or }" if isinstance(e, ValueError) else "a placeholder with a field or index"
        return f"{detail} in {template!r}; use {{obj}} (and {{device}}), and double a literal brace"
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        return f"{template!r} is not one Python expression ({e.msg}); write e.g. \"{{obj}}.seq_lens.sum().item()\""
    except (ValueError, RecursionError, MemoryError):
        return f"{template!r} is not one Python expression"
    for node in ast.walk(tree):
        for kind, name in _TEMPLATE_FORBIDDEN.items():
            if isinstance(node, kind):
                return f"{template!r} uses {name}; a template must be a plain expression"
    return None


GLOB_CLASS_NAME = re.compile(r"^[A-Za-z_*?][A-Za-z0-9_*?]*(\.[A-Za-z_*?][A-Za-z0-9_*?]*)*$")


def _qualified(value: Any) -> tuple[Any, str | None]:
    if not isinstance(value, str) or not QUALIFIED_IDENTIFIER.match(value):
        return None, f"expected a qualified name like pkg.module.Name, got {value!r}"
    return value, None


def _present_conditions(value: Any) -> tuple[Any, str | None]:
    return _conditions(value, outside_modes=True)


def _conditions(value: Any, outside_modes: bool = False) -> tuple[Any, str | None]:
    """A list of tests: strings, or tables `{ test = "...", why = "..." }` (a preset
    cites the engine line behind each in `why`); `present-when` entries may also say
    `outside-modes`."""
    if not isinstance(value, list):
        return None, f"expected a list of conditions, got {type(value).__name__}"
    out = []
    for i, item in enumerate(value):
        modes: tuple[str, ...] = ()
        if isinstance(item, str):
            test, why = item, ""
        elif isinstance(item, dict) and isinstance(item.get("test"), str) \
                and set(item) <= {"test", "why", *(("outside-modes",) if outside_modes else ())} \
                and isinstance(item.get("why", ""), str):
            test, why = item["test"], item.get("why", "")
            listed = item.get("outside-modes", [])
            if not isinstance(listed, list) or not all(isinstance(m, str) and IDENTIFIER.match(m) for m in listed):
                return None, (f"entry {i + 1}: `outside-modes` must be a list of enum member names, "
                              f"got {listed!r}")
            modes = tuple(listed)
        else:
            also = ", `outside-modes`" if outside_modes else ""
            return None, (f"entry {i + 1}: expected a test string or a table with `test` (and `why`{also}), "
                          f"got {item!r}")
        try:
            parse_condition(test)
        except ConditionTooComplex as e:
            return None, f"entry {i + 1}: {e}; write one short test per entry"
        except (SyntaxError, ValueError) as e:
            return None, (f"entry {i + 1}: {test!r} is not a Python expression ({getattr(e, 'msg', e)}); "
                          "write a test such as \"*.spec_algorithm.is_none()\"")
        out.append(Condition(test.strip(), why, modes))
    return tuple(out), None


_MODEL_FACT_KEYS = ("about", "modes", "cites", "why")
_MODEL_FACT_CLAIMS = ("modes", "present")   # what a fact says: one of them


def _model_facts(value: Any) -> tuple[Any, str | None]:
    """A list of tables `{ about = "pkg.mod.Class.method", modes = [...], cites = [...],
    why = "..." }`, every key required: a fact without the code it rests on cannot be
    checked against the next release."""
    if not isinstance(value, list):
        return None, f"expected a list of facts (tables), got {type(value).__name__}"
    out = []
    for i, item in enumerate(value):
        where = f"entry {i + 1}"
        if not isinstance(item, dict):
            return None, f"{where}: expected a table with about, modes (or present), cites, why, got {item!r}"
        missing = [k for k in ("about", "cites", "why") if k not in item]
        extra = sorted(set(item) - {*_MODEL_FACT_KEYS, *_MODEL_FACT_CLAIMS})
        claims = [k for k in _MODEL_FACT_CLAIMS if k in item]
        if missing or extra or len(claims) != 1:
            said = f"missing {', '.join(missing)}" if missing else f"unknown key {', '.join(extra)}" if extra else \
                "expected one of modes, present"
            return None, f"{where}: {said}; a fact has about, modes (or present), cites, why"
        about, cites, why = item["about"], item["cites"], item["why"]
        modes, present = item.get("modes", []), item.get("present", [])
        if "present" in item:
            if not isinstance(present, list) or not present or not all(isinstance(m, str) and IDENTIFIER.match(m)
                                                                       for m in present):
                return None, f"{where}: present: expected a non-empty list of mirror attributes, got {present!r}"
        if not isinstance(about, str) or not IN_MODULE.match(about):
            return None, f"{where}: about: expected a qualified name like pkg.module.Class.method, got {about!r}"
        if "modes" in item and (not isinstance(modes, list) or not modes
                                or not all(isinstance(m, str) and IDENTIFIER.match(m) for m in modes)):
            return None, f"{where}: modes: expected a non-empty list of enum member names, got {modes!r}"
        parsed = _cites(cites)
        if parsed is None:
            return None, (f"{where}: cites: expected a non-empty list of pieces of code that make the fact true: "
                          f"a string (in {about}'s code) or a table {{ in = \"pkg.module.caller\", code = \"...\" }}, "
                          f"got {cites!r}")
        if not isinstance(why, str) or not why.strip():
            return None, f"{where}: why: expected how the cited code makes it true (file:line), got {why!r}"
        out.append(ModelFact(about, tuple(modes) if "modes" in item else (), parsed, why.strip(), tuple(present)))
    return tuple(out), None


def _cites(value: Any) -> Optional[tuple[Cite, ...]]:
    if not isinstance(value, list) or not value:
        return None
    out = []
    for item in value:
        if isinstance(item, str) and item.strip():
            out.append(Cite(item.strip()))
        elif isinstance(item, dict) and set(item) == {"in", "code"} and isinstance(item["in"], str) \
                and IN_MODULE.match(item["in"]) and isinstance(item["code"], str) \
                and item["code"].strip():
            out.append(Cite(item["code"].strip(), item["in"]))
        else:
            return None
    return tuple(out)


# Larger than any source file anyone reads whole into memory (and than an index-sized int).
MAX_MAX_FILE_SIZE = 1 << 32


def _byte_count(value: Any) -> tuple[Any, str | None]:
    if type(value) is not int or not 0 < value <= MAX_MAX_FILE_SIZE:
        return None, (f"expected a number of bytes from 1 to {MAX_MAX_FILE_SIZE} (4 GiB; e.g. "
                      f"{DEFAULT_MAX_FILE_SIZE}), got {value!r}")
    return value, None


@dataclasses.dataclass(frozen=True)
class Key:
    """One `[tool.seqguard]` key: the Config field it sets, the validator that checks
    it, and what the reference says of it. docs/configuration.md and
    seqguard.schema.json are generated from these rows (scripts/generate_docs.py;
    tests/test_docs.py fails when either is stale), so the page, the schema and the
    checks cannot drift apart. The default is the Config field's."""
    field: str
    validate: Callable[[Any], tuple[Any, Optional[str]]]
    type: str                       # for the reader: "list of qualified class names"
    # the JSON schema of a value (types and names; the validator checks the rest), or a
    # function that makes it when that needs more than constants (the bundled presets)
    schema: Mapping[str, Any] | Callable[[], Mapping[str, Any]]
    doc: str                        # Markdown
    example: str                    # a TOML value the validator accepts
    section: str
    # The marks the views below are derived from, so that a new key cannot be left out
    # of one. `facts`: the per-file walk reads this value (its cached facts depend on
    # it: `Config.analysis_fingerprint`). `preset`: an engine model (a preset) may set
    # it. `option`: the command-line option that replaces it, checked by `validate`
    # (`--preset` and `--extend-exclude` are read their own way: a path relative to the
    # current directory, an addition).
    facts: bool = False
    preset: bool = False
    option: Optional[str] = None

    def json_schema(self) -> Mapping[str, Any]:
        return self.schema() if callable(self.schema) else self.schema


SECTION_FINDINGS = "Which findings are reported"
SECTION_FILES = "Which files are read"
SECTION_CODEMOD = "The codemod"
SECTION_MODEL = "The engine model"


def _string_schema(pattern: Optional[re.Pattern[str]] = None) -> dict[str, Any]:
    return {"type": "string", **({"pattern": pattern.pattern} if pattern is not None else {})}


def _list_schema(pattern: Optional[re.Pattern[str]] = None) -> dict[str, Any]:
    return {"type": "array", "items": _string_schema(pattern)}


def _codes_schema() -> dict[str, Any]:
    """What `parse_codes` accepts: a prefix of a known code or ALL, any case, spaces around."""
    prefixes = sorted({code[:i] for code in known_codes() for i in range(1, len(code) + 1)} | {"ALL"})
    spelled = ("".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in p) for p in prefixes)
    return {"type": "array", "items": {"type": "string", "pattern": rf"^\s*(?:{'|'.join(spelled)})\s*$"}}


def _condition_schema(outside_modes: bool) -> dict[str, Any]:
    table = {"test": {"type": "string", "description": "A Python expression; `*` stands for any receiver."},
             "why": {"type": "string", "description": "The engine code that makes it true (file:line)."}}
    if outside_modes:
        table["outside-modes"] = {**_list_schema(IDENTIFIER), "description": "Forward modes the test holds outside."}
    return {"type": "array", "items": {"anyOf": [
        {"type": "string"},
        {"type": "object", "properties": table, "required": ["test"], "additionalProperties": False}]}}


FUNCTION_GLOB = re.compile(r"^[A-Za-z_*?][A-Za-z0-9_*?]*$")
# a root-relative folder: not absolute, no `..` part
SOURCE_ROOT = re.compile(r"^(?!/)(?!(?:.*/)?\.\.(?:/|$)).+$")

_KEYS: dict[str, Key] = {
    # ---- which findings ----
    "select": Key("select", _codes, "list of codes or prefixes", _codes_schema(), (
        "Report only these codes: a code (`SG002`), a prefix (`SG00`) or `ALL`, case-insensitive. A value that "
        "names no seqguard code (`SG9`, another tool's `E501`) is an error that lists the valid codes. Empty: "
        "every code. `--select` replaces it for one run. SG000 (a file that cannot be read) is always reported."),
        '["SG"]', SECTION_FINDINGS),
    "ignore": Key("ignore", _codes, "list of codes or prefixes", _codes_schema(), (
        "Never report these codes or prefixes (spelled as for `select`). `--ignore` replaces it for one run."),
        '["SG006"]', SECTION_FINDINGS),
    "per-file-ignores": Key("per_file_ignores", _per_file_ignores, "table of glob = list of codes",
                            {"type": "object", "additionalProperties": _codes_schema()}, (
        "Codes not reported in the files a glob matches (globs as for `exclude`)."),
        '{ "sglang/srt/hardware_backend/*" = ["SG002"] }', SECTION_FINDINGS),
    "baseline": Key("baseline", _path, "path", {"type": "string", "minLength": 1}, (
        "A baseline file (relative to the project root): the findings it records are not reported, so a "
        "run reports only new ones. `seqguard lint --write-baseline FILE` writes the file and sets this key; "
        "a baseline named here that does not exist is an error (exit 2). See the adoption guide."),
        '"seqguard-baseline.json"', SECTION_FINDINGS),
    # ---- which files ----
    "src": Key("src", _source_roots, "list of folders", _list_schema(SOURCE_ROOT), (
        "Source roots, relative to the project root: module names are computed as the import system does with "
        "these folders on `sys.path` (Ruff's `src`), so `src/pkg/m.py` is `pkg.m`. Every folder below a root is "
        "a package, with or without `__init__.py`."),
        '[".", "src"]', SECTION_FILES),
    "include": Key("include", _string_list, "list of globs", _list_schema(), (
        "Check only the files one of these globs matches (root-relative paths; empty: every Python file). The "
        "whole tree is still read for class hierarchies and callers."),
        '["sglang/srt/**"]', SECTION_FILES),
    "exclude": Key("exclude", _string_list, "list of globs", _list_schema(), (
        "Files not checked: globs on the root-relative path (`gen/**` is everything below `gen`, `*_pb2.py` a "
        "name at any depth). `--exclude` replaces it. `.git`, `.venv`, `venv`, `build`, `dist`, "
        "`__pycache__`, `site-packages` and other tool folders are always skipped. A path named on the command "
        "line that an exclusion skips gets one warning line."),
        '["sglang/test/**"]', SECTION_FILES, option="--exclude"),
    "extend-exclude": Key("extend_exclude", _string_list, "list of globs", _list_schema(), (
        "Globs added to `exclude` (`--extend-exclude` adds more)."),
        '["**/*_pb2.py"]', SECTION_FILES),
    "max-file-size": Key("max_file_size", _byte_count, "integer (bytes)",
                         {"type": "integer", "minimum": 1, "maximum": MAX_MAX_FILE_SIZE}, (
        "A file larger than this is not read: it is SG000 \"too large; raise max-file-size or exclude it\". "
        "The largest hand-written file in SGLang or the standard library is under 1 MB."),
        "4194304", SECTION_FILES),
    # ---- the codemod ----
    "fallbacks": Key("fallbacks", _fallbacks, "table of attribute = template", {
        "type": "object", "propertyNames": _string_schema(IDENTIFIER),
        "additionalProperties": {"type": "string", "pattern": r"\{obj\}"}}, (
        "What the codemod writes in place of a read of a mirror attribute when it is None. A template is one "
        "Python expression using `{obj}` (the object the mirror hangs on) and optionally `{device}` (the "
        "device attribute); no other placeholder, no `yield`, `await`, `lambda` or `:=`; a literal brace is "
        "doubled. A template that computes on the device (no `.cpu()`, `.item()`, `.tolist()`, `.numpy()`, "
        "`int()`, `float()`) is used in opted-out backends too. The sglang preset offers, in a comment, "
        "SGLang's own sync-free bound for a sum that only sizes a ragged buffer "
        "(`src/seqguard/presets/sglang.toml`)."),
        '{ seq_lens_sum = "int({obj}.seq_lens.sum())" }', SECTION_CODEMOD, preset=True),
    "formatter": Key("formatter", _formatter, "one of auto, ruff, black, none", {"enum": list(FORMATTERS)}, (
        "What formats the lines the codemod edits (`ruff format --range`, Black's `--line-ranges`). `auto` "
        "takes the formatter the nearest `pyproject.toml` has a table for, else ruff, else Black, whichever "
        "is installed, else none. A formatter is looked for on `PATH`, then in seqguard's own environment (a "
        "venv's `bin/`), then as `python -m ruff` / `python -m black`; when nothing formats the edits the "
        "summary says so. `codemod --formatter` overrides it."),
        '"auto"', SECTION_CODEMOD),
    # ---- the engine model ----
    "preset": Key("preset", lambda v: _preset_name(v), "bundled engine model name, or path of a model file",
                  lambda: {"anyOf": [{"enum": list(preset_names())},
                                     {"type": "string", "pattern": PRESET_PATH_PATTERN}]}, (
        "A bundled engine model (`sglang`), or the path of a TOML model file with the same keys at its top "
        "level (a value holding `/` or `\\` or ending in `.toml`; relative to the project root here, to the "
        "current directory for `--preset`): it supplies every engine-model key below; a key written in "
        "`[tool.seqguard]` replaces the preset's value. A name in a preset or model file that the project "
        "lacks is a warning (a model may describe older releases); a wrong name written here is an error. "
        "`--preset` overrides it for one run."),
        '"sglang"', SECTION_MODEL),
    "backend-bases": Key("backend_bases", lambda v: _string_list(v, pattern=QUALIFIED_IDENTIFIER,
                                                                 what="class name"),
                         "list of class names", _list_schema(QUALIFIED_IDENTIFIER), (
        "The attention backend base classes. A qualified name (`pkg.module.Class`) matches exactly that class; "
        "a plain one any class of that name. Every class that subclasses one, transitively and across modules, "
        "is a backend. Each must name a class of the project (a qualified one: where it is defined, not a "
        "re-export). `--backend-base` (repeatable) replaces it."),
        '["sglang.srt.layers.attention.base_attn_backend.AttentionBackend"]', SECTION_MODEL,
        preset=True, option="--backend-base"),
    "backend-classes": Key("backend_classes", lambda v: _string_list(v, pattern=GLOB_CLASS_NAME,
                                                                     what="class name or glob"),
                           "list of class names or globs", _list_schema(GLOB_CLASS_NAME), (
        "Classes the aggregator counts although they subclass no base (qualified names, or globs on the class "
        "name): they are backends too, and one without the flag counts as True."),
        '["*MultiStep*Backend"]', SECTION_MODEL, preset=True),
    "flag-attribute": Key("flag_attribute", _identifier, "attribute name", _string_schema(IDENTIFIER), (
        "The attribute a backend declares and the aggregator ORs. Every rule, `--fix`, `graph`, `explain` and "
        "the codemod's messages read and write this name (the rules' own documentation keeps SGLang's). "
        "`--flag-attribute` overrides it."),
        '"needs_cpu_seq_lens"', SECTION_MODEL, facts=True, preset=True, option="--flag-attribute"),
    "mirror-attributes": Key("mirror_attributes", lambda v: _string_list(v, pattern=IDENTIFIER,
                                                                         what="attribute name", nonempty=True),
                             "list of attribute names", lambda: {**_list_schema(IDENTIFIER), "minItems": 1}, (
        "The host-mirror attributes whose reads are checked. `--mirror-attribute` (repeatable) replaces it."),
        '["seq_lens_cpu", "seq_lens_sum"]', SECTION_MODEL, facts=True, preset=True, option="--mirror-attribute"),
    "device-attribute": Key("device_attribute", _identifier, "attribute name", _string_schema(IDENTIFIER), (
        "The device-side sibling of the mirror: what the codemod falls back to and SG004 watches. "
        "`--device-attribute` overrides it."),
        '"seq_lens"', SECTION_MODEL, facts=True, preset=True, option="--device-attribute"),
    "aggregator": Key("aggregator", _qualified, "qualified function name", _string_schema(QUALIFIED_IDENTIFIER), (
        "The function that decides the flag. Each early `return True` in it is a feature that forces the "
        "mirror on: a read under a test of that feature, or in a class created only under it, is safe. It "
        "must name a function or method of a project module."),
        '"sglang.srt.managers.overlap_utils.decide_needs_cpu_seq_lens"', SECTION_MODEL, preset=True),
    "mode-enum": Key("mode_enum", _qualified, "qualified class name", _string_schema(QUALIFIED_IDENTIFIER), (
        "The forward-mode enum. Its members are the modes; each predicate's meaning (`is_extend()`) is read "
        "from its body. Without it no mode test clears a read. It must name a class at the top level of a "
        "project module."),
        '"sglang.srt.model_executor.forward_batch_info.ForwardMode"', SECTION_MODEL, facts=True, preset=True),
    "mode-attribute": Key("mode_attribute", _identifier, "attribute name", _string_schema(IDENTIFIER), (
        "The attribute of a batch that holds its forward mode."),
        '"forward_mode"', SECTION_MODEL, facts=True, preset=True),
    "skip-modes": Key("skip_modes", lambda v: _string_list(v, pattern=IDENTIFIER, what="enum member name"),
                      "list of enum member names", _list_schema(IDENTIFIER), (
        "The modes a batch can be in while its mirror is None. A read is safe where none of them is still "
        "possible on its path (and some mode is). Each must be a member of `mode-enum` (`DECODE`, not "
        "`decode`)."),
        '["DECODE", "TARGET_VERIFY", "DRAFT_EXTEND_V2", "IDLE"]', SECTION_MODEL, preset=True),
    "present-when": Key("present_when", _present_conditions, "list of conditions", _condition_schema(True), (
        "Tests under which the mirror is always present: a read whose path implies one is safe. A condition is "
        "a Python expression in which `*` stands for any receiver (`*.spec_algorithm.is_none()` matches "
        "`self.spec_algorithm.is_none()` and `batch.spec_algorithm.is_none()`), also inside `and`, `or` and "
        "`not`; a string, or a table with `test`, `why` (the engine code that makes it true) and "
        "`outside-modes` (the test implies the mirror only where none of these modes is possible either)."),
        '[{ test = "*.spec_algorithm.is_none()", why = "non-speculative runs are never skipped" }]', SECTION_MODEL,
        facts=True, preset=True),
    "models": Key("models", _model_facts, "list of facts", {"type": "array", "items": {
        "type": "object", "additionalProperties": False, "required": ["about", "cites", "why"],
        "oneOf": [{"required": ["modes"]}, {"required": ["present"]}], "properties": {
            "about": {**_string_schema(IN_MODULE),
                      "description": "The function, method or class the fact is about (pkg.module.Class.method)."},
            "modes": {**_list_schema(IDENTIFIER), "minItems": 1,
                      "description": "The forward modes every batch reaching its code is in (members of mode-enum)."},
            "present": {**_list_schema(IDENTIFIER), "minItems": 1,
                        "description": "Mirror attributes never None in its code (instead of modes)."},
            "cites": {"type": "array", "minItems": 1, "items": {"anyOf": [
                {"type": "string", "pattern": r"\S", "description": "A piece of the code the fact is about."},
                {"type": "object", "additionalProperties": False, "required": ["in", "code"], "properties": {
                    "in": {**_string_schema(IN_MODULE),
                           "description": "The function, method or class whose code holds it (a caller's gate)."},
                    "code": {"type": "string", "pattern": r"\S", "description": "The piece of code."}}}]},
                      "description": "The code that makes the fact true; the fact is stale when a piece is gone."},
            "why": {"type": "string", "pattern": r"\S",
                    "description": "How the cited code makes it true, with its file and lines."}}}}, (
        "Facts of the engine its code cannot tell the analysis, as Infer and Pysa ship models: every batch that "
        "reaches the code of `about` (a function, a method, or every method of a class) is in one of `modes`, "
        "so a read or a host pull there, and every call made there, sees only those modes; or, with `present` "
        "instead of `modes`, that those mirror attributes are never None there, so reads of them there are "
        "safe. Each fact cites the "
        "code that makes it true (`cites`: a piece of `about`'s own code, such as the gate that refuses the other "
        "modes, or `{ in = \"pkg.module.caller\", code = \"...\" }` for a gate in its callers) and says how "
        "(`why`). Every run checks each fact: one whose `about` is gone, or one of whose `cites` "
        "no longer appears in its code, is a warning (`stale fact`) and is used for nothing. A fact about one "
        "line is not a fact: that is `# seqguard: ignore[...]`."),
        '[{ about = "engine.runner.PrefillGraphRunner.replay", modes = ["EXTEND"], '
        'cites = ["if forward_batch.forward_mode.is_target_verify(): return False"], '
        'why = "can_run refuses verify batches (runner.py:41)" }]', SECTION_MODEL, preset=True),
    "sync-allowed-when": Key("sync_allowed_when", _conditions, "list of conditions", _condition_schema(False), (
        "Tests under which a host sync is not the per-step one (CUDA-graph capture): SG004 does not report a "
        "pull there. Conditions as for `present-when`, without `outside-modes`; a `with` holds for its body "
        "as a test does."),
        '["in_capture"]', SECTION_MODEL, facts=True, preset=True),
    "device-lengths": Key("device_lengths", lambda v: _string_list(v, pattern=IDENTIFIER, what="attribute name"),
                          "list of attribute names", _list_schema(IDENTIFIER), (
        "More device length tensors, besides `device-attribute` and `extend_seq_lens`, whose pulls to the host "
        "SG004 reports."),
        '["extend_prefix_lens"]', SECTION_MODEL, facts=True, preset=True),
    "capture-functions": Key("capture_functions", lambda v: _string_list(v, pattern=FUNCTION_GLOB,
                                                                         what="function name or glob"),
                             "list of function names or globs", _list_schema(FUNCTION_GLOB), (
        "Functions that run only while CUDA graphs are captured: a host sync there is paid once per captured "
        "shape, not per step, and the batches they see are the runner's own."),
        '["capture_one_*"]', SECTION_MODEL, preset=True),
    "host-name-words": Key("host_name_words", lambda v: _string_list(v, pattern=NAME_WORD, what="name word"),
                           "list of name words", _list_schema(NAME_WORD), (
        "Words that mark a name as a host copy of its value, matched whole between underscores "
        "(`seq_lens_cpu_int`, `host_seq_lens`; not `cpuset`). A tensor so named is on the host already: SG004 "
        "does not report pulling it. With a word of `length-name-words` too, an attribute that every call of "
        "a helper passes for a parameter makes that parameter a host copy: the helper's pull of it is no "
        "sync. Why: the engine's code says which tensor is a host copy only by its name. Limits: a guess; a host "
        "copy named otherwise (`lens_np`) is treated as device data, and a device tensor named `*_cpu` as a "
        "host one."),
        '["cpu", "host", "np"]', SECTION_MODEL, facts=True, preset=True),
    "length-name-words": Key("length_name_words", lambda v: _string_list(v, pattern=NAME_WORD, what="name word"),
                             "list of name words", _list_schema(NAME_WORD), (
        "Words that mark a name as holding sequence lengths, matched whole between underscores (`host_lens`, "
        "`cpu_len`). Used only with a word of `host-name-words`: an attribute so named (`m.seq_lens_cpu_int`) "
        "that every call of a helper passes for a parameter makes the helper's pull of that parameter no "
        "sync (SG004). Why and limits: as for `host-name-words`, a "
        "guess from a name."),
        '["len", "lens", "lengths"]', SECTION_MODEL, preset=True),
    "device-length-name-parts": Key("device_length_name_parts",
                                    lambda v: _string_list(v, pattern=NAME_PART, what="part of a name"),
                                    "list of parts of a name", _list_schema(NAME_PART), (
        "Text that marks an attribute deep in a chain as a tensor of device lengths of its own: in "
        "`self.meta.seq_lens.cpu()` SG004 checks `seq_lens`, where a chain without it is checked by the names "
        "it starts with (`self`, `meta`). Matched anywhere in the attribute's name. Why: a backend keeps "
        "device lengths in metadata objects several attributes deep, and only the name says which. Limits: "
        "a guess; device lengths named otherwise deep in a chain are seen only through their leading names."),
        '["seq_lens", "seqlens"]', SECTION_MODEL, facts=True, preset=True),
    "test-paths": Key("test_paths", lambda v: _string_list(v, what="path glob"), "list of path globs",
                      _list_schema(), (
        "Test code, whose calls are not the engine's: a harness that hands a function a batch of its own "
        "making neither clears nor blocks a read there (its files are still linted). Globs on the "
        "root-relative path where `**` is any number of folders and `*`, `?`, `[...]` stay within one name."),
        '["**/tests/**"]', SECTION_MODEL),
}
# The table, read-only, for what documents it (docs/configuration.md, seqguard.schema.json).
KEYS: Mapping[str, Key] = types.MappingProxyType(_KEYS)
# Config fields the command line sets (field -> its key, its option): each value is
# checked by the key's own validator, so an option takes what the file takes.
OPTION_KEYS = {k.field: (name, k.option) for name, k in _KEYS.items() if k.option is not None}
# Keys a preset may set (the analysis ones); `preset` itself and file selection may not.
PRESET_KEYS = frozenset(name for name, k in _KEYS.items() if k.preset)
# The Config fields the per-file facts depend on, in the table's order.
FACT_FIELDS = tuple(k.field for k in _KEYS.values() if k.facts)


def preset_names() -> tuple[str, ...]:
    """The presets bundled with seqguard (`src/seqguard/presets/<name>.toml`)."""
    from importlib import resources
    return tuple(sorted(p.name[:-5] for p in resources.files("seqguard.presets").iterdir()
                        if p.name.endswith(".toml")))


# A `preset` value naming a model file of one's own rather than a bundled preset: it has
# a folder separator or ends in `.toml` (`models/myengine.toml`, `fork.toml`); the
# schema says the same with this pattern.
PRESET_PATH_PATTERN = r"[/\\]|\.toml$"


def is_preset_path(value: str) -> bool:
    return re.search(PRESET_PATH_PATTERN, value) is not None


def _preset_name(value: Any) -> tuple[Any, str | None]:
    names = preset_names()
    if not isinstance(value, str) or not (value in names or is_preset_path(value)):
        return None, (f"expected a bundled preset ({', '.join(names)}) or the path of a TOML model file "
                      f"(such as models/myengine.toml), got {value!r}")
    return value, None


def load_preset(name: str) -> dict[str, Any]:
    """A preset's values, validated like [tool.seqguard]: a bundled one by name (a bad
    one is a bug of seqguard's, but still one clear error), or a model file of one's own
    by its path (absolute, or relative to the current directory), with the same keys."""
    if is_preset_path(name):
        shown = _shown(Path(name))   # the same file, named as the user reads it
        document = _parse_toml(Path(shown), fix="fix the model file or give another --preset / `preset`")
        return _values(document, PRESET_KEYS, f"{shown}:", f"; valid keys: {', '.join(sorted(PRESET_KEYS))}")
    from importlib import resources
    resource = resources.files("seqguard.presets") / f"{name}.toml"
    document = tomllib.loads(resource.read_text(encoding="utf-8"))
    return _values(document, PRESET_KEYS, f"preset {name}:", "")


def _shown(path: Path) -> str:
    """A path as the user reads it: relative to the current directory when below it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive
        return str(path)
    return str(path) if relative.startswith("..") else relative


def _preset_file(value: str, base: Path, named_by: str) -> str:
    """The absolute path of a preset given as a path (`base`: the folder it is relative
    to), or ConfigError when there is no file there; a bundled name as it is."""
    if not is_preset_path(value):
        return value
    path = Path(os.path.normpath(base / value))
    if not path.is_file():
        try:
            what = f"{file_kind(os.stat(path).st_mode)}, not a regular file"
        except OSError as e:
            what = "no such file" if e.errno == errno.ENOENT else f"cannot read ({e.strerror or e})"
        raise ConfigError(f"{named_by}: {_shown(path)}: {what}; give the path of a TOML model file "
                          f"(relative to {'the current directory' if named_by == '--preset' else 'the project root'})"
                          f" or a bundled preset ({', '.join(preset_names())})")
    return str(path)


def config_file_problem(config_file: Path) -> str | None:
    """Why `--config FILE` cannot be read as a configuration file, naming what it is (a
    FIFO such as `/dev/stdin` or `<(...)`, a directory, a device), or None. A stream is
    not read: seqguard reads a regular file, so a pipe never blocks the run."""
    if not os.path.lexists(config_file):
        return f"{config_file}: config file not found; pass an existing pyproject.toml to --config"
    try:
        mode = os.stat(config_file).st_mode
    except OSError as e:
        return f"{config_file}: cannot read the config file ({e.strerror or e}); pass an existing pyproject.toml"
    if stat.S_ISREG(mode):
        return None
    return (f"{config_file}: {file_kind(mode)}, not a regular file; pass the path of a pyproject.toml (or a TOML "
            f"file with a [tool.seqguard] table) to --config; settings from a pipe go into a file first")


def load_config(paths: Iterable[Path], config_file: Path | None = None,
                overrides: Mapping[str, Any] | None = None) -> Config:
    """The configuration of the project `paths` are in. Its root is the nearest folder
    above the first path holding a pyproject.toml or a .git (`roots`); with
    `config_file`, the table comes from that file, and the root is the file's folder
    when every path lies in it, else still the one found from the paths (a shared file
    outside the tree must not move the root, which names every module)."""
    paths = list(paths) or [Path.cwd()]
    first_existing = next((p for p in paths if p.exists()), paths[0])
    if config_file is not None:
        problem = config_file_problem(config_file)
        if problem:
            raise ConfigError(problem)
        pyproject = config_file.resolve()
        root = pyproject.parent
        if not all(_inside(p, root) for p in paths):
            root = find_project_root(first_existing if first_existing.exists() else Path.cwd())[0]
    else:
        root, pyproject = find_project_root(first_existing if first_existing.exists() else Path.cwd())
        if pyproject is not None and not pyproject.is_file():
            raise ConfigError(f"{pyproject}: a symlink to {os.readlink(pyproject)}, which is not a file seqguard can "
                              f"read; the project's settings are there: fix the link or remove it")
    values: dict[str, Any] = {}
    if pyproject is not None:
        values = _read_table(pyproject)
    overrides = _checked_options({k: v for k, v in (overrides or {}).items() if v is not None})
    if "preset" in overrides:
        _, problem = _preset_name(overrides["preset"])
        if problem:
            raise ConfigError(f"--preset: {problem}")
        overrides["preset"] = _preset_file(overrides["preset"], Path.cwd(), "--preset")
    elif values.get("preset") is not None:
        values["preset"] = _preset_file(values["preset"], root, f"{pyproject}: [tool.seqguard] preset")
    preset = overrides.get("preset", values.get("preset"))
    given = {field: "file" for field in values}
    if preset is not None:
        # the preset fills what neither the file nor the command line says
        preset_values = load_preset(preset)
        values = {**preset_values, **values}
        given = {**{field: "preset" for field in preset_values}, **given}
    given.update((field, "option") for field in overrides)
    # one Config from every source at once: checks across keys see the merged values
    config = Config(root=root, source=pyproject, **{**values, **overrides}, origins=tuple(sorted(given.items())))
    if config.baseline is not None and not Path(config.baseline).is_absolute():
        config = dataclasses.replace(config, baseline=(root / config.baseline))
    return config


def _inside(path: Path, folder: Path) -> bool:
    real = Path(os.path.realpath(path))
    return real == folder or folder in real.parents


def _checked_options(overrides: dict[str, Any]) -> dict[str, Any]:
    """Command-line values through the validators of the keys they replace; every
    problem at once, each naming its option."""
    # in the caller's order (the order --help lists the options), so are the problems
    given = {OPTION_KEYS[field][0]: list(value) if isinstance(value, tuple) else value
             for field, value in overrides.items() if field in OPTION_KEYS}
    options = {key: option for key, option in OPTION_KEYS.values()}
    return {**overrides, **_values(given, frozenset(given), "", "", label=options.__getitem__)}


def config_from_table(text: str, root: Path = Path(".")) -> Config:
    """A Config from the body of a [tool.seqguard] table given as TOML text (a rule's
    example, a test), validated like a pyproject.toml, a preset applied."""
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"[tool.seqguard]: invalid TOML: {e}") from None
    except RecursionError:
        raise ConfigError("[tool.seqguard]: invalid TOML: nested too deeply to read") from None
    values = _validated(table, "<table>")
    given = {field: "file" for field in values}
    if values.get("preset"):
        values["preset"] = _preset_file(values["preset"], root, "[tool.seqguard] preset")
        preset_values = load_preset(values["preset"])
        values = {**preset_values, **values}
        given = {**{field: "preset" for field in preset_values}, **given}
    return Config(root=root, **values, origins=tuple(sorted(given.items())))


def _read_table(pyproject: Path) -> dict[str, Any]:
    document = _parse_toml(pyproject)
    table = document.get("tool", {}).get("seqguard", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{pyproject}: [tool.seqguard]: expected a table, got {type(table).__name__}")
    return _validated(table, pyproject)


def _validated(table: dict, pyproject) -> dict[str, Any]:
    return _values(
        table, frozenset(_KEYS), f"{pyproject}: [tool.seqguard]", f"; valid keys: {', '.join(sorted(_KEYS))}"
    )


def _values(table: Mapping[str, Any], allowed: frozenset, where: str, hint: str,
            label: Optional[Callable[[str], str]] = None) -> dict[str, Any]:
    """Each key of `table` validated into its Config field; every problem at once, each
    naming `where` and the key (or what `label` calls the key: a command-line option)."""
    problems, values = [], {}
    for key, value in table.items():
        if key not in allowed:
            problems.append(f"{where} unknown key {key!r}{hint}")
            continue
        field, validate = _KEYS[key].field, _KEYS[key].validate
        parsed, problem = validate(value)
        if problem:
            problems.append(f"{label(key) if label else f'{where} {key}'}: {problem}")
        else:
            values[field] = parsed
    if problems:
        raise ConfigError("\n".join(problems))
    return values


def _parse_toml(pyproject: Path, fix: str = "fix the syntax or pass --config") -> dict[str, Any]:
    """The parsed document; every way it can fail is one ConfigError naming the file,
    what is wrong and what to do (TOML is UTF-8 by definition, so bad bytes are the
    file's fault, not an encoding to guess)."""
    read = read_file(pyproject)  # a FIFO must not wait for a writer
    if read.kind == "not-regular":
        raise ConfigError(f"{pyproject}: not a regular file; {fix}")
    if read.kind == "missing":
        raise ConfigError(f"{pyproject}: cannot read: No such file or directory; check its permissions")
    if read.data is None:
        raise ConfigError(f"{pyproject}: {read.error}; check its permissions")
    data = read.data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise ConfigError(f"{pyproject}:{line}:{column}: not valid UTF-8 (byte 0x{data[e.start]:02x}); "
                          "TOML files must be UTF-8: re-save the file as UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{pyproject}: invalid TOML: {e}; {fix}") from None
    except RecursionError:
        raise ConfigError(f"{pyproject}: invalid TOML: nested too deeply to read; {fix}") from None
