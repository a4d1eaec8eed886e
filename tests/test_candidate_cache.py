"""The open vocabulary's candidate list kept in the user cache as plain arrays (core/words/candidate_cache.py):
read back as it was built, built again when the file is damaged, foreign or of other sources, never unpickled, and
never written for a user's words or a stand-in of WordNet's list."""
from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from core.lexicon.dictionary import Entry
from core.words.candidate_cache import (SUFFIX, UnusableCache, cached_candidates, candidates_key, load_candidates,
                                        save_candidates)
from core.words.open_vocab import Candidates
from core.words.vocabulary import WordFilter

ENTRIES = [Entry("dog", "a domestic animal that barks", "n"), Entry("ice cream", "a frozen sweet food", "n"),
           Entry("run", "to move fast on foot", "v"), Entry("run", "a score in baseball", "n"),
           Entry("leader", "a person who is in charge", "n"), Entry("chief", "a person who is in charge", "n"),
           Entry("chief", "most important", "a"), Entry("well-known", "known by many", ""),
           Entry("café", "a small restaurant", "n")]
RAN = []  # what a pickled payload appends to, were it ever unpickled


def _ran() -> None:
    RAN.append(1)


class _Payload:
    def __reduce__(self):
        return _ran, ()


def assert_same(read: Candidates, built: Candidates) -> None:
    assert read.words == built.words and read.definitions == built.definitions
    assert read.definition_pos == built.definition_pos
    for name in ("token_ids", "pair_definition", "pair_word", "zipf"):
        ours, theirs = getattr(read, name), getattr(built, name)
        assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs), name
    f, g = read.filters, built.filters
    assert f.words == g.words and f.id_of == g.id_of and f._pos_of == g._pos_of
    assert np.array_equal(f.candidate_mask, g.candidate_mask) and np.array_equal(f.lengths, g.lengths)
    for word_filter in (WordFilter(), WordFilter(pos="n"), WordFilter(pos="a"), WordFilter(pattern="?ce*"),
                        WordFilter(min_length=4, max_length=8, initial="r")):
        assert np.array_equal(f.mask(word_filter), g.mask(word_filter))
    assert [f.main_pos(w) for w in f.words] == [g.main_pos(w) for w in g.words]
    assert read.fingerprint() == built.fingerprint() and read.first_definitions == built.first_definitions
    assert read.defined_rows == built.defined_rows and np.array_equal(read.single_token, built.single_token)


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "lemmas.jsonl.gz"
    path.write_bytes(b"one")
    return path


def cache(engine, source, folder):
    """(build: counts its calls, key, folder) of a cache of ENTRIES."""
    builds = []

    def build() -> Candidates:
        builds.append(1)
        return Candidates(ENTRIES, engine.words.vocab)
    return build, builds, candidates_key(source, engine.words.vocab.words)


def test_a_cached_list_is_read_back_as_built(engine, source, tmp_path):
    build, builds, key = cache(engine, source, tmp_path)
    first = cached_candidates(build, key, tmp_path, engine.words.vocab)
    again = cached_candidates(build, key, tmp_path, engine.words.vocab)
    assert len(builds) == 1 and list(tmp_path.glob(f"*{SUFFIX}")) == [tmp_path / (key + SUFFIX)]
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left
    assert_same(again, Candidates(ENTRIES, engine.words.vocab))
    assert_same(first, again)
    assert again.filters.main_pos("run") == "noun" and again.filters._pos_of["well-known"] == set()
    assert again.single_token.any()  # the tiny head has "dog" and "run" as tokens


def test_other_sources_give_another_key(engine, source, tmp_path):
    key = candidates_key(source, engine.words.vocab.words)
    assert candidates_key(source, engine.words.vocab.words) == key
    assert candidates_key(source, engine.words.vocab.words[:-1]) != key  # another head vocabulary
    frequencies = tmp_path / "frequencies.tsv.gz"
    frequencies.write_bytes(b"other")
    assert candidates_key(source, engine.words.vocab.words, frequencies) != key
    source.write_bytes(b"changed")  # another dictionary file
    assert candidates_key(source, engine.words.vocab.words) != key


def test_a_file_of_another_key_is_not_used(engine, source, tmp_path):
    build, builds, key = cache(engine, source, tmp_path)
    save_candidates(Candidates(ENTRIES[:3], engine.words.vocab), tmp_path / ("other" + SUFFIX), "other")
    (tmp_path / ("other" + SUFFIX)).rename(tmp_path / (key + SUFFIX))  # the right name, another list inside
    with pytest.raises(UnusableCache, match="another list"):
        load_candidates(tmp_path / (key + SUFFIX), key, engine.words.vocab)
    assert_same(cached_candidates(build, key, tmp_path, engine.words.vocab), Candidates(ENTRIES, engine.words.vocab))
    assert len(builds) == 1
    assert_same(load_candidates(tmp_path / (key + SUFFIX), key, engine.words.vocab), Candidates(ENTRIES, engine.words.vocab))


def _rewritten(path, change) -> None:
    """The .npz at `path` with its arrays passed through `change` (a dict of arrays -> one)."""
    with np.load(path) as stored:
        arrays = {name: stored[name] for name in stored.files}
    with open(path, "wb") as out:
        np.savez(out, **change(arrays))


@pytest.mark.parametrize("damage", [
    lambda path: path.write_bytes(b"damaged"),
    lambda path: path.write_bytes(path.read_bytes()[:-1000]),  # cut short
    lambda path: path.write_bytes(b""),
    lambda path: _flip_a_byte(path),  # the members' checksums catch it
    lambda path: _rewritten(path, lambda a: {**a, "token_ids": a["token_ids"].astype(np.int32)}),
    lambda path: _rewritten(path, lambda a: {**a, "pair_word": a["pair_word"][:-1]}),
    lambda path: _rewritten(path, lambda a: {**a, "pair_definition": a["pair_definition"] + 1000}),
    lambda path: _rewritten(path, lambda a: {**a, "token_ids": a["token_ids"] + 10 ** 6}),
    lambda path: _rewritten(path, lambda a: {**a, "words": a["words"][::-1].copy()}),  # not sorted
    lambda path: _rewritten(path, lambda a: {**a, "meta": np.frombuffer(b"{not json", np.uint8)}),
    lambda path: _rewritten(path, lambda a: {**a, "definitions": np.frombuffer(b"\xff\xfe", np.uint8)}),
    lambda path: _rewritten(path, lambda a: {k: v for k, v in a.items() if k != "zipf"}),
    lambda path: _rewritten(path, lambda a: {**a, "extra": np.zeros(3)}),
    lambda path: _rewritten(path, lambda a: {**a, "zipf": np.array([_Payload()] * len(a["zipf"]), dtype=object)}),
], ids=["garbage", "cut", "empty", "flipped", "dtype", "length", "definition-index", "token-id", "order", "meta",
        "utf8", "missing", "extra", "pickled"])
def test_a_damaged_file_is_built_again_and_replaced(engine, source, tmp_path, damage):
    build, builds, key = cache(engine, source, tmp_path)
    path = tmp_path / (key + SUFFIX)
    cached_candidates(build, key, tmp_path, engine.words.vocab)
    damage(path)
    with pytest.raises(UnusableCache):
        load_candidates(path, key, engine.words.vocab)
    assert_same(cached_candidates(build, key, tmp_path, engine.words.vocab), Candidates(ENTRIES, engine.words.vocab))
    assert len(builds) == 2 and not RAN  # built again; nothing was unpickled
    assert_same(load_candidates(path, key, engine.words.vocab), Candidates(ENTRIES, engine.words.vocab))  # replaced


def _flip_a_byte(path) -> None:
    """The last byte of the stored definitions changed (the member's header left as it was)."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        info = archive.getinfo("definitions.npy")
    local = info.header_offset  # the local header: 30 bytes, then the name and the extra field
    start = local + 30 + int.from_bytes(data[local + 26:local + 28], "little") + int.from_bytes(data[local + 28:local + 30], "little")
    data[start + info.compress_size - 1] ^= 0x01
    path.write_bytes(bytes(data))


def test_an_unwritable_cache_still_answers(engine, source, tmp_path):
    build, builds, key = cache(engine, source, tmp_path)
    folder = tmp_path / "not-a-folder"
    folder.write_text("a file where the folder should be")
    assert_same(cached_candidates(build, key, folder, engine.words.vocab), Candidates(ENTRIES, engine.words.vocab))


def test_a_list_holding_the_separator_is_not_kept(engine, source, tmp_path):
    entries = [*ENTRIES, Entry("odd", "a definition with a \0 inside", "n")]
    key = candidates_key(source, engine.words.vocab.words)
    built = cached_candidates(lambda: Candidates(entries, engine.words.vocab), key, tmp_path, engine.words.vocab)
    assert "odd" in built.words and not list(tmp_path.glob(f"*{SUFFIX}*"))


def test_the_scorer_caches_wordnets_list_only(engine, monkeypatch, tmp_path):
    import core.lexicon.dictionary
    import core.words.scorer

    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path))
    source = tmp_path / "lemmas.jsonl.gz"
    source.write_bytes(b"stand-in")
    monkeypatch.setattr(core.words.scorer, "WORDNET_SYNSETS_PATH", source)
    monkeypatch.setattr(core.words.scorer, "load_wordnet_lemmas", lambda: ENTRIES)  # a stand-in: never cached
    assert engine.words.candidates(cached=True).words == sorted({e.word for e in ENTRIES})
    assert not list(tmp_path.rglob(f"*{SUFFIX}"))
    # WordNet's own loader (here, standing in for the file above): kept, then read back
    monkeypatch.setattr(core.lexicon.dictionary, "load_wordnet_lemmas", core.words.scorer.load_wordnet_lemmas)
    first = engine.words.candidates(cached=True)
    assert len(list(tmp_path.rglob(f"*{SUFFIX}"))) == 1
    assert_same(engine.words.candidates(cached=True), first)
    # a user's words, another dictionary, or no `cached`: built, never written
    for call in (lambda: engine.words.candidates([Entry("mine", "my own word", "n")], cached=True),
                 lambda: engine.words.candidates(dictionary=ENTRIES[:2], cached=True),
                 lambda: engine.words.candidates()):
        for path in tmp_path.rglob(f"*{SUFFIX}"):
            path.unlink()
        call()
        assert not list(tmp_path.rglob(f"*{SUFFIX}"))
