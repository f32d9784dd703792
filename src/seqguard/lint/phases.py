"""The per-file phases of a run: read every file of the project, scan it (a byte scan:
which mirrors, flags, classes and imports it names), and analyse with the whole walk
only the files that can hold a finding or that the backend hierarchy needs. Both
phases answer from the fact cache where a file's stat (or, failing that, its bytes)
is unchanged, and run on every core when there are enough files to pay for it."""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping, Optional

from seqguard.config import DEFAULT_FLAG, Config
from seqguard.fileio import read_file
from seqguard.lint.analysis.source import decode_source
from seqguard.lint.cache import Entry, FactCache, StatKey, digest, stat_key, stat_of
from seqguard.lint.discovery import Discovery, Target
from seqguard.lint.facts import analyze, scan
from seqguard.lint.model import DeepFacts, ScanFacts
from seqguard.workers import Pool, collector_paused

# Below these counts a process pool costs more than it saves (fork + pickling).
POOL_MIN_SCANS = 256
POOL_MIN_ANALYSES = 24


@dataclasses.dataclass(frozen=True)
class Scanned:
    """What a scan worker sends back for one file. `scan` is None when the bytes are
    those the cache already holds facts for (`digest` equal); `error` says why a file
    could not be read."""
    relpath: str
    stat: Optional[StatKey] = None
    digest: Optional[bytes] = None
    scan: Optional[ScanFacts] = None
    deep: Optional[DeepFacts] = None
    error: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Analysed:
    """What an analysis worker sends back for one file."""
    relpath: str
    stat: Optional[StatKey] = None
    digest: Optional[bytes] = None
    deep: Optional[DeepFacts] = None
    error: Optional[str] = None


@dataclasses.dataclass
class ProjectFacts:
    """Every file's scan, the deep facts of those analysed, and why the others could
    not be read; `load` analyses one more file on demand (the hierarchy asks for a
    base class's module), `source` reads one file's text."""
    scans: dict[str, ScanFacts]
    deep: dict[str, DeepFacts]
    failures: dict[str, str]
    sizes: dict[str, int]
    load: Callable[[str], Optional[DeepFacts]]
    source: Callable[[str], Optional[str]]


def analysis_model(config: Config) -> tuple[tuple[str, ...], tuple[str, ...], str, tuple[str, ...], tuple[str, ...]]:
    """What of the engine model the per-file walk needs: the words whose tests it records
    as path facts, the device length attributes besides the device one, the flag, and
    the naming conventions (host copies, device lengths deep in a chain)."""
    return (tuple(config.condition_words), tuple(config.device_lengths), config.flag_attribute,
            tuple(config.host_name_words), tuple(config.device_length_name_parts))


def scan_words(config: Config) -> tuple[str, ...]:
    """What the byte scan looks for annotations of: the device attribute and the other
    device lengths (SG004's declared types)."""
    return (config.device_attribute, *config.device_lengths)


def _read(abspath: str, limit: int) -> tuple[Optional[bytes], Optional[StatKey], Optional[str]]:
    read = read_file(abspath, limit)
    return read.data, (stat_key(read.stat) if read.stat is not None else None), read.error


def _scan_job(batch: list[tuple[str, str, Optional[bytes]]], mirrors: tuple[str, ...], limit: int,
              device: str, model: tuple = ((), (), DEFAULT_FLAG), words: tuple[str, ...] = ()) -> list[Scanned]:
    """Scan each file, and analyse the ones whose scan says they can hold a finding (a
    mirror, the flag or a marker in them) while their bytes are in memory: the second
    phase then reads only the files it needs for the hierarchy."""
    out = []
    with collector_paused():
        for relpath, abspath, old_digest in batch:
            data, stat_now, error = _read(abspath, limit)
            if data is None:
                out.append(Scanned(relpath, error=error))
                continue
            new_digest = digest(data)
            facts = None if new_digest == old_digest else scan(data, mirrors, words, model[2])
            deep = None
            if facts is not None and (
                    facts.mentions_mirror or facts.mentions_flag or facts.mentions_suppression):
                deep = analyze(data, mirrors, device, *model)
            out.append(Scanned(relpath, stat_now, new_digest, facts, deep))
    return out


def _analyze_job(batch: list[tuple[str, str]], mirrors: tuple[str, ...], device: str, limit: int,
                 model: tuple = ((), (), DEFAULT_FLAG)) -> list[Analysed]:
    out = []
    with collector_paused():
        for relpath, abspath in batch:
            data, stat_now, error = _read(abspath, limit)
            if data is None:
                out.append(Analysed(relpath, error=error))
                continue
            out.append(Analysed(relpath, stat_now, digest(data), analyze(data, mirrors, device, *model)))
    return out


def gather(discovery: Discovery, config: Config, cache: FactCache, pool: Pool, candidates_of: Callable,
           buffered: Optional[Mapping[str, bytes]] = None,
           stats: Optional[Mapping[str, Optional[StatKey]]] = None) -> ProjectFacts:
    """Both phases over the project. `candidates_of(scans)` names the classes that may
    be backends: a file defining one is analysed even when it names no mirror."""
    mirrors, device = tuple(config.mirror_attributes), config.device_attribute
    model, words = analysis_model(config), scan_words(config)
    limit = config.max_file_size
    found = ProjectFacts({}, {}, {}, {}, lambda _: None, lambda _: None)
    scans, deep, failures, sizes = found.scans, found.deep, found.failures, found.sizes
    for relpath, data in (buffered or {}).items():  # in memory, never cached
        scans[relpath] = scan(data, mirrors, words, model[2])
        deep[relpath] = analyze(data, mirrors, device, *model)

    to_scan = []
    for relpath, abspath in discovery.project.items():
        if relpath in scans:
            continue
        stat_now = stats[relpath] if stats and relpath in stats else stat_of(abspath)
        if stat_now is not None:
            sizes[relpath] = stat_now[2]
        entry = cache.fresh(relpath, stat_now)
        if entry is not None and entry.scan is not None:
            _take(found, relpath, entry.scan, entry.deep)
        else:
            old = cache.get(relpath)
            to_scan.append((relpath, abspath, old.digest if old is not None and old.scan is not None else None))
    # Largest first, in small tasks: the files a task analyses as well as scans cost
    # 100x the others, and a big one left for last keeps one core busy alone.
    to_scan.sort(key=lambda row: -sizes.get(row[0], 0))
    for row in pool.map(_scan_job, to_scan, POOL_MIN_SCANS, mirrors, limit, device, model, words, chunk_size=96):
        if row.error is not None:
            failures[row.relpath] = row.error
            continue
        entry = cache.get(row.relpath)
        kept = row.scan is None and entry is not None  # same bytes, new stat: keep the facts
        scan_facts, deep_facts = (entry.scan, entry.deep) if kept else (row.scan, row.deep)
        cache.put(row.relpath, Entry(row.stat, row.digest, scan_facts, deep_facts))
        _take(found, row.relpath, scan_facts, deep_facts)

    candidates = candidates_of(scans)
    explicit = {t.relpath for t in discovery.targets if t.explicit}
    wanted = [
        relpath for relpath, facts in scans.items()
        if relpath not in deep and (
            relpath in explicit or facts.mentions_mirror or facts.mentions_flag or facts.mentions_suppression
            or any(name in candidates for name, _ in facts.classes))
    ]
    # Largest files first, a few per task: parse times differ by 100x between files.
    wanted.sort(key=lambda r: -sizes.get(r, 0))
    for row in pool.map(_analyze_job, [(r, discovery.project[r]) for r in wanted], POOL_MIN_ANALYSES,
                        mirrors, device, limit, model, chunk_size=4):
        _store(cache, found, row)

    def load(relpath: str) -> Optional[DeepFacts]:
        if relpath not in discovery.project:
            return None
        for row in _analyze_job([(relpath, discovery.project[relpath])], mirrors, device, limit, model):
            _store(cache, found, row)
        return deep.get(relpath)

    def source(relpath: str) -> Optional[str]:
        if buffered and relpath in buffered:
            data = buffered[relpath]
        else:
            data = _read(discovery.project[relpath], limit)[0] if relpath in discovery.project else None
        try:
            return decode_source(data) if data is not None else None
        except (UnicodeDecodeError, SyntaxError, LookupError):
            return None

    found.load, found.source = load, source
    return found


def _take(found: ProjectFacts, relpath: str, scan_facts: ScanFacts, deep_facts: Optional[DeepFacts]) -> None:
    found.scans[relpath] = scan_facts
    if deep_facts is not None:
        found.deep[relpath] = deep_facts


def _store(cache: FactCache, found: ProjectFacts, row: Analysed) -> None:
    if row.error is not None:
        found.failures[row.relpath] = row.error
        return
    found.deep[row.relpath] = row.deep
    entry = cache.get(row.relpath)
    scan_facts = found.scans.get(row.relpath) or (entry.scan if entry else None)
    if entry is not None and entry.digest != row.digest:
        scan_facts = None  # the file changed between the two phases; rescan next run
    if scan_facts is not None:
        cache.put(row.relpath, Entry(row.stat, row.digest, scan_facts, row.deep))


def explicit_empty(targets: list[Target], sizes: Mapping[str, int], buffered: Mapping[str, bytes]) -> list[str]:
    """A warning for each file named on the command line that is empty (not for an
    empty `__init__.py`: a package marker, which pre-commit names on every new package)."""
    return [f"{t.display}: empty file, nothing to check" for t in targets
            if t.explicit and t.relpath not in buffered and sizes.get(t.relpath, -1) == 0
            and t.relpath.rsplit("/", 1)[-1] != "__init__.py"]
