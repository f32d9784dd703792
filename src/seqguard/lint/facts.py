"""Per-file facts: a byte-level scan for every file, a full `ast` analysis only for
files that can hold a finding. Both depend on the file's bytes alone, so they are
cached by content hash and computed in worker processes."""

from __future__ import annotations

import ast
import io
import re
import tokenize
import unicodedata
import warnings
from typing import Iterable, Optional

from seqguard.config import DEFAULT_DEVICE_LENGTH_NAME_PARTS, DEFAULT_HOST_NAME_WORDS
from seqguard.lint.analysis.classes import FLAG
from seqguard.lint.analysis.walk import ModuleAnalysis
from seqguard.lint.analysis.skeleton import tree_without_bodies
from seqguard.lint.analysis.source import decode_source
from seqguard.lint.model import DeepFacts, ScanFacts

# Both patterns start with a literal so `re` can skip ahead with a fast substring search;
# anchoring (`^` with re.M, or a leading `\b`) made the scan 6x slower on SGLang.
# `class X(bases)` and `class X:` (a mixin without bases can still declare the flag)
_CLASS_RE = re.compile(rb"class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\)|:)")
_ALIAS_RE = re.compile(rb" as[ \t]+(\w+)")
# the word before ` as`, matched on the reversed line tail: searching forwards for
# `(\w+)[ \t]*$` tries every position of the window
_WORD_BEFORE_REVERSED_RE = re.compile(rb"[ \t]*(\w+)")
_WORD_RE = re.compile(rb"\w+")
# `.name`, with what may stand between in brackets or after a `\` (spaces, new lines,
# a comment): every attribute a file names, which is where a method can be called on
# an object whose class the file never names (a factory's return, a parameter)
_ATTRIBUTE_RE = re.compile(rb"\.(?:[\s\\]|#[^\n]*)*(\w+)")
# `getattr(obj, "name")`: the walk reads it as `obj.name`, so the file names the attribute
_GETATTR_RE = re.compile(rb"getattr\((?:[^,()]|\([^()]*\))*,\s*[rbuRBU]?['\"](\w+)['\"]")
# `import a.b as c`, `from a.b import (c,\n d)`: what follows the keyword
_IMPORT_RE = re.compile(rb"import[ \t]+(\([^)]*\)|[^\n]*)")
_IMPORT_KEYWORDS = frozenset({b"from", b"import", b"as"})
# The first two UTF-8 bytes of every character NFKC turns into identifier ASCII
# (fullwidth `ｓ`, mathematical `𝐬`, ligature `ﬁ`, superscript `²`, ...), computed over
# every code point (tests/test_hardening.py recomputes it): a file without one spells
# no mirror in a way the plain byte search misses.
_NFKC_TO_ASCII = re.compile(b"|".join(re.escape(bytes.fromhex(h)) for h in (
    "c2aa c2b2 c2b3 c2b9 c2ba c4b2 c4b3 c5bf c787 c788 c789 c78a c78b c78c c7b1 c7b2 c7b3 cab0 cab2 "
    "cab3 cab7 cab8 cba1 cba2 cba3 e1b4 e1b5 e1b6 e281 e282 e284 e285 e291 e292 e293 e2b1 e389 e38a "
    "e38b e38d e38e e38f ea9f efac efb8 efb9 efbc efbd f090 f09d f09f").split()))
# `# seqguard: ignore[SG002, SG003]`; a bare `ignore` (no brackets) silences every code.
SUPPRESSION_MARKER = re.compile(r"(?<!\S)#\s*seqguard:\s*ignore(?:\[([A-Za-z0-9_,\s]*)\])?")


def scan(data: bytes, mirrors: Iterable[str], device_words: Iterable[str] = (), flag: str = FLAG) -> ScanFacts:
    """Classes and their base identifiers, `X as Y` aliases, and whether the file
    mentions a mirror or the flag; enough to decide whether to parse it. Also the
    names holding a device word (`seq_lens`) that a line annotates."""
    classes = tuple(
        (m.group(1).decode("ascii", "replace"),
         tuple(w.decode("ascii", "replace") for w in _WORD_RE.findall(m.group(2) or b"")))
        for m in _CLASS_RE.finditer(data) if _starts_line(data, m.start())
    )
    aliases = []
    if classes:
        for m in _ALIAS_RE.finditer(data):
            before = _word_before(data, m.start())
            if before is not None and before != m.group(1):
                aliases.append((before.decode("ascii", "replace"), m.group(1).decode("ascii", "replace")))
    mentions_mirror = any(m.encode() in data for m in mirrors)
    mentions_flag = flag.encode() in data
    attributes = set(_ATTRIBUTE_RE.findall(data))
    if b"getattr(" in data:
        attributes.update(_GETATTR_RE.findall(data))
    if not data.isascii():
        # identifiers are NFKC-normalised by Python: `b.ｓeq_lens_cpu` reads the mirror
        # (only the lines with non-ASCII bytes can hold such a spelling)
        lines = _non_ascii_lines(data)
        if lines:
            text = unicodedata.normalize("NFKC", lines.decode("utf-8", "replace"))
            mentions_mirror = mentions_mirror or any(m in text for m in mirrors)
            mentions_flag = mentions_flag or flag in text
            attributes.update(_ATTRIBUTE_RE.findall(text.encode("utf-8", "replace")))
    return ScanFacts(
        classes=classes,
        aliases=tuple(aliases),
        mentions_mirror=mentions_mirror,
        mentions_flag=mentions_flag,
        mentions_suppression=b"seqguard:" in data,
        imported=_imported_words(data),
        annotated=_annotated_names(data, tuple(device_words)),
        attributes=b" ".join(sorted(attributes)).decode("ascii", "replace"),
    )


def _annotated_names(data: bytes, words: tuple[str, ...]) -> str:
    """The names holding one of `words` that the file annotates (`total_seq_lens: int`,
    anywhere: a class field, a parameter, a slice also matches) as `name`, and those it
    stores or annotates as an attribute (`self.total_seq_lens = ...`) as `.name`;
    sorted, space-separated. The contract trusts a field's declared type only where no
    attribute store of that name exists."""
    found = set()
    for word in words:
        needle = word.encode()
        at = data.find(needle)
        while at != -1:
            # `bytes.find` skips ahead in C: a regex over the file cost SGLang 0.2-0.4 s
            tail = at + len(needle)
            annotated = _ANNOTATION_TAIL.match(data, tail)
            stored = None if annotated is not None else _STORE_TAIL.match(data, tail)
            if annotated is not None or stored is not None:
                start = at
                while start > 0 and (data[start - 1] == 95 or chr(data[start - 1]).isalnum()):  # 95: `_`
                    start -= 1
                name = data[start:(annotated or stored).end(1)]
                attribute = start > 0 and data[start - 1] == 46  # 46: `.`
                if attribute:
                    found.add(b"." + name)
                elif annotated is not None:
                    found.add(name)
            at = data.find(needle, at + 1)
    return b" ".join(sorted(found)).decode("ascii", "replace")


# what follows a device word where it is annotated (the rest of the name, `:`, a type)
# or assigned (`=`, `+=`, not `==`)
_ANNOTATION_TAIL = re.compile(rb"(\w*)[ \t]*:[ \t]*[^\s=]")
_STORE_TAIL = re.compile(rb"(\w*)[ \t]*(?:[-+*/%&|^@]|//|<<|>>|\*\*)?=(?!=)")


def _non_ascii_lines(data: bytes) -> bytes:
    """The lines holding a character NFKC turns into ASCII, joined (each once: the
    search resumes after the line it found)."""
    lines = []
    m = _NFKC_TO_ASCII.search(data)
    while m is not None:
        start = data.rfind(b"\n", 0, m.start()) + 1
        end = data.find(b"\n", m.end())
        if end == -1:
            lines.append(data[start:])
            break
        lines.append(data[start:end])
        m = _NFKC_TO_ASCII.search(data, end)
    return b"\n".join(lines)


def _imported_words(data: bytes) -> str:
    """Every word after an `import` keyword (`from a import f, g as h`: f, g, h;
    `import a.b`: a, b; `*` for a star import), sorted, space-separated: a module-level
    function or class of another module can only be named by a file that imports it or
    its module, so these bound where its callers can be. A stray `import` in a comment
    only adds words. One string, not a tuple of words: every run loads every file's
    scan from the cache, and SGLang's 4,719 hold 165,000 words that only a question
    about callers ever splits."""
    blob = b" ".join(_IMPORT_RE.findall(data))
    words = set(_WORD_RE.findall(blob)) - _IMPORT_KEYWORDS
    if b"*" in blob:
        words.add(b"*")
    return b" ".join(sorted(words)).decode("ascii", "replace")


def _word_before(data: bytes, end: int) -> Optional[bytes]:
    """The word that ends the (at most 100) bytes before `end`, spaces and tabs after
    it allowed, one newline too (as `(\\w+)[ \\t]*$` searched there finds it)."""
    window = data[max(0, end - 100):end]
    if window.endswith(b"\n"):
        window = window[:-1]
    found = _WORD_BEFORE_REVERSED_RE.match(window[::-1])
    return found.group(1)[::-1] if found is not None else None


def _starts_line(data: bytes, index: int) -> bool:
    """Only indentation between the previous newline and `index`."""
    line_start = max(data.rfind(b"\n", 0, index), data.rfind(b"\r", 0, index)) + 1  # \r alone ends a line too
    return not data[line_start:index].strip(b" \t")


def analyze(data: bytes, mirrors: Iterable[str], device_attribute: str, words: Iterable[str] = (),
            device_lengths: Iterable[str] = (), flag: str = FLAG, host_words: Iterable[str] = DEFAULT_HOST_NAME_WORDS,
            length_parts: Iterable[str] = DEFAULT_DEVICE_LENGTH_NAME_PARTS) -> DeepFacts:
    """The full analysis of one file. `words`: the engine model's condition names
    (`Config.condition_words`), whose tests the walk records as path facts;
    `device_lengths`: device length attributes besides `device_attribute` (SG004);
    `flag`: the attribute a backend declares (`flag-attribute`); `host_words`,
    `length_parts`: the names that say a tensor is a host copy, or device lengths
    (`host-name-words`, `device-length-name-parts`)."""
    try:
        text = decode_source(data)
    except (UnicodeDecodeError, SyntaxError, LookupError) as e:
        return DeepFacts(error=(1, 1, f"cannot decode: {e}; save the file as UTF-8 or fix its coding cookie"))
    model = (words, device_lengths, flag, host_words, length_parts)
    analysis = None if "\r" in text else ModuleAnalysis(mirrors, device_attribute, text, *model)
    # the bodies the walk skips are not built (`skeleton`); the whole text when that fails
    tree = tree_without_bodies(text, analysis.relevant_lines) if analysis is not None else None
    if tree is None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # invalid escape sequences are not our business
                tree = ast.parse(text)
        except SyntaxError as e:
            line, col = e.lineno or 1, (e.offset or 1)
            return DeepFacts(error=(line, col, f"cannot parse: {e.msg}"))
        except (ValueError, RecursionError, MemoryError) as e:
            return DeepFacts(error=(1, 1, f"cannot parse: {e}"))
    if analysis is None:
        # Python ends lines at \r\n, \r and \n alike (so does `ast`); the line counts made
        # from the text below split at "\n" only. Same lines, same columns: only the ends
        # move. `ast` itself gets the original: it differs on a `\` continuation at EOF.
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        analysis = ModuleAnalysis(mirrors, device_attribute, text, *model)
    try:
        result = analysis.run(tree)
    except RecursionError:
        return DeepFacts(error=(1, 1, "cannot analyse: expression nested too deeply"))
    return DeepFacts(
        classes=tuple(result.classes),
        accesses=tuple(result.accesses),
        imports=tuple(result.names.imports.items()),
        top_level_classes=tuple(result.names.top_level_classes),
        top_level_functions=tuple(result.names.top_level_functions),
        functions=tuple(result.names.functions),
        name_aliases=tuple(result.names.name_aliases.items()),
        tried_bindings=tuple(result.names.tried_bindings),
        suppressions=tuple(find_suppressions(text)),
        stores=tuple(result.stores),
    )


def marker_codes(match: re.Match) -> Optional[frozenset]:
    """The codes a SUPPRESSION_MARKER match names; None for a bare `ignore` (every code)."""
    codes = match.group(1)
    return None if codes is None else frozenset(c.strip() for c in codes.split(",") if c.strip())


def find_suppressions(text: str) -> list[tuple[int, Optional[frozenset]]]:
    """`# seqguard: ignore[SG002, SG003]` in a comment; a bare `ignore` silences every code.
    Only real comments count (tokenized), not the same text inside a string."""
    if "seqguard:" not in text:
        return []
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type != tokenize.COMMENT or "seqguard:" not in token.string:
                continue
            match = SUPPRESSION_MARKER.search(token.string)
            if match:
                found.append((token.start[0], marker_codes(match)))
    except (tokenize.TokenError, SyntaxError):
        pass  # the file parsed with `ast`; a tokenizer hiccup costs only the markers
    return found
