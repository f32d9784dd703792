"""The engine model's names checked against the project it describes.

Each name the model gives must be something of the project: `mode-enum` a class, its
`skip-modes` and each `present-when` entry's `outside-modes` members of that class,
`aggregator` a function or method, a qualified `backend-bases` entry a class of the
project (or, when its module is not in the project, the base of one of its classes), a
plain one a class some file defines or derives from, `mode-attribute` and each of
`device-lengths` an attribute some file names. A name that is nothing here changes what
is cleared without a word: `skip-modes = ["decode"]` is never possible, so a DECODE
read passes as if no skip mode could reach it. So:

- a name the user wrote (`[tool.seqguard]`, the command line, a Config built in code)
  is an error: the run stops before judging anything, one line per key, every problem
  at once;
- a name a preset gave is a warning: a preset serves several releases, and an older
  one lacks a newer member. The name then clears nothing (`EngineAtPoint.skip_modes` drops
  it; `EngineAtPoint.by_path` skips an `outside-modes` entry naming it). A preset whose
  modules the project does not hold at all (it is not the engine's own source, or
  `--config` moved the root) is one line, not one per key.

Each fact of `models` is checked against the code it cites (`point.ModelFacts`): one
whose code is gone, or whose cited code is, is a warning whoever wrote it (`stale
fact`), and clears nothing.

A value left at its default is never checked: a project that only uses the defaults is
neither stopped nor warned. Not checked at all, because a name there that matches
nothing clears nothing (it only leaves findings in place) and a check would need every
class and function name of every file, which the index does not hold:
`backend-classes`, `capture-functions`, and the words of the conditions' tests.
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import TYPE_CHECKING, Iterator, Optional

from seqguard.config import Config

if TYPE_CHECKING:
    from seqguard.lint.contract.point import EngineAtPoint

_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Config) if f.default is not dataclasses.MISSING}


@dataclasses.dataclass(frozen=True)
class NameProblem:
    """One engine-model value that names nothing of the project."""
    field: str                 # the Config field (`skip_modes`)
    subject: str               # where the value was written, as a message names it
    problem: str               # `expected X, got Y; how to fix` (or, for a preset, what is ignored)
    from_preset: bool          # a preset gave it: a warning, and it clears nothing
    # the module it names, when no module of the project is that module (not this engine)
    module_elsewhere: Optional[str] = None

    @property
    def line(self) -> str:
        return f"{self.subject}: {self.problem}"


@dataclasses.dataclass(frozen=True)
class ModelCheck:
    errors: tuple[str, ...]      # lines of one ConfigError: the run stops
    warnings: tuple[str, ...]    # lines for stderr, `warning: ` to be put before each


def check_model(point: "EngineAtPoint") -> ModelCheck:
    """Every problem of the model's names at once, as errors (the user's) and warnings
    (a preset's)."""
    problems = list(name_problems(point))
    errors = tuple(p.line for p in problems if not p.from_preset)
    preset = [p for p in problems if p.from_preset]
    elsewhere = [p for p in preset if p.module_elsewhere is not None]
    stale = tuple(stale_facts(point))
    if not elsewhere:
        return ModelCheck(errors, tuple(p.line for p in preset) + stale)
    # not the engine (a plugin of it, or `--config` moved the root): one line, not a
    # line for each of the preset's names that this project was never going to hold
    keys = ", ".join(dict.fromkeys(p.field.replace("_", "-") for p in elsewhere))
    modules = ", ".join(dict.fromkeys(p.module_elsewhere for p in elsewhere))
    return ModelCheck(errors, (f"preset {point.config.preset}: this project (root {point.config.root}) holds "
                               f"no module its {keys} name ({modules}): the preset describes the engine's own "
                               f"source; lint from the engine's root, or leave the preset out (nothing those names "
                               f"describe clears a read here)",))


def stale_facts(point: "EngineAtPoint") -> Iterator[str]:
    """One warning per fact of `models` the code no longer bears out, whoever wrote it:
    a fact serves several releases, and one that went stale clears nothing. A preset's
    fact about a module the project does not hold is no warning: the preset describes
    more of the engine than this project is."""
    where = point.config.given_at("models")
    from_preset = dict(point.config.origins).get("models") == "preset"
    for number, fact, wrong in (*point.facts.stale, *(() if from_preset else point.facts.elsewhere)):
        yield (f"{where}: stale fact, entry {number} (`{fact.about}`): {wrong}; read the code it cites again, "
               f"then update or remove the fact (it clears nothing meanwhile)")


def name_problems(point: "EngineAtPoint") -> Iterator[NameProblem]:
    config, index = point.config, point.index
    yield from _enum_problems(point)
    if config.aggregator:
        relpath, function = point.locate_function(config.aggregator)
        if relpath is None:
            yield _problem(config, "aggregator",
                           f"expected a function of this project, got {config.aggregator!r}: no project file is "
                           f"its module", f"name the function that decides `{config.flag_attribute}` "
                           f"(pkg.module.function)", elsewhere=config.aggregator.rpartition(".")[0])
        elif function is None:
            yield _problem(config, "aggregator",
                           f"expected a function or method of {relpath}, got {config.aggregator!r}, "
                           f"{_defined_as(point, relpath, config.aggregator, 'function')}",
                           "name the function where it is defined",
                           ignored="the features it forces clear nothing")
    if _origin(config, "backend_bases") != "default":
        yield from _base_problems(point)
    if config.device_lengths and _origin(config, "device_lengths") != "default":
        missing = [name for name in config.device_lengths if not _names_attribute(index, name)]
        if missing:
            yield _problem(config, "device_lengths",
                           f"expected attributes the project's code names (`batch.extend_prefix_lens`), got "
                           f"{_listed(missing)}, which no file names", "check the spelling",
                           ignored="nothing is watched under that name")


def _enum_problems(point: "EngineAtPoint") -> Iterator[NameProblem]:
    config, index = point.config, point.index
    outside = [(i, c) for i, c in enumerate(config.present_when) if c.outside_modes]
    if not config.mode_enum:
        if config.skip_modes:
            yield _problem(config, "skip_modes", "expected `mode-enum` to name the enum these are members of, "
                           "got none", "set mode-enum = \"pkg.module.ForwardMode\"",
                           ignored="no read is cleared by its mode")
        for i, _ in outside:
            yield _problem(config, "present_when", f"entry {i + 1}: outside-modes: expected `mode-enum` to name "
                           "the enum they are members of, got none", "set mode-enum = \"pkg.module.ForwardMode\"",
                           ignored="the entry clears nothing")
        return
    found = point.located_enum
    if found is None:
        located = index.locate_class(config.mode_enum)
        if located is None:
            yield _problem(config, "mode_enum",
                           f"expected a class of this project, got {config.mode_enum!r}: no project file is its "
                           f"module (its predicates are read from the engine's source)",
                           "name the enum where the engine defines it, or lint from the engine's root",
                           elsewhere=config.mode_enum.rpartition(".")[0])
        else:
            yield _problem(config, "mode_enum",
                           f"expected a class defined at the top level of {located[0]}, got {config.mode_enum!r}, "
                           f"{_defined_as(point, located[0], config.mode_enum, 'class')}",
                           "name the enum where it is defined",
                           ignored="no read is cleared by its mode")
        return
    relpath, enum = found
    members = point.enum.members
    where = f"{enum.name} ({relpath}:{enum.lineno})"
    bad = [m for m in config.skip_modes if m not in members]
    if bad:
        yield _problem(config, "skip_modes", _members_got(where, bad, members),
                       f"valid members: {', '.join(members)}",
                       ignored="no batch can be in a mode the enum lacks: ignored")
    for i, condition in outside:
        bad = [m for m in condition.outside_modes if m not in members]
        if bad:
            yield _problem(config, "present_when",
                           f"entry {i + 1}: outside-modes: {_members_got(where, bad, members)}",
                           f"valid members: {', '.join(members)}", ignored="the entry clears nothing")
    attribute = config.mode_attribute
    if not _names_attribute(index, attribute, whole=True):
        # the attribute is what makes a test a mode test: checked whenever the enum is
        # used, as the enum's own value is when the attribute is left at its default
        default = _origin(config, "mode_attribute") == "default"
        yield _problem(config, "mode_attribute",
                       f"expected the attribute that holds a batch's {enum.name}, got {attribute!r}"
                       f"{' (the default)' if default else ''}, which no file of the project names",
                       "set mode-attribute", ignored="no test reads as a mode test",
                       origin_of="mode_enum" if default else "mode_attribute")


def _base_problems(point: "EngineAtPoint") -> Iterator[NameProblem]:
    config, index = point.config, point.index
    for base in config.backend_bases:
        if "." not in base:
            if not index.names_class(base) and not any(c.name == base for c in index.classes.values()):
                yield _problem(config, "backend_bases",
                               f"expected a class the project defines or derives from, got {base!r}, which no "
                               f"class statement names", "check the spelling", ignored="it makes no backend")
            continue
        relpath, qualname = _module_file(index, base)
        if relpath is None:
            # a base outside the project (an installed engine) is a base when a class here derives from it
            if not any(base in c.bases for c in list(index.classes.values())):
                yield _problem(config, "backend_bases",
                               f"expected a class of this project, or the base of one, got {base!r}: no project "
                               f"file is its module and no class derives from it",
                               "name the base where it is defined (pkg.module.Class)",
                               elsewhere=base.rpartition(".")[0])
            continue
        if base not in index.classes and not index.defines_class(relpath, qualname.split(".")[0]):
            what = _defined_as(point, relpath, base, "class")
            yield _problem(config, "backend_bases",
                           f"expected a class defined in {relpath}, got {base!r}, {what}"
                           f"{' (a re-export is not the class)' if what == _UNDEFINED else ''}",
                           "name the base where it is defined",
                           ignored="it makes no backend")


_UNDEFINED = "which it does not define"


def _defined_as(point: "EngineAtPoint", relpath: str, qualified: str, wanted: str) -> str:
    """What the file makes of the name the model gives, when it is not the kind of
    thing asked for: `which is a class there, not a function`, else `which it does not
    define`."""
    name = qualified.rpartition(".")[2]
    if wanted != "class" and point.index.defines_class(relpath, name):
        return f"which is a class there, not a {wanted}"
    if wanted == "class" and name in point.index.functions_of(relpath):
        return "which is a function there, not a class"
    return _UNDEFINED


def _module_file(index, qualified: str) -> tuple[Optional[str], str]:
    """(the project file of the module a `pkg.module.Class` or `pkg.module.Outer.Inner`
    names, or None; the class's qualname in it). Never a shorter prefix: `pkg.Class`
    is not a class of `pkg/__init__.py` when `pkg.sub` names a folder."""
    module, _, qualname = qualified.rpartition(".")
    relpath = index.relpath_of(module)
    if relpath is None and "." in module:
        module, _, outer = module.rpartition(".")
        relpath, qualname = index.relpath_of(module), f"{outer}.{qualname}"
    return relpath, qualname


def _names_attribute(index, name: str, whole: bool = False) -> bool:
    """Whether some project file names `name` as an attribute, as the byte scans saw:
    an attribute holding it (`extend_prefix_lens_cpu`: what SG004 watches for a device
    length), or with `whole`, the name itself or one ending in `_name`
    (`logical_forward_mode`: what a mode test reads)."""
    if not whole:
        return any(name in words for _, words in index.attribute_words())
    alone, tail = f" {name} ", f"_{name} "
    return any(alone in f" {words} " or tail in f"{words} " for _, words in index.attribute_words())


def _listed(names) -> str:
    return ", ".join(repr(n) for n in names)


def _members_got(where: str, bad: list[str], members: tuple[str, ...]) -> str:
    """`expected members of E, got 'decode' (did you mean 'DECODE'?)`."""
    got = []
    for name in bad:
        close = [m for m in members if m.casefold() == name.casefold()] or \
            difflib.get_close_matches(name, members, n=1)
        got.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
    return f"expected members of {where}, got {', '.join(got)}"


def _origin(config: Config, field: str) -> str:
    """Who gave `field` its value: "file", "option", "preset", or "default" (a value
    set in code counts as the user's)."""
    given = dict(config.origins).get(field)
    if given is not None:
        return given
    return "default" if _DEFAULTS.get(field, dataclasses.MISSING) == getattr(config, field) else "file"


def _problem(config: Config, field: str, wrong: str, fix: str, ignored: str = "",
             elsewhere: Optional[str] = None, origin_of: Optional[str] = None) -> NameProblem:
    """`wrong` (`expected X, got Y`), named where the value was written, then how to fix
    it; or, for a preset's value, that this release lacks it and what becomes of it
    (`ignored`). `origin_of`: the field whose origin decides (a default checked because
    another key is set)."""
    origin = _origin(config, origin_of or field)
    key = field.replace("_", "-")
    if origin == "preset":
        return NameProblem(field, f"preset {config.preset}: {key}",
                           f"{wrong}: this project lacks it (an older release?); {ignored or 'it clears nothing'}",
                           True, elsewhere)
    # a default is checked only because another key is set: named as the file's
    subject = config.given_at(field, "file" if origin == "default" else origin)
    return NameProblem(field, subject, f"{wrong}; {fix}", False, elsewhere)
