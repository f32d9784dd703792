"""Word -> the files whose scan holds it: the files whose import statements hold a
name, or whose text names it as an attribute (`.execute`). Both bound where a call of a
function or a method can be, without reading the files again."""

from __future__ import annotations

import bisect
from typing import Callable, Iterable, Optional

# Words searched for one by one before the whole word -> files map is built (on SGLang
# one search of the import words costs about a thirtieth of their map).
WORDS_SEARCHED = 16


class WordFiles:
    """The files whose word string (space-separated, from the scan) holds a word. A run
    that judges a few reads (pre-commit on one file) asks for a few words: each is found
    by one search of all the strings joined. A run that asks more than `searched`, or
    `index_all` (before forked judges share the answers), builds the whole map instead."""

    def __init__(self, strings: Callable[[], Iterable[tuple[str, str]]], searched: int = WORDS_SEARCHED) -> None:
        self._strings = strings   # () -> (relpath, its words)
        self._searched = searched
        self._by_word: Optional[dict[str, set[str]]] = None
        self._memo: dict[str, set[str]] = {}
        self._joined: Optional[tuple[str, list[int], list[str]]] = None

    def files_holding(self, word: str) -> set[str]:
        if not word or word.split() != [word]:
            return set()  # no word is empty or holds a space (`my mod` of `my mod.py`)
        if self._by_word is None and len(self._memo) >= self._searched:
            self.index_all()  # a run asking this many words asks more: the whole map is cheaper
        if self._by_word is not None:
            return self._by_word.get(word, set())
        found = self._memo.get(word)
        if found is None:
            found = self._memo[word] = self._search(word)
        return found

    def _search(self, word: str) -> set[str]:
        if self._joined is None:
            # every file's words between spaces, one file to a line: a word is in a file
            # where ` word ` is found, and a file holds it once (the scan dedupes)
            relpaths, pieces, starts, at = [], [], [], 0
            for relpath, words in self._strings():
                relpaths.append(relpath)
                starts.append(at)
                pieces.append(f" {words} \n")
                at += len(words) + 3
            self._joined = ("".join(pieces), starts, relpaths)
        text, starts, relpaths = self._joined
        needle, found = f" {word} ", set()
        at = text.find(needle)
        while at != -1:
            found.add(relpaths[bisect.bisect_right(starts, at) - 1])
            at = text.find(needle, at + len(needle) - 1)
        return found

    def index_all(self) -> None:
        if self._by_word is None:
            by_word: dict[str, set[str]] = {}
            for relpath, words in self._strings():
                for word in words.split():
                    by_word.setdefault(word, set()).add(relpath)
            self._by_word = by_word
