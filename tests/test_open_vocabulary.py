"""The open vocabulary's life (core/words/open_vocabulary.py, `engine.vocabulary`): one state, its transitions, what
a failed one leaves, and what is built from the scorer in use (issue 73). Where its vectors come from (cache, parent,
shipped, compact) is tests/test_open_vocab.py's and tests/test_exact_rescoring.py's."""
from __future__ import annotations

import pytest

import core.words.open_vocabulary
import core.words.scorer
from core import Engine
from core.lexicon.dictionary import Entry
from core.words import EmbeddingProgress, VocabularyState

DICTIONARY = [Entry("dog", "a domestic animal that barks", "n"), Entry("ice cream", "a frozen sweet food", "n"),
              Entry("king", "a man who rules a country", "n")]


@pytest.fixture
def engine(tiny_mlm_dir, tmp_path, monkeypatch) -> Engine:
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(core.words.scorer, "load_wordnet_lemmas", lambda: DICTIONARY)  # WordNet's stand-in
    return Engine.from_base(str(tiny_mlm_dir))


def test_the_state_follows_the_transitions(engine):
    vocabulary = engine.vocabulary
    assert vocabulary.state is VocabularyState.SINGLE_TOKEN and not vocabulary.enabled
    vocabulary.defer()
    assert vocabulary.state is VocabularyState.SINGLE_TOKEN  # deferred: on at the first word query
    assert "ice cream" in [w for w, _ in engine.predict_words("a frozen sweet food", k=10)]  # a phrase: enabled
    assert vocabulary.state is VocabularyState.EXACT and not vocabulary.deferred and not vocabulary.approximate
    vocabulary.reset()
    assert vocabulary.state is VocabularyState.SINGLE_TOKEN and engine.words.open_vocab is None
    assert "ice cream" not in [w for w, _ in engine.predict_words("a frozen sweet food", k=20)]


def test_stored_vectors_are_read_and_never_embedded_by_read_stored(engine, tmp_path):
    engine.encoder.encode = lambda *args, **kwargs: pytest.fail("read_stored embeds nothing")
    assert not engine.vocabulary.read_stored(tmp_path / "empty") and not engine.vocabulary.enabled
    del engine.encoder.encode
    engine.vocabulary.enable(cache_dir=tmp_path / "cache-of-the-app")
    engine.vocabulary.reset()
    engine.encoder.encode = lambda *args, **kwargs: pytest.fail("read_stored embeds nothing")
    assert engine.vocabulary.read_stored(tmp_path / "cache-of-the-app")
    assert engine.vocabulary.state is VocabularyState.EXACT


def test_a_failed_transition_is_kept_for_the_user_and_the_old_vectors_answer(engine, tmp_path, monkeypatch):
    vocabulary = engine.vocabulary
    vocabulary.enable(dictionary=DICTIONARY)
    answering = engine.words.open_vocab
    seen = []

    def failing(encode_words, *_):
        encode_words(["dog"])  # a batch embedded, then the disk fills up
        seen.append(vocabulary.progress)
        raise OSError(28, "No space left on device")
    with monkeypatch.context() as patched, pytest.raises(OSError):
        patched.setattr(core.words.open_vocabulary, "open_scorer", failing)
        vocabulary.embed_exact(tmp_path / "cache-of-the-app")
    assert vocabulary.failure == "No space left on device"  # one line, as a job's (core.text.short_reason)
    assert isinstance(seen[0], EmbeddingProgress) and vocabulary.progress is None  # no bar left behind
    assert engine.words.open_vocab is answering and vocabulary.state is VocabularyState.EXACT
    during_the_retry, candidates = [], vocabulary.words.candidates

    def listing(*args, **kwargs):  # the retry's first step: the app's notice reads `failure` meanwhile
        during_the_retry.append(vocabulary.failure)
        return candidates(*args, **kwargs)
    monkeypatch.setattr(vocabulary.words, "candidates", listing)
    vocabulary.enable(dictionary=DICTIONARY)
    assert during_the_retry == [""]  # a retry under way is no failure: the notice and its polling follow it
    assert vocabulary.failure == ""  # a success: nothing to say any more


def test_what_is_built_from_the_scorer_goes_with_it(engine):
    with pytest.raises(ValueError, match="without the open vocabulary"):
        engine.vocabulary.built_from_scorer("sizes", lambda scorer: len(scorer.candidates.words))
    engine.vocabulary.enable(dictionary=DICTIONARY)
    first = engine.vocabulary_reference("word")
    assert engine.vocabulary_reference("word") is first and first.texts == ["dog", "ice cream", "king"]
    engine.vocabulary.enable(dictionary=DICTIONARY[:2])  # a new scorer: built again from it
    assert engine.vocabulary_reference("word").texts == ["dog", "ice cream"]
    assert engine.vocabulary.built_from_scorer("sizes", lambda scorer: len(scorer.candidates.words)) == 2


def test_a_request_never_sees_a_new_scorer_with_the_old_state(engine, monkeypatch):
    vocabulary = engine.vocabulary
    vocabulary.enable(dictionary=DICTIONARY)
    vocabulary.state = VocabularyState.COMPACT  # as read from compact vectors; the next enable embeds: EXACT
    seen = []

    def published(words, scorer) -> None:  # a request reads the vocabulary the moment the words' scorer changes
        words.__dict__["open_vocab"] = scorer
        seen.append((vocabulary.scorer is scorer, vocabulary.state))
    monkeypatch.setattr(core.words.scorer.WordScorer, "open_vocab",
                        property(lambda words: words.__dict__["open_vocab"], published), raising=False)
    vocabulary.enable(dictionary=DICTIONARY[:2])
    assert seen == [(True, VocabularyState.EXACT)]
    assert vocabulary.answering == (engine.words.open_vocab, VocabularyState.EXACT)


def test_a_study_scores_with_its_own_scorer_and_state_and_gives_the_old_pair_back(engine, monkeypatch):
    import numpy as np

    import core.evaluation.reverse
    from core.evaluation.reverse import Query, evaluate_reverse

    engine.words.set_precision("float32")  # a leak-free index drops definitions from float32 vectors
    vocabulary = engine.vocabulary
    vocabulary.enable(dictionary=DICTIONARY)
    vocabulary.state = VocabularyState.COMPACT
    before = vocabulary.answering
    index = vocabulary.scorer.without_definitions(["a frozen sweet food"])
    seen = []

    def ranked(scored_by, queries, modes):  # what the study's queries are scored with
        seen.append((vocabulary.answering, scored_by.words.open_vocab))
        return {"none": np.ones(len(queries))}
    monkeypatch.setattr(core.evaluation.reverse, "ranks_by_mode", ranked)
    evaluate_reverse(engine, {"leak-free": ([Query("a frozen sweet food", "ice cream")], index)}, ["none"],
                     say=lambda _: None)
    assert seen == [((index, VocabularyState.COMPACT), index)]
    assert vocabulary.answering == before and engine.words.open_vocab is before.scorer
    vocabulary.forget_scorer()  # the weights changed under it: off, the weights kept for the next enable
    assert vocabulary.state is VocabularyState.SINGLE_TOKEN and engine.words.open_vocab is None
