"""BENCHMARKS.md shows commands anyone can run, never a folder of the machine it ran on
(issue 16, item 6): no absolute path in its command blocks or in the benchmarks' usage
lines, and every tree a benchmark reads is made by a command in the same block."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# /tmp/sg/s523, /work/..., /home/me/...: a folder of one machine
MACHINE_FOLDER = re.compile(r"(?<![\w.~$])/(?:tmp|work|home|root|Users|mnt|data|scratch|opt)/")


def command_blocks(text: str) -> list[str]:
    return re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M)


def test_the_benchmark_commands_name_no_folder_of_this_machine():
    blocks = command_blocks((REPO / "BENCHMARKS.md").read_text())
    assert len(blocks) >= 5
    usage = [
        (REPO / "benchmarks" / name).read_text().split('"""')[1]
        for name in ("bench_lint.py", "bench_codemod.py", "bench_history.py")
    ]
    for text in blocks + usage:
        assert not MACHINE_FOLDER.search(text), text


def test_every_tree_a_benchmark_reads_is_made_in_the_same_block():
    checked = 0
    for block in command_blocks((REPO / "BENCHMARKS.md").read_text()):
        for tree in re.findall(r"benchmarks/bench_(?:lint|codemod)\.py (\S+)", block):
            assert re.search(rf"pip download [^\n]*-d {re.escape(tree)}\b", block), block
            checked += 1
        for ref in re.findall(r"--reference-src (\S+?)/src\b", block):
            assert re.search(rf"git worktree add {re.escape(ref)} [0-9a-f]{{7,40}}", block), block
    assert checked >= 3
