"""Word -> the files whose scan holds it: the files whose import statements hold a
name, or whose text names it as an attribute (`.execute`). Both bound where a call of a
function or a method can be, without reading the files again."""

from __future__ import annotations

from typing import Callable, Iterable, Optional

# Words searched for one by one before the whole word -> files map is built (on SGLang
# one search costs about a thirtieth of the map).
WORDS_SEARCHED = 16


class WordFiles:
    """The files whose word string (space-separated, from the scan) holds a word. A run
    that judges a few reads (pre-commit on one file) asks for a few words: each is found
    by a search of the strings. A run that asks more, or `index_all` (before forked
    judges share the answers), builds the whole map instead."""

    def __init__(self, strings: Callable[[], Iterable[tuple[str, str]]]) -> None:
        self._strings = strings   # () -> (relpath, its words)
        self._by_word: Optional[dict[str, set[str]]] = None
        self._memo: dict[str, set[str]] = {}
        self._padded: Optional[list[tuple[str, str]]] = None

    def files_holding(self, word: str) -> set[str]:
        if not word or word.split() != [word]:
            return set()  # no word is empty or holds a space (`my mod` of `my mod.py`)
        if self._by_word is None and len(self._memo) >= WORDS_SEARCHED:
            self.index_all()  # a run asking this many words asks more: the whole map is cheaper
        if self._by_word is not None:
            return self._by_word.get(word, set())
        found = self._memo.get(word)
        if found is None:
            if self._padded is None:
                self._padded = [(relpath, f" {words} ") for relpath, words in self._strings()]
            needle = f" {word} "
            found = self._memo[word] = {relpath for relpath, words in self._padded if needle in words}
        return found

    def index_all(self) -> None:
        if self._by_word is None:
            by_word: dict[str, set[str]] = {}
            for relpath, words in self._strings():
                for word in words.split():
                    by_word.setdefault(word, set()).add(relpath)
            self._by_word = by_word
