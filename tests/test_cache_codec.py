"""The cache's generated encoders write exactly what the decoders read back."""

import json
from pathlib import Path

import pytest

from seqguard.lint.cache_format import Malformed, decoder, encode
from seqguard.lint.facts import analyze, scan
from seqguard.lint.model import Callee, CalleeHead, DeepFacts, PathFact, ScanFacts, ValueKind

REPO = Path(__file__).resolve().parents[1]
MIRRORS = ("seq_lens_cpu", "seq_lens_sum")


def _sources() -> list[bytes]:
    found = [p.read_bytes() for p in sorted((REPO / "fixtures").rglob("*.py"))]
    found += [p.read_bytes() for p in sorted((REPO / "src" / "seqguard" / "lint").rglob("*.py"))]
    return found


def test_facts_round_trip_through_json_unchanged():
    sources = _sources()
    assert len(sources) > 20
    deep_decoder, scan_decoder = decoder(DeepFacts), decoder(ScanFacts)
    accesses = decls = 0
    for data in sources:
        deep, scanned = analyze(data, MIRRORS, "seq_lens"), scan(data, MIRRORS)
        assert deep_decoder(json.loads(json.dumps(encode(deep)))) == deep
        assert scan_decoder(json.loads(json.dumps(encode(scanned)))) == scanned
        accesses += len(deep.accesses)
        decls += sum(len(c.decls) for c in deep.classes)
    assert accesses > 20 and decls > 3  # the enums and nested records were exercised


def test_enums_are_written_as_their_words():
    deep = analyze(b"class B(AttentionBackend):\n    needs_cpu_seq_lens = flag()\n"
                   b"    def f(self, fb):\n        return fb.seq_lens_cpu.max()\n", MIRRORS, "seq_lens")
    text = json.dumps(encode(deep))
    assert '"read"' in text and '"cond"' in text and '"class"' in text


def test_class_entries_of_the_wrong_shape_are_malformed():
    """A scan's `classes` are decoded inline (no call per entry); each shape the schema
    forbids must still be Malformed, not a wrong value."""
    import pytest

    from seqguard.lint.cache_format import Malformed
    decode = decoder(ScanFacts)
    good = [[["A", ["B", "C"]], ["D", []]], [], True, False, False, "torch typing", "total_seq_lens", "cpu max"]
    assert decode(good) == ScanFacts((("A", ("B", "C")), ("D", ())), (), True, False, False, "torch typing",
                                     "total_seq_lens", "cpu max")
    for bad in (["A"], "AB", ["A", ["B"], "extra"], [1, ["B"]], ["A", "B"], ["A", [1]], None, 7):
        with pytest.raises(Malformed):
            decode([[bad], *good[1:]])


def test_path_facts_are_written_as_a_test_and_whether_it_held():
    # a fact is a value, not the text "test\0+" each reader parses again (issue 38)
    deep = analyze(b"def f(fb):\n    if not fb.forward_mode.is_decode():\n        return fb.seq_lens_cpu.max()\n",
                   MIRRORS, "seq_lens")
    [access] = deep.accesses
    assert access.path == (PathFact("fb.forward_mode.is_decode()", held=False),)
    assert access.path[0].text == "not (fb.forward_mode.is_decode())"
    text = json.dumps(encode(deep))
    assert '["fb.forward_mode.is_decode()", false]' in text
    assert decoder(DeepFacts)(json.loads(text)) == deep
    old_form = text.replace('["fb.forward_mode.is_decode()", false]', '"fb.forward_mode.is_decode()\\u0000-"')
    with pytest.raises(Malformed):
        decoder(DeepFacts)(json.loads(old_form))


def test_stored_values_and_callees_are_records_not_text():
    # issue 38: "copy:seq_lens_cpu|<term>|batch" and "<self>.fill" were mini-languages
    # parsed again by each reader
    deep = analyze(b"class Runner:\n    def build(self, batch):\n        out = Out()\n"
                   b"        out.seq_lens_cpu = batch.seq_lens_cpu\n        self.fill(batch.seq_lens_cpu)\n"
                   b"        return out\n", MIRRORS, "seq_lens")
    [store] = deep.stores
    assert [(v.kind, v.attr, v.source) for v in store.values] == [(ValueKind.COPY, "seq_lens_cpu", "batch")]
    [passed] = [a for a in deep.accesses if a.passed_to is not None]
    assert passed.passed_to == (Callee(CalleeHead.SELF, "fill"), 0) and str(passed.passed_to[0]) == "self.fill"
    text = json.dumps(encode(deep))
    assert '"<self>' not in text and "copy:" not in text
    assert decoder(DeepFacts)(json.loads(text)) == deep
