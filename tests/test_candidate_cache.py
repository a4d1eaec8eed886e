"""The open vocabulary's candidate list kept in the user cache (core/words/candidate_cache.py): read back as it
was built, built again when what it comes from changes, never written for a stand-in of WordNet's list."""
from __future__ import annotations

import numpy as np

from core.lexicon.dictionary import Entry
from core.words.candidate_cache import SUFFIX, cached_candidates, candidates_key
from core.words.open_vocab import Candidates

ENTRIES = [Entry("dog", "a domestic animal that barks", "n"), Entry("ice cream", "a frozen sweet food", "n"),
           Entry("run", "to move fast on foot", "v")]


def test_a_cached_list_is_read_back_as_built_and_built_again_when_its_sources_change(engine, tmp_path):
    source = tmp_path / "lemmas.jsonl.gz"
    source.write_bytes(b"one")
    builds = []

    def build() -> Candidates:
        builds.append(1)
        return Candidates(ENTRIES, engine.words.vocab)

    key = candidates_key(source, [], engine.words.vocab.words)
    first = cached_candidates(build, key, tmp_path)
    again = cached_candidates(build, key, tmp_path)
    assert len(builds) == 1 and list(tmp_path.glob(f"*{SUFFIX}")) == [tmp_path / (key + SUFFIX)]
    assert again.words == first.words and again.definitions == first.definitions
    np.testing.assert_array_equal(again.token_ids, first.token_ids)
    assert again.fingerprint() == first.fingerprint() and again.filters.main_pos("run") == "verb"
    source.write_bytes(b"changed")  # another dictionary file, or other extra entries: another name
    assert candidates_key(source, [], engine.words.vocab.words) != key
    assert candidates_key(tmp_path / "lemmas.jsonl.gz", ENTRIES[:1], engine.words.vocab.words) != key
    (tmp_path / (key + SUFFIX)).write_bytes(b"damaged")  # built again, and replaced
    assert cached_candidates(build, key, tmp_path).words == first.words and len(builds) == 2


def test_a_stand_in_for_wordnets_list_is_not_cached(engine, monkeypatch, tmp_path):
    import core.words.scorer

    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(core.words.scorer, "load_wordnet_lemmas", lambda: ENTRIES)
    assert engine.words.candidates(cached=True).words == sorted(e.word for e in ENTRIES)
    assert not list(tmp_path.rglob(f"*{SUFFIX}"))
