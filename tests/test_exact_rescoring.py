"""Issue 60, 3: a fresh start's first candidates scored with exact vectors embedded on demand
(core/words/exact_rescoring.py), on a tiny model and a small dictionary."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import core.words.product_quantizer
from core import Engine
from core.lexicon.dictionary import Entry
from core.words.exact_rescoring import MAX_SHARDS, ExactRescorer, ExactVectors
from core.words import VocabularyState
from core.words.vocabulary import WordFilter
from tests.test_open_vocab import DICTIONARY as OPEN_VOCAB_DICTIONARY

DICTIONARY = [*OPEN_VOCAB_DICTIONARY, Entry("cat", "a small animal that purrs", "n", (), "6-n"),
              Entry("cat", "a whip with nine knotted cords", "n", (), "7-n")]
QUERIES = ["a frozen sweet food", "an animal in the house", "somebody who rules"]


@pytest.fixture()
def served(tiny_mlm_dir, tmp_path, monkeypatch):
    """(an engine answering from compact vectors, one answering from exact vectors) of one saved model."""
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    saved = Engine.from_base(str(tiny_mlm_dir)).save(tmp_path / "model")
    exact = Engine.load(saved, decoder=None, open_vocabulary=False)
    exact.words.set_precision("float32")
    monkeypatch.setattr(core.words.product_quantizer, "CENTROIDS", 2)  # coarse: far from the exact vectors
    exact.vocabulary.save_compact(subspaces=2, dictionary=DICTIONARY)
    compact = Engine.load(saved, decoder=None, open_vocabulary=False)
    compact.words.set_precision("float32")
    compact.vocabulary.enable(dictionary=DICTIONARY, cache_dir=tmp_path / "fresh-cache")
    assert compact.vocabulary.state is VocabularyState.COMPACT and exact.vocabulary.state is VocabularyState.EXACT
    return compact, exact


def _scores(engine: Engine) -> torch.Tensor:
    u = torch.from_numpy(engine.encode(QUERIES))
    return engine.words.open_vocab.scores(u, engine.words.logits(u))


def test_a_compact_starts_first_candidates_score_as_the_exact_vectors_score_them(served):
    compact, exact = served
    scorer = compact.words.open_vocab
    rescorer = scorer.rescorer
    scorer.rescorer = None
    before = _scores(compact)
    assert not torch.allclose(before, _scores(exact), atol=1e-3)  # the compact vectors rank otherwise
    scorer.rescorer = rescorer  # every candidate is among the first: all scored exactly
    assert rescorer.first >= len(scorer.candidates)
    assert torch.allclose(_scores(compact), _scores(exact), atol=1e-4)


def test_only_each_querys_first_candidates_are_scored_again(served):
    compact, exact = served
    scorer, rescorer = compact.words.open_vocab, ExactRescorer(compact.words.open_vocab.rescorer.vectors, first=2)
    u = torch.from_numpy(compact.encode(QUERIES))
    logits = compact.words.logits(u)
    before = scorer.experts(u, logits)
    after = rescorer.rescore(scorer, before, u, logits, None)
    wanted = exact.words.open_vocab.experts(u, logits)
    top = scorer.combine(*before).topk(2).indices  # (B, 2)
    first = np.unique(top.numpy())
    own = torch.zeros_like(before[0], dtype=torch.bool).scatter_(1, top, True)  # (B, C)
    assert (~own).any()
    for old, new, exact_scores in zip(before, after, wanted):  # the dictionary expert's, the everyday expert's
        assert not torch.allclose(old[own], exact_scores[own], atol=1e-3)
        assert torch.allclose(new[own], exact_scores[own], atol=1e-4)
        assert torch.equal(new[~own], old[~own])  # another query's first candidates are not this one's
    words_of = scorer.candidates.words
    assert set(rescorer.vectors._rows["word"]) == {words_of[i] for i in first}  # only those were embedded


def test_exact_vectors_are_embedded_once_kept_on_disk_and_read_by_the_next_start(tmp_path):
    calls = []

    def encoder():
        def encode(texts):
            calls.append(list(texts))
            return np.stack([np.eye(4, dtype=np.float32)[len(t) % 4] for t in texts])
        return encode

    first = ExactVectors({"word": encoder, "definition": encoder}, tmp_path, "model-a")
    assert first.vectors("word", ["ab", "abc"]).shape == (2, 4)
    first.vectors("word", ["abc", "abcd"])
    assert calls == [["ab", "abc"], ["abcd"]]
    again = ExactVectors({"word": encoder, "definition": encoder}, tmp_path, "model-a")
    assert torch.equal(again.vectors("word", ["abcd", "ab"]), first.vectors("word", ["abcd", "ab"]))
    assert again.embedded == 0 and len(calls) == 2  # read from disk
    ExactVectors({"word": encoder, "definition": encoder}, tmp_path, "model-b").vectors("word", ["ab"])
    assert len(calls) == 3  # another model's vectors are its own
    with pytest.raises(ValueError, match="unknown kind"):
        again.vectors("sentence", ["ab"])


def test_the_cache_is_bounded_in_memory_and_in_files(tmp_path):
    def encoder():
        return lambda texts: np.ones((len(texts), 3), dtype=np.float32)

    vectors = ExactVectors({"word": encoder, "definition": encoder}, tmp_path, "m", max_rows=5)
    for i in range(2 * MAX_SHARDS):
        vectors.vectors("definition", [f"text {i}"])
    assert len(vectors._rows["definition"]) == 5
    assert len(list(tmp_path.glob("m-definition-*.safetensors"))) <= MAX_SHARDS
    reread = ExactVectors({"word": encoder, "definition": encoder}, tmp_path, "m", max_rows=5)
    reread.vectors("definition", [f"text {2 * MAX_SHARDS - 1}"])
    assert reread.embedded == 0  # the most recent are kept
    with pytest.raises(ValueError, match="max_rows"):
        ExactVectors({}, None, "m", max_rows=0)
    with pytest.raises(ValueError, match="first"):
        ExactRescorer(vectors, first=0)


def test_the_cli_says_when_it_answers_from_approximate_vectors(tiny_mlm_dir, tmp_path, monkeypatch, capsys):
    import core.words.scorer
    from core.__main__ import main

    monkeypatch.setattr(core.words.scorer, "load_wordnet_lemmas", lambda: DICTIONARY)
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    engine = Engine.from_base(str(tiny_mlm_dir))
    engine.words.user_dictionary = [Entry("zib zab", "a thing nobody has named before", "n")]  # answers: on first use
    saved = engine.save(tmp_path / "model")
    Engine.load(saved, decoder=None, open_vocabulary=False).vocabulary.save_compact(subspaces=2)
    assert main(["words", "a frozen sweet food", "-k", "2", "--model", str(saved)]) == 0
    assert "approximate vectors" not in capsys.readouterr().err  # the exact ones are in the user cache
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "fresh-cache"))
    assert main(["words", "a frozen sweet food", "-k", "2", "--model", str(saved)]) == 0
    out = capsys.readouterr()
    assert "approximate vectors" in out.err and len(out.out.splitlines()) == 3
    assert "add --exact-vectors" in out.err and "eval-reverse" not in out.err  # a way to them, not an evaluation
    assert main(["words", "a frozen sweet food", "-k", "2", "--model", str(saved), "--exact-vectors"]) == 0
    out = capsys.readouterr()
    assert "embedding the open vocabulary" in out.err and "approximate vectors" not in out.err
    assert main(["words", "a frozen sweet food", "-k", "2", "--model", str(saved)]) == 0
    assert "approximate vectors" not in capsys.readouterr().err  # kept in the user cache
    assert main(["words", "a thing", "--exact-vectors", "--single-token-words"]) == 2


def test_only_definitions_near_their_words_best_are_embedded(served):
    compact, _ = served
    scorer = compact.words.open_vocab
    u = torch.from_numpy(compact.encode(QUERIES[:1]))
    logits = compact.words.logits(u)
    for margin, wanted in ((0.0, len(set(scorer.candidates.words))), (2.0, len(scorer.candidates.definitions))):
        vectors = ExactVectors(scorer.rescorer.vectors._factories, None, "m")
        ExactRescorer(vectors, first=len(scorer.candidates), margin=margin).rescore(
            scorer, scorer.experts(u, logits), u, logits, None)
        assert len(vectors._rows["definition"]) <= wanted  # margin 0: one a word (its best, or a tie)
        assert margin == 0 or len(vectors._rows["definition"]) == wanted  # a cosine is within 2 of any other
    with pytest.raises(ValueError, match="margin"):
        ExactRescorer(vectors, margin=-1)


def test_the_first_candidates_re_scored_are_those_the_filters_allow(served):
    compact, _ = served
    scorer, u = compact.words.open_vocab, compact.encode(["an animal"])
    vectors, scorer.rescorer = scorer.rescorer.vectors, None
    last = [w for w, _ in compact.words.ranked(u, k=len(scorer.candidates))[0]][-1]
    scorer.rescorer = ExactRescorer(vectors, first=1)
    compact.words.ranked(u, k=1, word_filter=WordFilter(pattern=last))
    assert set(vectors._rows["word"]) == {last}  # the first allowed, not the first of all
