"""Open-vocabulary reverse dictionary (core/words/open_vocab.py) on a tiny model and a small dictionary."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from core import Engine
from core.words.scorer import without_inflections
from core.lexicon.dictionary import Entry, definition_key, extend_split, load_wordnet, load_wordnet_lemmas, split_by_word
from core.words.open_vocab import Candidates, OpenScorer, OpenVocabConfig
from core.words import VocabularyState
from core.words.word_tower import WordTowerConfig, fit_word_tower, tower_fingerprint

DICTIONARY = [
    Entry("dog", "a domestic animal that barks", "n", (), "1-n"),
    Entry("ice cream", "a frozen sweet food made of cream", "n", (), "2-n"),
    Entry("red tape", "rules that delay things", "n", (), "3-n"),
    Entry("give up", "to stop trying", "v", (), "4-v"),
    Entry("king", "a man who rules a country", "n", (), "5-n"),
    Entry("monarch", "a man who rules a country", "n", (), "5-n"),
]


@pytest.fixture()
def engine(tiny_mlm_dir) -> Engine:
    return Engine.from_base(str(tiny_mlm_dir))


def test_candidates_know_tokens_phrases_and_shared_definitions(engine):
    c = Candidates(DICTIONARY, engine.words.vocab)
    assert c.words == ["dog", "give up", "ice cream", "king", "monarch", "red tape"]
    assert c.single_token.tolist() == [True, False, False, True, False, False]  # monarch: not in the tiny vocab
    assert len(c.definitions) == 5  # king and monarch share one
    shared = c.definitions.index("a man who rules a country")
    assert sorted(c.pair_word[c.pair_definition == shared].tolist()) == [3, 4]


def test_phrases_are_answers_and_filters_work_on_them(engine):
    engine.vocabulary.enable(dictionary=DICTIONARY)
    words = [w for w, _ in engine.predict_words("a frozen sweet food made of cream", k=6)]
    assert sorted(words) == sorted(c for c in engine.words.open_vocab.candidates.words)
    assert [w for w, _ in engine.predict_words("food", k=6, pattern="ice*")] == ["ice cream"]
    assert [w for w, _ in engine.predict_words("food", k=6, min_length=8, max_length=8)] == ["ice cream"]  # letters
    assert {w for w, _ in engine.predict_words("food", k=6, pos="v")} == {"give up"}
    assert "dog" not in [w for w, _ in engine.predict_words("a dog", k=6, exclude_query_words=True)]
    probabilities = [p for _, p in engine.predict_words("food", k=6)]
    assert probabilities == sorted(probabilities, reverse=True) and abs(sum(probabilities) - 1) < 1e-4


def test_scores_combine_the_word_head_and_word_channels_as_documented(engine):
    c = Candidates(DICTIONARY, engine.words.vocab)
    W = torch.randn(len(c), 32)
    config = OpenVocabConfig(word_scale=20.0, head_weight=0.5, multi_bias=3.0)
    scorer = OpenScorer(c, W, torch.randn(len(c.definitions), 32), config)
    u = torch.randn(3, 32)
    logits = engine.words.logits(u)
    scores = scorer.scores(u, logits)
    cos = torch.nn.functional.normalize(u, dim=1) @ torch.nn.functional.normalize(W, dim=1).T
    dog, ice_cream = c.words.index("dog"), c.words.index("ice cream")
    torch.testing.assert_close(scores[:, dog], 20 * cos[:, dog] + 0.5 * logits[:, engine.words.vocab.token_id("dog")])
    torch.testing.assert_close(scores[:, ice_cream], 20 * cos[:, ice_cream] + 3.0)


def test_definition_channel_votes_for_every_word_of_a_definition_and_can_leave_texts_out(engine):
    c = Candidates(DICTIONARY, engine.words.vocab)
    definitions = torch.eye(len(c.definitions), 32)  # definition g along axis g
    scorer = OpenScorer(c, torch.randn(len(c), 32), definitions, OpenVocabConfig(definition_weight=1.0))
    shared = c.definitions.index("a man who rules a country")
    u = definitions[shared:shared + 1]
    best = scorer.definition_scores(u)[0]
    assert best[c.words.index("king")] == pytest.approx(1.0) and best[c.words.index("monarch")] == pytest.approx(1.0)
    blind = scorer.without_definitions(["A man who rules  a country"]).definition_scores(u)[0]
    assert blind[c.words.index("king")] == 0 and blind[c.words.index("monarch")] == 0


def test_int8_scores_rank_like_float32(engine):
    c = Candidates(DICTIONARY, engine.words.vocab)
    args = (c, torch.randn(len(c), 32), torch.randn(len(c.definitions), 32), OpenVocabConfig(multi_bias=-1.0, definition_weight=5.0))
    u = torch.randn(4, 32)
    logits = engine.words.logits(u)
    exact = OpenScorer(*args).scores(u, logits)
    quantised = OpenScorer(*args).quantize().scores(u, logits)
    assert (exact.argmax(1) == quantised.argmax(1)).all()
    torch.testing.assert_close(quantised, exact, atol=0.3, rtol=0)


def test_vectors_are_cached_per_model_and_candidates(engine, tmp_path, monkeypatch):
    engine.vocabulary.enable(dictionary=DICTIONARY, cache_dir=tmp_path)
    u = engine.encode(["a frozen sweet food"])
    first = engine.words.ranked(u, k=6)
    assert len(list(tmp_path.glob("*.safetensors"))) == 1 and not list(tmp_path.glob("*.tmp"))

    def no_encoding(*_, **__):
        raise AssertionError("the cached vectors should have been loaded")

    monkeypatch.setattr(engine, "encode", no_encoding)
    engine.vocabulary.enable(dictionary=DICTIONARY, cache_dir=tmp_path)
    # the same words and scores: a model answers alike whether its cache existed or was just written
    # (the load test's switched-to models differed by 0.01-0.1 points from the first instance)
    assert engine.words.ranked(u, k=6) == first
    with pytest.raises(AssertionError, match="cached"):  # another candidate list is another file
        engine.vocabulary.enable(dictionary=DICTIONARY[:3], cache_dir=tmp_path)


def test_memory_is_handed_back_after_a_large_vocabulary_only(engine, monkeypatch):
    """A full garbage collection and malloc_trim after WordNet's 264k candidates; not after a dictionary's few."""
    import core.words.open_vocabulary

    trims = []
    monkeypatch.setattr(core.words.open_vocabulary, "return_freed_memory", lambda: trims.append(1))
    engine.vocabulary.enable(dictionary=DICTIONARY)
    assert trims == []
    monkeypatch.setattr(core.words.open_vocabulary, "TRIM_AFTER_CANDIDATES", 10)  # the candidates: 6 words, 5 definitions
    engine.vocabulary.enable(dictionary=DICTIONARY)
    assert trims == [1]


def test_extended_split_keeps_the_trained_split_and_evaluates_no_trained_text():
    base = [Entry("dog", "a barking animal", "n"), Entry("cat", "a mewing animal", "n"),
            Entry("king", "a male ruler", "n")]
    old = split_by_word(base, seed=0, ratios=(1 / 3, 1 / 3, 1 / 3))
    larger = base + [Entry("hound dog", "a barking animal", "n"),  # shares a trained text: joins train
                     Entry("big cat", "a large wild feline", "n"), Entry("ice cream", "a frozen food", "n")]
    new = extend_split(old, larger)
    for part in ("train", "dev", "test"):
        assert {e.word for e in getattr(old, part)} <= {e.word for e in getattr(new, part)}
    trained = {definition_key(e.definition) for e in old.train}
    assert not any(definition_key(e.definition) in trained for e in new.dev + new.test)
    if "a barking animal" in trained:
        assert "hound dog" in {e.word for e in new.train}


def test_wordnet_lemmas_hold_phrases_and_the_open_split_has_no_trained_text():
    lemmas = load_wordnet_lemmas()
    words = {e.word for e in lemmas}
    assert {"ice cream", "red tape", "give up", "claustrophobia", "elephant"} <= words and len(words) > 140_000
    old = split_by_word(load_wordnet(), seed=0)
    new = extend_split(old, lemmas)
    trained = {definition_key(e.definition) for e in old.train}
    assert not any(definition_key(e.definition) in trained for e in new.dev + new.test)
    assert {e.word for e in old.test} <= {e.word for e in new.test}


def test_word_tower_learns_to_put_each_word_next_to_its_definitions_and_leaves_the_encoder_alone(engine):
    torch.manual_seed(0)
    c = Candidates(DICTIONARY, engine.words.vocab)
    gold = torch.tensor([c.words.index(e.word) for e in DICTIONARY])
    definitions = torch.randn(len(DICTIONARY), 32)  # any fixed targets: the tower must move towards them
    before = {k: v.clone() for k, v in engine.encoder.state_dict().items()}

    def accuracy(tower_factors) -> float:
        engine.words.tower = tower_factors
        words = torch.from_numpy(engine.word_encoder().encode(c.words))
        cos = torch.nn.functional.normalize(definitions, dim=1) @ torch.nn.functional.normalize(words, dim=1).T
        return float((cos.argmax(1) == gold).float().mean())

    factors = fit_word_tower(engine.encoder, definitions, gold, c.words,
                             WordTowerConfig(epochs=60, rank=4, batch_size=6, negatives=4, lr=1e-2, warmup_steps=1))
    assert accuracy(None) < 0.5 and accuracy(factors) > 0.8
    assert all(torch.equal(v, before[k]) for k, v in engine.encoder.state_dict().items())
    assert tower_fingerprint(factors) != tower_fingerprint(None)


def test_open_vocabulary_weights_tower_and_older_map_travel_with_the_checkpoint(engine, tmp_path):
    engine.words.config = OpenVocabConfig(word_scale=40.0, head_weight=0.5, multi_bias=6.0, definition_weight=30.0)
    engine.words.word_map = torch.nn.Linear(32, 32).requires_grad_(False)
    c = Candidates(DICTIONARY, engine.words.vocab)
    engine.words.tower = fit_word_tower(engine.encoder, torch.randn(6, 32), torch.arange(6) % len(c), c.words,
                                             WordTowerConfig(rank=2, batch_size=6, negatives=2, warmup_steps=1))
    engine.save(tmp_path / "model")
    loaded = Engine.load(tmp_path / "model", decoder=None)
    assert loaded.words.config == engine.words.config
    torch.testing.assert_close(loaded.words.word_map.weight, engine.words.word_map.weight)
    assert tower_fingerprint(loaded.words.tower) == tower_fingerprint(engine.words.tower)
    engine.vocabulary.enable(dictionary=DICTIONARY)
    loaded.vocabulary.enable(dictionary=DICTIONARY)
    assert loaded.words.open_vocab.config == engine.words.config and loaded.words.open_vocab.word_map is loaded.words.word_map
    u = torch.randn(3, 32)
    torch.testing.assert_close(loaded.words.open_vocab.scores(u, loaded.words.logits(u)),
                               engine.words.open_vocab.scores(u, engine.words.logits(u)))
    for tower in (engine.words.tower, None):  # another tower, another cache file
        engine.words.tower = tower
        engine.vocabulary.enable(dictionary=DICTIONARY, cache_dir=tmp_path / "cache")
    assert len(list((tmp_path / "cache").iterdir())) == 2


def test_a_fine_tuned_dictionary_travels_with_the_checkpoint_and_its_words_are_answers(engine, tmp_path, monkeypatch):
    import core.words.scorer

    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(core.words.scorer, "load_wordnet_lemmas", lambda: DICTIONARY)
    mine = [Entry("hot dog", "a sausage in a bun", "n"), Entry("café", "a small restaurant", "")]
    engine.words.user_dictionary = mine
    engine.save(tmp_path / "model")  # no word tower: the base fine-tuned in the app
    loaded = Engine.load(tmp_path / "model", decoder=None)  # as a downloaded model is loaded (docs/app.md)
    assert loaded.words.user_dictionary == mine
    assert [w for w, _ in loaded.predict_words("food", k=3, pattern="caf?")] == ["café"]  # no extra call
    assert {"hot dog", "café", "ice cream"} <= set(loaded.words.open_vocab.candidates.words)


def test_the_open_vocabulary_progress_only_goes_forward_to_one_total(engine):
    seen = []
    engine.vocabulary.enable(dictionary=DICTIONARY, progress=lambda done, total: seen.append((done, total)))
    c = engine.words.open_vocab.candidates
    assert {total for _, total in seen} == {len(c.words) + len(c.definitions)}
    assert [done for done, _ in seen] == sorted(done for done, _ in seen) and seen[-1][0] == seen[-1][1]


def test_inflections_of_one_word_do_not_crowd_the_list():
    ranked = [("trunk", 0.4), ("trunks", 0.2), ("elephant", 0.1), ("berries", 0.05), ("berry", 0.04),
              ("boxes", 0.03), ("box", 0.02), ("glass", 0.01), ("gas", 0.01)]
    assert [w for w, _ in without_inflections(ranked)] == ["trunk", "elephant", "berries", "boxes", "glass", "gas"]


def test_two_spellings_of_one_word_take_one_place():
    ranked = [("traveller", 0.4), ("traveler", 0.3), ("colours", 0.2), ("color", 0.1), ("pool", 0.05), ("pond", 0.01)]
    assert [w for w, _ in without_inflections(ranked)] == ["traveller", "colours", "pool", "pond"]


def test_a_querys_word_in_another_spelling_is_left_out_too(engine):
    engine.vocabulary.enable(dictionary=DICTIONARY + [Entry("gray", "a colour between black and white", "n")])
    every = len(engine.words.open_vocab.candidates)
    assert "gray" in [w for w, _ in engine.predict_words("a grey colour", k=every, exclude_query_words=False)]
    assert "gray" not in [w for w, _ in engine.predict_words("a grey colour", k=every)]  # left out by default


def test_a_candidate_without_definitions_falls_back_on_its_mapped_word_vector(engine):
    c = Candidates(DICTIONARY, engine.words.vocab)
    W = torch.randn(len(c), 32)
    scorer = OpenScorer(c, W, torch.randn(len(c.definitions), 32), OpenVocabConfig(definition_weight=1.0))
    blind = scorer.without_definitions(["a frozen sweet food made of cream"])
    u = torch.randn(2, 32)
    unit = torch.nn.functional.normalize(u, dim=1)
    word = unit @ torch.nn.functional.normalize(W, dim=1).T
    best = blind.definition_scores(unit, fallback=word)
    ice_cream, dog = c.words.index("ice cream"), c.words.index("dog")
    torch.testing.assert_close(best[:, ice_cream], word[:, ice_cream])  # its only definition left out
    assert not torch.allclose(best[:, dog], word[:, dog])  # dog keeps its own definition


def test_choose_weights_takes_the_best_dev_setting_of_each_stage_of_the_grid(engine):
    import itertools
    from dataclasses import replace

    from core.words.open_vocab_fit import Queries, WeightGrid, choose_weights

    c = Candidates(DICTIONARY, engine.words.vocab)
    scorer = OpenScorer.compute(engine.encode, engine.encode, c)
    queries = {name: Queries(engine, name, DICTIONARY, c.words, say=lambda _: None)
               for name in ("wordnet-dev", "gcide-dev")}
    grid = WeightGrid((1.0, 30.0), (0.5, 2.0), (-3.0, 3.0), (0.0, 10.0), (0.1, 1.0, 10.0))
    chosen = choose_weights(scorer, queries, OpenVocabConfig(), grid, say=lambda _: None)

    def mrr(name: str, config: OpenVocabConfig) -> float:
        return queries[name].report(scorer.with_config(config))["all"]["mrr"]

    first = max((OpenVocabConfig(s, h, b, 0.0) for s, h, b in itertools.product(
        grid.word_scales, grid.head_weights, grid.biases)), key=lambda config: mrr("wordnet-dev", config))
    second = max((OpenVocabConfig(first.word_scale, first.head_weight, first.multi_bias, w)
                  for w in grid.definition_weights), key=lambda config: mrr("gcide-dev", config))
    assert chosen == replace(second, temperature=chosen.temperature) and chosen.temperature in grid.temperatures
    u = queries["gcide-dev"].vectors  # the chosen temperature gives the words the highest likelihood
    scores = scorer.with_config(chosen).scores(u, engine.words.logits(u))
    gold = queries["gcide-dev"].gold[:, None]
    likelihood = {t: float((scores / t).log_softmax(-1).gather(1, gold).mean()) for t in grid.temperatures}
    assert likelihood[chosen.temperature] == pytest.approx(max(likelihood.values()), abs=1e-5)


def test_near_copies_are_the_same_words_texts_that_share_most_content_words(engine):
    from core.words.open_vocab_fit import near_copies

    c = Candidates(DICTIONARY + [Entry("dog", "the friend of man", "n")], engine.words.vocab)
    evaluated = [Entry("dog", "A domestic animal that barks.", "n"),  # two dictionaries alike: a copy
                 Entry("monarch", "the sovereign of a state", "n"),  # other words: no copy
                 Entry("give up", "to stop trying", "v")]  # the same text
    assert near_copies(evaluated, c) == {"a domestic animal that barks", "to stop trying"}
    assert near_copies([Entry("king", "a domestic animal that barks", "n")], c) == set()  # another word's text


def test_gcide_queries_are_scored_without_the_wordnet_texts_that_copy_them(engine):
    """The cross-dictionary test must not index the text it scores, even where WordNet words it alike."""
    from core.lexicon.dictionary import DictionarySplit
    from core.words.open_vocab_fit import Queries, fit_open_vocabulary

    split = DictionarySplit(train=DICTIONARY[1:3] + DICTIONARY[4:], dev=[DICTIONARY[3]], test=[DICTIONARY[0]],
                            seed=0, dropped_from_train=0, dropped_from_dev=0, leak_rate_before=0.0)
    gcide = [Entry("give up", "to stop trying", "v"), Entry("dog", "a domestic animal that barks", "n")]
    engine.words.config = OpenVocabConfig(word_scale=1.0, head_weight=0.0, definition_weight=1e4)
    results = fit_open_vocabulary(engine, split, gcide, fit_tower=False, choose=False, dictionary=DICTIONARY,
                                  report=("gcide-dev", "gcide-test"), say=lambda _: None)
    c = Candidates(DICTIONARY, engine.words.vocab)
    scorer = OpenScorer.compute(engine.encode, engine.encode, c, engine.words.config)
    for name, query in zip(("gcide-dev", "gcide-test"), gcide):
        queries = Queries(engine, name, [query], c.words, say=lambda _: None)
        assert queries.report(scorer)["all"]["acc@1"] == 1.0  # its copy in the index would answer it
        assert results[name]["all"] == queries.report(scorer.without_definitions([query.definition]))["all"]


def test_a_missing_gcide_is_named_with_its_fetch_script(tmp_path):
    from core.words.open_vocab_fit import missing_gcide, read_gcide_dictd

    assert "scripts/fetch_gcide.sh" in missing_gcide(tmp_path)
    with pytest.raises(FileNotFoundError, match="fetch_gcide"):
        read_gcide_dictd(tmp_path)


def test_answers_are_ranked_by_score_even_where_probabilities_underflow_to_zero(engine):
    engine.vocabulary.enable(dictionary=DICTIONARY)
    engine.words.open_vocab = engine.words.open_vocab.with_config(OpenVocabConfig(word_scale=5000.0))  # softmax: 1, 0, 0, ...
    u = torch.from_numpy(engine.encode(["a frozen sweet food made of cream"]))
    scores = engine.words.open_vocab.scores(u, engine.words.logits(u))[0]  # (C,)
    expected = [engine.words.open_vocab.candidates.words[j] for j in scores.argsort(descending=True).tolist()]
    ranked = engine.words.ranked(u.numpy(), k=6)[0]
    assert [w for w, _ in ranked] == expected and ranked[-1][1] == 0.0


def test_shown_probabilities_are_the_softmax_of_scores_over_the_temperature(engine):
    engine.vocabulary.enable(dictionary=DICTIONARY)
    engine.words.open_vocab = engine.words.open_vocab.with_config(OpenVocabConfig(word_scale=50.0, temperature=10.0))
    u = torch.from_numpy(engine.encode(["a frozen sweet food made of cream"]))
    probs = (engine.words.open_vocab.scores(u, engine.words.logits(u))[0] / 10.0).softmax(-1)  # (C,)
    for word, p in engine.words.ranked(u.numpy(), k=6)[0]:
        assert p == pytest.approx(float(probs[engine.words.open_vocab.candidates.words.index(word)]), abs=1e-6)


def test_a_loaded_checkpoint_fitted_for_the_open_vocabulary_answers_with_it_from_the_first_query(
        engine, tmp_path, monkeypatch):
    """Engine.load answers as the app does (issue 38): the open vocabulary is embedded at the first word
    query and cached in the user cache; not for the untrained twin, nor when asked not to."""
    import core.words.scorer

    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(core.words.scorer, "load_wordnet_lemmas", lambda: DICTIONARY)
    c = Candidates(DICTIONARY, engine.words.vocab)
    engine.words.tower = fit_word_tower(engine.encoder, torch.randn(6, 32), torch.arange(6) % len(c), c.words,
                                             WordTowerConfig(rank=2, batch_size=6, negatives=2, warmup_steps=1))
    engine.save(tmp_path / "fitted")
    loaded = Engine.load(tmp_path / "fitted", decoder=None)
    assert loaded.words.open_vocab is None and loaded.vocabulary.deferred
    words = [w for w, _ in loaded.predict_words("a frozen sweet food", k=6)]
    assert loaded.words.open_vocab is not None and "ice cream" in words  # a phrase: the open vocabulary answered
    assert len(list((tmp_path / "cache" / "open-vocab").iterdir())) == 1
    assert not Engine.load(tmp_path / "fitted", decoder=None, open_vocabulary=False).vocabulary.deferred
    assert not Engine.load(tmp_path / "fitted", decoder=None, untrained=True).vocabulary.deferred
    engine.words.tower = None
    engine.save(tmp_path / "plain")  # no tower: not fitted, the head's words as before
    assert not Engine.load(tmp_path / "plain", decoder=None).vocabulary.deferred


def test_training_scores_are_the_dictionary_experts_less_each_querys_own_text(engine):
    c = Candidates(DICTIONARY, engine.words.vocab)
    config = OpenVocabConfig(word_scale=20.0, head_weight=0.5, multi_bias=3.0, definition_weight=7.0)
    scorer = OpenScorer(c, torch.randn(len(c), 32), torch.randn(len(c.definitions), 32), config)
    u = torch.randn(2, 32, requires_grad=True)
    logits = engine.words.logits(u.detach())
    trained = scorer.dictionary_scores(u, logits, torch.tensor([-1, -1]))
    torch.testing.assert_close(trained.detach(), scorer.scores(u.detach(), logits))
    trained.sum().backward()
    assert u.grad is not None and u.grad.abs().sum() > 0  # what the encoder learns from
    own = c.definitions.index("to stop trying")  # give up's only text: its definition falls back on its word
    left_out = scorer.dictionary_scores(u, logits, torch.tensor([own, -1])).detach()
    blind = scorer.without_definitions(["to stop trying"]).scores(u.detach()[:1], logits[:1])
    torch.testing.assert_close(left_out[0], blind[0])


def test_a_fine_tuned_model_reuses_its_parents_cached_vectors_and_embeds_only_its_new_words(engine, tmp_path):
    cache = tmp_path / "cache"
    engine.words.set_precision("float32")  # keeps the float vectors, to compare them
    engine.vocabulary.enable(dictionary=DICTIONARY, cache_dir=cache)  # the parent, as the app caches it
    parent, parent_fingerprint = engine.words.open_vocab, engine.fingerprint
    mine = [Entry("zib zab", "a thing nobody has named before", "n"), Entry("dog", "a loyal friend", "n")]
    with torch.no_grad():  # "fine-tuning": another fingerprint
        next(engine.encoder.parameters()).add_(0.01)
    engine.words.user_dictionary = mine
    saved = engine.save(tmp_path / "tuned", training={"open_vocab_parent": {"fingerprint": parent_fingerprint,
                                                                             "user_entries": 0}})
    tuned = Engine.load(saved, decoder=None, open_vocabulary=False)
    tuned.words.set_precision("float32")
    embedded = []
    real_encode = tuned.encoder.encode
    tuned.encoder.encode = lambda texts, **kw: embedded.extend(texts) or real_encode(texts, **kw)
    tuned.vocabulary.enable(dictionary=DICTIONARY, cache_dir=cache, reuse=True)  # as the app activates it
    assert sorted(embedded) == ["a loyal friend", "a thing nobody has named before", "zib zab"]
    c = tuned.words.open_vocab.candidates
    ice_cream = c.words.index("ice cream")
    torch.testing.assert_close(tuned.words.open_vocab.word_vectors[ice_cream],
                               parent.word_vectors[parent.candidates.words.index("ice cream")], atol=0.01, rtol=0)
    assert tuned.vocabulary.state is VocabularyState.REUSED and len(list(cache.iterdir())) == 2  # cached in turn, marked "-reused"
    again = Engine.load(saved, decoder=None, open_vocabulary=False)
    again.encoder.encode = lambda texts, **kw: pytest.fail("the reused vectors are read back, not embedded")
    again.vocabulary.enable(dictionary=DICTIONARY, cache_dir=cache, reuse=True)
    assert again.vocabulary.state is VocabularyState.REUSED
    tuned.vocabulary.enable(dictionary=DICTIONARY, cache_dir=cache)  # by default its own, all embedded
    assert tuned.vocabulary.state is VocabularyState.EXACT and len(list(cache.iterdir())) == 3



def test_vectors_shipped_beside_a_checkpoint_are_read_instead_of_embedded(engine, tmp_path, monkeypatch):
    from core.words.open_vocabulary import SHIPPED_VECTORS

    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    saved = engine.save(tmp_path / "model")
    built = Engine.load(saved, decoder=None, open_vocabulary=False)
    built.vocabulary.enable(dictionary=DICTIONARY, cache_dir=saved / SHIPPED_VECTORS)  # as deploy_space ships them
    served = Engine.load(saved, decoder=None, open_vocabulary=False)
    served.encoder.encode = lambda texts, **kw: pytest.fail("shipped vectors are read, not embedded")
    served.vocabulary.enable(dictionary=DICTIONARY, cache_dir=tmp_path / "empty-cache")
    assert served.words.open_vocab.candidates.words == built.words.open_vocab.candidates.words
    assert served.vocabulary.parent_record()["shipped"] == str((saved / SHIPPED_VECTORS).resolve())


def test_compact_vectors_in_a_checkpoint_are_read_instead_of_embedded_when_made_for_it(engine, tmp_path,
                                                                                        monkeypatch):
    from core.words.open_vocab import COMPACT_VECTORS, compact_name

    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    saved = engine.save(tmp_path / "model")
    built = Engine.load(saved, decoder=None, open_vocabulary=False)
    target = built.vocabulary.save_compact(subspaces=4, dictionary=DICTIONARY)  # embeds the model's own words into the user cache first
    assert target == saved / COMPACT_VECTORS and compact_name(target).endswith(".safetensors")
    served = Engine.load(saved, decoder=None, open_vocabulary=False)
    real_encode = served.encoder.encode
    served.encoder.encode = lambda texts, **kw: pytest.fail("compact vectors are read, not embedded")
    served.vocabulary.enable(dictionary=DICTIONARY, cache_dir=tmp_path / "empty-cache")
    served.encoder.encode = real_encode  # queries embed their first candidates exactly (test_exact_rescoring.py)
    assert served.vocabulary.state is VocabularyState.COMPACT and built.vocabulary.state is VocabularyState.EXACT
    assert served.words.open_vocab.candidates.words == built.words.open_vocab.candidates.words
    u = torch.from_numpy(built.encode(["a frozen sweet food made of cream"]))
    exact = built.words.open_vocab.scores(u, built.words.logits(u))
    compact = served.words.open_vocab.scores(u, served.words.logits(u))
    assert torch.corrcoef(torch.stack([exact[0], compact[0]]))[0, 1] > 0.9
    assert served.vocabulary.parent_record()["compact"] == str(target.resolve())  # a fine-tune can reuse them


def test_a_first_query_reading_compact_vectors_shows_no_embedding_bar(engine, tmp_path, monkeypatch, capsys):
    """Issue 54, 4: a fresh clone's first query sat behind a bar stuck at "0text" while nothing was embedded."""
    import core.words.scorer
    from core.words.open_vocab import COMPACT_VECTORS

    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(core.words.scorer, "load_wordnet_lemmas", lambda: DICTIONARY)
    engine.words.user_dictionary = [Entry("zib zab", "a thing nobody has named before", "n")]  # answers: on first use
    saved = engine.save(tmp_path / "model")
    engine.words.user_dictionary = []
    Engine.load(saved, decoder=None, open_vocabulary=False).vocabulary.save_compact(subspaces=4)
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "empty-cache"))
    capsys.readouterr()
    Engine.load(saved, decoder=None).predict_words("a frozen sweet food")
    err = capsys.readouterr().err
    assert "ready in" in err and "read from the checkpoint's compact vectors" in err
    assert "text" not in err.replace("texts", "")  # no bar: nothing was embedded
    (saved / COMPACT_VECTORS).unlink()
    Engine.load(saved, decoder=None).predict_words("a frozen sweet food")  # none stored: embedded, with a bar
    err = capsys.readouterr().err
    assert "open vocabulary: embedding" in err and "(embedded)" in err


def test_compact_vectors_made_for_other_candidates_are_ignored(engine, tmp_path, monkeypatch):
    from core.words.open_vocab import COMPACT_VECTORS

    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    saved = engine.save(tmp_path / "model")
    built = Engine.load(saved, decoder=None, open_vocabulary=False)
    built.words.set_precision("float32")
    built.vocabulary.enable(dictionary=DICTIONARY)
    built.words.open_vocab.save_compact(saved / COMPACT_VECTORS, "another-model.safetensors", subspaces=4)
    served = Engine.load(saved, decoder=None, open_vocabulary=False)
    embedded = []
    real_encode = served.encoder.encode
    served.encoder.encode = lambda texts, **kw: embedded.extend(texts) or real_encode(texts, **kw)
    served.vocabulary.enable(dictionary=DICTIONARY, cache_dir=tmp_path / "empty-cache")
    assert embedded and served.vocabulary.state is VocabularyState.EXACT


@pytest.mark.parametrize("precision", ["float32", "int8"])
def test_vocabulary_texts_search_the_open_vocabularys_own_vectors_exactly(engine, precision):
    from core.explore.reference import VocabularyTexts

    engine.words.set_precision(precision)
    engine.vocabulary.enable(dictionary=DICTIONARY)
    definitions = engine.vocabulary_reference("definition")
    assert engine.vocabulary_reference("definition") is definitions  # built once for the scorer in use
    assert "king, monarch: a man who rules a country" in definitions.texts and len(definitions.texts) == 5
    assert definitions.name == "5 WordNet definitions"
    u = engine.encode(["a man who rules a country", "to give up"])  # (2, d)
    for kind, collection in (("definition", definitions), ("word", VocabularyTexts(engine.words.open_vocab, "word"))):
        vectors = collection.rows(list(range(len(collection.texts))))  # (N, d) unit rows
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
        exact = (u / np.linalg.norm(u, axis=1, keepdims=True)) @ vectors.T  # (2, N)
        nearest = collection.nearest(u, 3)
        assert [[i for i, _ in row] for row in nearest] == np.argsort(-exact, axis=1)[:, :3].tolist()
        assert np.allclose([[c for _, c in row] for row in nearest], -np.sort(-exact, axis=1)[:, :3], atol=0.02)
    with pytest.raises(ValueError, match="unknown collection"):
        VocabularyTexts(engine.words.open_vocab, "sentences")
    engine.vocabulary.reset()
    with pytest.raises(ValueError, match="without the open vocabulary"):
        engine.vocabulary_reference()
