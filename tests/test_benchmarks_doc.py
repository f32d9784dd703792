"""BENCHMARKS.md shows commands anyone can run, never a folder of the machine it ran on
(issue 16, item 6): no absolute path in its command blocks, the diary's
(docs/benchmarks-history.md) or the benchmarks' usage lines, and every tree a benchmark
reads is made by a command in the same block. BENCHMARKS.md holds the current numbers
only, each with its command, machine and date (issue 37)."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CURRENT = REPO / "BENCHMARKS.md"
DIARY = REPO / "docs" / "benchmarks-history.md"
# /tmp/sg/s523, /work/..., /home/me/...: a folder of one machine
MACHINE_FOLDER = re.compile(r"(?<![\w.~$])/(?:tmp|work|home|root|Users|mnt|data|scratch|opt)/")


def command_blocks(text: str) -> list[str]:
    return re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M)


def test_the_benchmark_commands_name_no_folder_of_this_machine():
    blocks = command_blocks(CURRENT.read_text())
    assert len(blocks) >= 5
    blocks += command_blocks(DIARY.read_text())
    usage = [
        (REPO / "benchmarks" / name).read_text().split('"""')[1]
        for name in ("bench_lint.py", "bench_codemod.py", "bench_history.py")
    ]
    for text in blocks + usage:
        assert not MACHINE_FOLDER.search(text), text


def test_every_tree_a_benchmark_reads_is_made_in_the_same_block():
    for page, least in ((CURRENT, 2), (DIARY, 3)):
        checked = 0
        for block in command_blocks(page.read_text()):
            for tree in re.findall(r"benchmarks/bench_(?:lint|codemod)\.py (\S+)", block):
                assert re.search(rf"pip download [^\n]*-d {re.escape(tree)}\b", block), block
                checked += 1
            for ref in re.findall(r"--reference-src (\S+?)/src\b", block):
                assert re.search(rf"git worktree add {re.escape(ref)} [0-9a-f]{{7,40}}", block), block
        assert checked >= least, page


def test_each_current_number_says_its_command_machine_and_date():
    sections = re.split(r"^## ", CURRENT.read_text(), flags=re.M)[1:]
    titles = [s.split("\n", 1)[0] for s in sections]
    assert titles[0] == "At a glance" and len(titles) >= 7, titles
    for section in sections[1:]:
        title = section.split("\n", 1)[0]
        assert command_blocks(section), title
        assert re.search(r"\b20\d\d-\d\d-\d\d\b", section), title
        assert re.search(r"\bVM\b|H200|development machine", section), title
    # one section per benchmark: no dated diary of rounds ("After the eighth session")
    assert not re.search(r"^### ", CURRENT.read_text(), flags=re.M)


def history_table(text: str) -> str:
    return re.search(r"^\| release \|.*?(?=\n\n)", text, flags=re.S | re.M).group(0)


def test_the_history_table_is_the_same_in_benchmarks_and_in_its_page():
    assert history_table(CURRENT.read_text()) == history_table((REPO / "docs" / "history.md").read_text())
