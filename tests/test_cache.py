"""The lint cache is data, not code, and cannot lie (issue "Hard to break", and issue
"Exact on the real engine" item 5: keyed on the version and the whole package).

Helpers reach the cache file wherever the code under test keeps it (the old pickle in
the tree, or the signed JSON in the user's cache directory), so each test fails for its
own reason on older code instead of failing to import."""

import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import seqguard
from seqguard.cli import main
from seqguard.config import load_config
from seqguard.lint import cache as cache_module
from seqguard.lint.runner import lint_paths

SRC = Path(seqguard.__file__).resolve().parent.parent
BAD_READ = "def f(b):\n    return b.seq_lens_cpu.max()\n"
HOUR_AGO = time.time() - 3600


def project(root: Path, files: dict) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("[tool.seqguard]\n")
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        os.utime(path, (HOUR_AGO, HOUR_AGO))   # well before any run: the stat fast path applies
    return root


def cache_files(root: Path, pattern: str) -> list[Path]:
    """Every cache file matching `pattern` (e.g. 'last-result.*'), in the tree or not."""
    places = [root / ".seqguard_cache"]
    if hasattr(cache_module, "project_cache_dir"):
        places.append(cache_module.project_cache_dir(root))
    return sorted(p for place in places if place.is_dir() for p in place.glob(pattern))


def secret() -> bytes:
    return (cache_module.cache_home() / "secret").read_bytes()


def rewrite(path: Path, change, *, resign: bool) -> None:
    """Load a cache file, change its value, store it back: as an attacker (resign=False:
    no access to the user's secret) or as a buggy seqguard would (resign=True)."""
    if path.suffix == ".pickle":
        with open(path, "rb") as f:
            value = pickle.load(f)
        with open(path, "wb") as f:
            pickle.dump(change(value), f)
        return
    from seqguard.lint import cache_format
    head, _, body = path.read_bytes().partition(b"\n")
    value = change(json.loads(body))
    if resign:
        path.write_bytes(cache_format.dumps_signed(secret(), value))
    else:
        path.write_bytes(head + b"\n" + json.dumps(value).encode())


def lint_json(runner, *args) -> tuple[int, list]:
    result = runner.invoke(main, ["lint", "--output-format", "json", *map(str, args)])
    assert "internal error" not in result.stderr and "Traceback" not in result.output
    return result.exit_code, [(Path(e["path"]).name, e["line"], e["code"]) for e in json.loads(result.stdout)]


class Payload:
    """Unpickling this runs a command: what a hostile cache file would hold."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_planted_pickle_payload_cannot_run_code(tmp_path, runner):
    root = project(tmp_path / "proj", {"a.py": BAD_READ})
    assert lint_json(runner, root) == (1, [("a.py", 2, "SG002")])   # writes the caches
    marker = tmp_path / "pwned"
    evil = pickle.dumps(Payload(marker))
    planted = cache_files(root, "*")
    names = ["last-result.pickle", "facts-0-0.pickle", "last-result.json", "facts-0.json"]
    for folder in {root / ".seqguard_cache", *(p.parent for p in planted)}:
        folder.mkdir(exist_ok=True)
        planted += [folder / name for name in names]
    for path in planted:
        if path.name != "secret":
            path.write_bytes(evil)
    assert lint_json(runner, root) == (1, [("a.py", 2, "SG002")])
    assert not marker.exists(), "a cache file ran code"


def test_a_forged_clean_result_with_the_right_key_is_not_believed(tmp_path, runner):
    root = project(tmp_path, {"a.py": BAD_READ})
    assert lint_json(runner, root) == (1, [("a.py", 2, "SG002")])
    [result_file] = cache_files(root, "last-result.*")

    def clean(value):
        if isinstance(value, tuple):          # (key, (diagnostics, warnings))
            return value[0], ([], [])
        return {**value, "payload": [[], []]}
    rewrite(result_file, clean, resign=False)
    assert lint_json(runner, root) == (1, [("a.py", 2, "SG002")])


def test_a_result_signed_with_another_secret_is_ignored(tmp_path, runner):
    from seqguard.lint import cache_format   # new with this issue; absent before
    root = project(tmp_path, {"a.py": BAD_READ})
    lint_json(runner, root)
    [result_file] = cache_files(root, "last-result.json")
    _, _, body = result_file.read_bytes().partition(b"\n")
    value = json.loads(body)
    value["payload"] = [[], []]
    result_file.write_bytes(cache_format.dumps_signed(b"another machine's secret", value))
    assert lint_json(runner, root) == (1, [("a.py", 2, "SG002")])


def test_a_well_formed_result_of_the_wrong_shape_is_reanalysed(tmp_path, runner):
    root = project(tmp_path, {"a.py": BAD_READ})
    lint_json(runner, root)
    [result_file] = cache_files(root, "last-result.*")

    def wrong_shape(value):
        if isinstance(value, tuple):
            return value[0], ("not diagnostics", 42)
        return {**value, "payload": ["not diagnostics", 42]}
    rewrite(result_file, wrong_shape, resign=True)
    assert lint_json(runner, root) == (1, [("a.py", 2, "SG002")])


@pytest.mark.parametrize("garbage", [["x"], None, 7, [[1, 2, 3, 4], "zz", None, None],
                                     [[1, 2, 3, 4], "00" * 16, [[], [], True, False, "no"], None]])
def test_a_malformed_facts_entry_is_reanalysed(tmp_path, runner, garbage):
    root = project(tmp_path, {"a.py": BAD_READ, "b.py": "x = 1\n"})
    lint_json(runner, root)
    from seqguard.lint.cache import shard_of
    [facts_file] = cache_files(root, f"facts-*-{shard_of('a.py'):02d}.json")
    for result_file in cache_files(root, "last-result.*"):
        result_file.unlink()   # make the run reach the facts

    def corrupt(value):
        if isinstance(value, dict) and "entries" in value:
            return {**value, "entries": {**value["entries"], "a.py": garbage}}
        return {**value, "a.py": garbage}
    rewrite(facts_file, corrupt, resign=True)
    assert lint_json(runner, root) == (1, [("a.py", 2, "SG002")])


def test_an_edit_that_keeps_size_and_mtime_is_seen(tmp_path, runner):
    root = project(tmp_path, {"a.py": "def f(b):\n    return b.seq_lens_cpu.max()\n"})
    path = root / "a.py"
    assert lint_json(runner, root) == (1, [("a.py", 2, "SG002")])
    before = os.stat(path)
    path.write_text("def f(b):\n    return b.seq_lens_xyz.max()\n")      # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))            # `touch -d`: same mtime
    assert os.stat(path).st_size == before.st_size
    assert lint_json(runner, root) == (0, [])
    assert lint_json(runner, "--no-cache", root) == (0, [])


def test_racy_entries_are_rehashed_not_trusted(tmp_path):
    """git's rule: an entry whose file's mtime is not older than the run that stored it
    may hide a later same-tick edit, so its stat alone is not trusted."""
    from seqguard.lint.cache import RACY_NS, Entry, FactCache
    from seqguard.lint.model import ScanFacts
    scan = ScanFacts((), (), True, False)
    now = time.time_ns()
    cache = FactCache(tmp_path, "fp", started_ns=now)
    racy, old = (now - RACY_NS // 2, now, 10, 1), (now - 3 * RACY_NS, now, 10, 2)
    cache.put("racy.py", Entry(racy, b"\0" * 16, scan, None))
    cache.put("old.py", Entry(old, b"\0" * 16, scan, None))
    cache.save()
    loaded = FactCache(tmp_path, "fp", started_ns=now + 1)
    assert loaded.get("racy.py") == Entry(racy, b"\0" * 16, scan, None)   # kept for its digest
    assert loaded.fresh("racy.py", racy) is None                          # but its stat is not trusted
    assert loaded.fresh("old.py", old) == Entry(old, b"\0" * 16, scan, None)
    assert loaded.fresh("old.py", (old[0], old[1] + 1, 10, 2)) is None    # ctime moved: re-read


def test_a_changed_file_rewrites_only_its_shard(tmp_path):
    """A pre-commit run on one edited file must not rewrite every file's facts; the
    shards it leaves alone stay trusted under the stamp of the run that wrote them."""
    from seqguard.lint.cache import RACY_NS, SHARDS, Entry, FactCache, shard_of
    from seqguard.lint.model import ScanFacts
    scan = ScanFacts((), (), True, False)
    names = [f"m{i}.py" for i in range(200)]
    assert len({shard_of(n) for n in names}) == SHARDS   # every shard holds some
    first = time.time_ns()
    old = (first - 3 * RACY_NS, first - 3 * RACY_NS, 10, 1)
    cache = FactCache(tmp_path, "fp", started_ns=first)
    for name in names:
        cache.put(name, Entry(old, b"\0" * 16, scan, None))
    cache.save()
    folder = cache_module.project_cache_dir(tmp_path)
    written = {p.name: p.read_bytes() for p in folder.glob("facts-fp-*.json")}
    assert len(written) == SHARDS

    later = first + 10 * RACY_NS
    again = FactCache(tmp_path, "fp", started_ns=later)
    for name in names:
        assert again.fresh(name, old) is not None
    changed = (later - 5 * RACY_NS, later - 5 * RACY_NS, 11, 1)
    again.put("m7.py", Entry(changed, b"\1" * 16, scan, None))
    again.save()
    now = {p.name: p.read_bytes() for p in folder.glob("facts-fp-*.json")}
    differ = {name for name in now if now[name] != written[name]}
    assert differ == {f"facts-fp-{shard_of('m7.py'):02d}.json"}

    third = FactCache(tmp_path, "fp", started_ns=later + 1)
    assert third.fresh("m7.py", changed) == Entry(changed, b"\1" * 16, scan, None)
    assert all(third.fresh(name, old) is not None for name in names if name != "m7.py")


def test_a_second_save_writes_only_what_was_put_since(tmp_path, monkeypatch):
    """The parent saves the facts while forked judges work, and once more at the end
    for what it analysed itself since: the second save must not rewrite every shard."""
    from seqguard.lint.cache import SHARDS, Entry, FactCache, _Store, shard_of
    from seqguard.lint.model import ScanFacts
    scan = ScanFacts((), (), True, False)
    names = [f"m{i}.py" for i in range(200)]
    cache = FactCache(tmp_path, "fp", started_ns=time.time_ns())
    for name in names:
        cache.put(name, Entry((1, 1, 10, 1), b"\0" * 16, scan, None))
    writes = []
    real_write = _Store.write
    monkeypatch.setattr(_Store, "write", lambda self, value: (writes.append(self.path.name), real_write(self, value)))
    cache.save()
    assert len(writes) == SHARDS
    writes.clear()
    cache.save()
    assert writes == []
    cache.put("m7.py", Entry((2, 2, 11, 1), b"\1" * 16, scan, None))
    cache.save()
    assert writes == [f"facts-fp-{shard_of('m7.py'):02d}.json"]


def test_facts_of_an_older_layout_are_swept(tmp_path, runner):
    root = project(tmp_path / "proj", {"a.py": BAD_READ})
    folder = cache_module.project_cache_dir(root)
    folder.mkdir(parents=True)
    fingerprint = load_config([root]).analysis_fingerprint
    (folder / f"facts-{fingerprint}.json").write_bytes(b"the one-file layout")
    assert lint_json(runner, root) == (1, [("a.py", 2, "SG002")])
    assert not (folder / f"facts-{fingerprint}.json").exists()


def test_the_cache_lives_outside_the_tree(tmp_path, runner):
    root = project(tmp_path / "proj", {"a.py": BAD_READ})
    lint_json(runner, root)
    assert not (root / ".seqguard_cache").exists()
    home = Path(os.environ["SEQGUARD_CACHE_DIR"])
    folder = cache_module.project_cache_dir(root)
    assert folder.parent == home and folder.name.startswith("proj-")
    facts = f"facts-{load_config([root]).analysis_fingerprint}-{cache_module.shard_of('a.py'):02d}.json"
    assert sorted(p.name for p in folder.iterdir()) == [facts, "last-result.json"]
    assert oct(os.stat(home / "secret").st_mode & 0o777) == "0o600"


def test_a_cache_home_others_can_write_is_not_used(tmp_path, runner, monkeypatch):
    home = tmp_path / "shared"
    home.mkdir()
    home.chmod(0o777)
    monkeypatch.setenv("SEQGUARD_CACHE_DIR", str(home))
    root = project(tmp_path / "proj", {"a.py": BAD_READ})
    assert lint_json(runner, root) == (1, [("a.py", 2, "SG002")])
    assert lint_json(runner, root) == (1, [("a.py", 2, "SG002")])
    assert list(home.iterdir()) == []


@pytest.mark.parametrize("where", ["in-tree", "cache-dir"])
def test_a_fifo_at_the_cache_path_does_not_hang(tmp_path, where):
    root = project(tmp_path / "proj", {"a.py": BAD_READ})
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    run = [sys.executable, "-m", "seqguard", "lint", "."]
    if where == "in-tree":
        (root / ".seqguard_cache").mkdir()
        fifo = root / ".seqguard_cache" / "last-result.pickle"
    else:
        subprocess.run(run, cwd=root, env=env, capture_output=True, timeout=60)
        fifo = cache_module.project_cache_dir(root) / "last-result.json"
        fifo.unlink()
    os.mkfifo(fifo)
    result = subprocess.run(run, cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "a.py:2:12: SG002" in result.stdout


def test_temp_files_a_killed_run_left_in_the_cache_dir_are_swept(tmp_path, runner):
    root = project(tmp_path, {"a.py": BAD_READ})
    lint_json(runner, root)
    folder = cache_module.project_cache_dir(root)
    stale = folder / ".last-result.json.k1lled.seqguard-tmp"
    stale.write_text("{")
    os.utime(stale, (HOUR_AGO, HOUR_AGO))
    lint_json(runner, root)
    assert not stale.exists()


def _installed_copy(tmp_path: Path) -> Path:
    """A private copy of the seqguard package, as an upgrade would replace it."""
    copy = tmp_path / "site"
    shutil.copytree(SRC / "seqguard", copy / "seqguard", ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def _lint_with(site: Path, root: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-m", "seqguard", "lint", "."], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120).stdout


def test_a_changed_rule_is_not_answered_from_the_old_result(tmp_path):
    site = _installed_copy(tmp_path)
    root = project(tmp_path / "proj", {"a.py": BAD_READ})
    assert "may be None here" in _lint_with(site, root)
    rule = site / "seqguard" / "lint" / "rules" / "unguarded_mirror_read.py"
    rule.write_text(rule.read_text().replace("may be None here", "can be None here"))
    assert _lint_with(site, root).count("can be None here") == 1


@pytest.mark.parametrize("change", ["version", "package"])
def test_the_result_cache_is_keyed_on_the_version_and_the_package(tmp_path, monkeypatch, change):
    import seqguard.lint.runner as runner_module
    root = project(tmp_path, {"a.py": BAD_READ})
    config = load_config([root])
    first = lint_paths([root], config).diagnostics
    calls = []
    real_lint = runner_module._lint
    monkeypatch.setattr(runner_module, "_lint", lambda *a: calls.append(1) or real_lint(*a))
    assert lint_paths([root], config).diagnostics == first and calls == []   # answered from the cache
    if change == "version":
        monkeypatch.setattr(runner_module, "__version__", "999.0")
    else:
        monkeypatch.setattr(cache_module, "_fingerprint", "another build of seqguard")
    assert lint_paths([root], config).diagnostics == first and calls == [1]


def test_the_package_fingerprint_covers_rules_and_is_cheap(tmp_path):
    site = _installed_copy(tmp_path)
    code = ("import time; t = time.perf_counter(); from seqguard.lint.cache import package_fingerprint as f; "
            "t = time.perf_counter(); print(f(), time.perf_counter() - t)")

    def fingerprint() -> tuple[str, float]:
        out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(site)},
                             capture_output=True, text=True, timeout=60).stdout.split()
        return out[0], float(out[1])
    before, seconds = fingerprint()
    assert seconds < 0.05
    for rel in ("lint/rules/unguarded_mirror_read.py", "config.py", "lint/analysis/walk.py"):
        path = site / "seqguard" / rel
        path.write_text(path.read_text() + "\n# edited\n")
        after, _ = fingerprint()
        assert after != before, rel
        before = after
    # an edit of the same size: the mtime tells (as it tells Python to recompile)
    path = site / "seqguard" / "lint" / "rules" / "unguarded_mirror_read.py"
    text = path.read_text()
    path.write_text(text.replace("# edited", "# EDITED"))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    after, _ = fingerprint()
    assert after != before


def test_a_full_disk_leaves_no_temp_file_and_lint_still_answers(tmp_path, runner, monkeypatch):
    import errno
    root = project(tmp_path / "proj", {"a.py": BAD_READ})
    real_fdopen = os.fdopen

    class DiskFull:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def __getattr__(self, name):
            return getattr(self.f, name)

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(os, "fdopen", lambda fd, *a, **k: DiskFull(real_fdopen(fd, *a, **k)))
        assert lint_json(runner, root) == (1, [("a.py", 2, "SG002")])
    leftovers = [p for p in cache_files(root, ".*") + list(root.rglob(".*")) if "tmp" in p.name]
    assert leftovers == []


def test_the_facts_cache_is_keyed_on_the_package(tmp_path, monkeypatch):
    root = project(tmp_path, {"a.py": BAD_READ})
    config = load_config([root])
    lint_paths([root], config)
    assert cache_module.FactCache(root, config.analysis_fingerprint).get("a.py") is not None
    monkeypatch.setattr(cache_module, "_fingerprint", "another build of seqguard")
    assert cache_module.FactCache(root, config.analysis_fingerprint).get("a.py") is None


def test_a_run_answered_from_the_result_cache_loads_no_analyzer(tmp_path):
    """The warm path is the stat of the tree and one cached result: the analyzer, the
    rules, the engine model, the baseline and the process pool stay unimported (they
    cost most of a warm run's time when they load)."""
    (tmp_path / "pyproject.toml").write_text("[tool.seqguard]\n")
    (tmp_path / "m.py").write_text("def f(b):\n    return b.seq_lens_cpu.max()\n")
    hour_ago = time.time() - 3600  # not racy: a file written this second is never taken from the cache
    for path in (tmp_path / "m.py", tmp_path / "pyproject.toml", tmp_path):
        os.utime(path, (hour_ago, hour_ago))
    probe = (
        "import sys\n"
        "from seqguard.cli import main\n"
        "try:\n"
        f"    main(['lint', {str(tmp_path)!r}])\n"
        "except SystemExit as done:\n"
        "    code = done.code\n"
        "heavy = ['seqguard.lint.analysis.walk', 'seqguard.lint.contract.model', 'seqguard.lint.rules',\n"
        "         'seqguard.lint.baseline', 'seqguard.workers', 'seqguard.lint.model', 'libcst']\n"
        "print(code, [m for m in heavy if m in sys.modules])\n")
    env = {**os.environ, "PYTHONPATH": str(SRC), "SEQGUARD_CACHE_DIR": str(tmp_path / "cache")}
    cold = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    warm = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert cold.stdout.splitlines()[-1].startswith("1 ['seqguard.lint.analysis.walk'"), cold.stdout + cold.stderr
    assert warm.stdout.splitlines()[-1] == "1 []", warm.stdout + warm.stderr
    assert "m.py:2:12: SG002" in warm.stdout
