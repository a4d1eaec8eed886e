"""People's descriptions as training data (core/lexicon/norms.py) and the everyday expert's query adapter
(core/words/query_adapter.py, core/words/adapter_fit.py) on a tiny model and a small dictionary."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from core import Engine
from core.lexicon.dictionary import Entry
from core.lexicon.norms import Description, mask_word, norm_word, read_norms, split_norm_words
from core.words.adapter_fit import AdapterFitConfig, Examples, dictionary_examples, fit_adapter, people_examples, ranks
from core.words.open_vocab import DEFAULT_OPEN_VOCAB
from core.words.query_adapter import AdapterConfig, QueryAdapter

DICTIONARY = [Entry(w, d, "n", (), f"{i}-n") for i, (w, d) in enumerate([
    ("dog", "a domestic animal that barks"), ("cat", "a small animal that says meow"),
    ("king", "a man who rules a country"), ("queen", "a woman who rules a country"),
    ("river", "water that runs to the sea"), ("bread", "food made of flour"),
    ("car", "a thing to drive on a road"), ("tree", "a large plant with wood")])]


@pytest.fixture()
def engine(tiny_mlm_dir) -> Engine:
    engine = Engine.from_base(str(tiny_mlm_dir))
    engine.words.set_precision("float32")
    engine.vocabulary.enable(dictionary=DICTIONARY)
    return engine


# ---- the norms -------------------------------------------------------------------------------------

@pytest.mark.parametrize("word, text, masked", [
    ("elephant", "elephant: is gray, has a trunk", "is gray, has a trunk"),
    ("run", "Running fast; runs, ran, a runner", "fast; , ran, a"),  # ran is another word: kept
    ("dance", "dancing dancer dances done to music", "done to music"),
    ("happy", "happily smiling, happier than sad", "smiling, than sad"),
    ("grey", "the color gray, like a grey cloud", "the color , like a cloud"),  # both spellings
    ("cat", "a catalogue of cats and category", "a catalogue of and category"),  # only whole words
])
def test_a_description_loses_every_form_and_spelling_of_its_own_word(word, text, masked):
    assert mask_word(text, word) == masked


def test_the_norms_file_is_read_masked_and_named_words_cleaned(tmp_path):
    path = tmp_path / "norms.tsv"
    path.write_text("word\tresponse\nelephant\telephant: large gray animal\nword_con\tto trick someone\n"
                    "dog\tdogs\n", encoding="utf-8")
    assert read_norms(path) == [Description("elephant", "large gray animal"), Description("con", "to trick someone")]
    assert norm_word(" Word_Con ") == "con"
    with pytest.raises(FileNotFoundError, match="fetch_feature_norms"):
        read_norms(tmp_path / "missing.tsv")


def test_the_word_split_is_seeded_disjoint_and_keeps_dictionary_test_words_out_of_training():
    words = [f"w{i}" for i in range(200)]
    split = split_norm_words(words, seed=3, not_trained={"w1", "w2"})
    assert split == split_norm_words(reversed(words), seed=3, not_trained={"w1", "w2"})  # order does not matter
    assert len(split.held_out) == 20 and not split.train & split.held_out
    assert {"w1", "w2"}.isdisjoint(split.train) and len(split.train | split.held_out) >= 198
    assert split_norm_words(words, seed=4).held_out != split.held_out
    with pytest.raises(ValueError, match="between 0 and 1"):
        split_norm_words(words, share=0)


def test_the_shared_norms_are_read_with_their_words_masked(shared_dir):
    descriptions = read_norms(shared_dir / "data" / "feature-norms" / "feature-norms.tsv")
    assert len({d.word for d in descriptions}) == 3722 and len(descriptions) > 170_000
    elephant = [d.text for d in descriptions if d.word == "elephant"]
    assert elephant and not any("elephant" in text.lower().split() for text in elephant)


# ---- the adapter ----------------------------------------------------------------------------------

def test_a_new_adapter_is_the_identity_and_an_engine_with_it_answers_as_before(engine):
    u = torch.randn(4, 32)
    adapter = QueryAdapter(AdapterConfig(dim=32, hidden=8))
    torch.testing.assert_close(adapter(u), u)
    before = engine.words.scores(u.numpy()).scores
    engine.words.adapter = adapter
    torch.testing.assert_close(engine.words.scores(u.numpy()).scores, before)


def test_the_everyday_expert_reads_the_adapters_query_and_the_dictionary_expert_does_not(engine):
    u = torch.randn(2, 32)
    adapter = QueryAdapter(AdapterConfig(dim=32, hidden=8))
    torch.nn.init.normal_(adapter.down.weight)
    engine.words.adapter = adapter
    with_adapter = engine.words.scores(u.numpy()).scores
    assert not torch.allclose(with_adapter, engine.words.open_vocab.scores(u, engine.words.logits(u)))
    engine.words.open_vocab.config = DEFAULT_OPEN_VOCAB.__class__(**{**DEFAULT_OPEN_VOCAB.__dict__, "everyday_share": 0})
    dictionary_only = engine.words.scores(u.numpy()).scores
    engine.words.adapter = None
    torch.testing.assert_close(engine.words.scores(u.numpy()).scores, dictionary_only)


def test_fitting_the_adapter_teaches_descriptions_their_words_and_leaves_the_encoder_alone(engine):
    """Descriptions that the model ranks badly ("barks loudly" -> dog) are learnt; the encoder is untouched."""
    people = [Description("dog", "barks loudly at night"), Description("cat", "purrs on your lap"),
              Description("bread", "toasted in the morning"), Description("car", "has four wheels and an engine")] * 4
    vectors = engine.encode([d.text for d in people])
    examples = people_examples(engine, people, vectors)
    dictionary = dictionary_examples(engine.words.open_vocab, {"king", "queen", "river", "tree"})
    assert len(examples) == 16 and sorted(dictionary.gold.tolist()) == sorted(
        engine.words.open_vocab.candidates.words.index(w) for w in ("king", "queen", "river", "tree"))
    before = ranks(engine, None, examples)
    encoder_before = {k: v.clone() for k, v in engine.encoder.state_dict().items()}
    adapter = fit_adapter(engine, examples, dictionary, AdapterFitConfig(hidden=16, steps=200, people_batch=8,
                          dictionary_batch=4, lr=3e-2, warmup_steps=5, eval_every=200), say=lambda _: None)
    after = ranks(engine, adapter, examples)
    assert np.mean(after) < np.mean(before) and (after == 1).mean() > (before == 1).mean()
    assert all(torch.equal(v, engine.encoder.state_dict()[k]) for k, v in encoder_before.items())


def test_the_adapter_and_its_training_record_travel_with_the_checkpoint(engine, tmp_path):
    adapter = QueryAdapter(AdapterConfig(dim=32, hidden=8))
    torch.nn.init.normal_(adapter.down.weight)
    engine.words.adapter = adapter.eval().requires_grad_(False)
    engine.words.adapter_training = {"trained_on": [{"name": "norms", "license": "GPL-3.0"}]}
    engine.save(tmp_path / "model")
    loaded = Engine.load(tmp_path / "model", decoder=None)
    assert loaded.manifest["everyday_adapter"]["training"]["trained_on"][0]["license"] == "GPL-3.0"
    u = torch.randn(3, 32)
    torch.testing.assert_close(loaded.words.adapter(u), adapter(u))


def test_the_norms_file_is_built_from_the_authors_folder_of_one_file_a_word(tmp_path):
    folder = tmp_path / "_fixed"
    folder.mkdir()
    (folder / "zebra.txt").write_text("striped  horse\n\nstriped horse\nlives in africa\n", encoding="utf-8")
    (folder / "cafe R.txt").write_bytes("a place for caf\xe9 au lait\n".encode("latin-1"))
    out = tmp_path / "norms" / "feature-norms.tsv"
    from core.lexicon.norms import build_norms_file
    assert build_norms_file(folder, out) == 3
    assert out.read_text(encoding="utf-8").splitlines() == [
        "word\tresponse", "cafe\ta place for caf\xe9 au lait", "zebra\tstriped horse", "zebra\tlives in africa"]
    assert [d.word for d in read_norms(out)] == ["cafe", "zebra", "zebra"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no responses"):
        build_norms_file(tmp_path / "empty", tmp_path / "again.tsv")


def test_eval_reverse_splits_the_human_set_by_the_norms_and_scores_their_held_out_words(engine):
    from core.evaluation.reverse import Query, norms_query_sets

    descriptions = [Description(f"w{i}", f"text {i} {j}") for i in range(40) for j in range(2)]
    human = [Query("a text", "w1"), Query("another", "zebra")]
    sets = norms_query_sets(engine, descriptions, human)
    held_out = split_norm_words({d.word for d in descriptions}, 0).held_out
    assert {q.word for q, in zip(sets["norms-heldout"][0])} == held_out and len(sets["norms-heldout"][0]) == 8
    assert [q.word for q in sets["human-dev/in-norms"][0]] == ["w1"]
    assert [q.word for q in sets["human-dev/not-in-norms"][0]] == ["zebra"]
    assert len(norms_query_sets(engine, descriptions, human, sample=3)["norms-heldout"][0]) == 3


def test_the_model_card_names_every_training_source_with_its_license(engine):
    from app.shared.export import model_card
    from core.lexicon.norms import NORMS_SOURCE

    assert "WordNet 3.0 licence" in model_card(engine, "mine") and "GPL-3.0" not in model_card(engine, "mine")
    engine.manifest["everyday_adapter"] = {"training": {"trained_on": [NORMS_SOURCE]}}
    card = model_card(engine, "mine")
    assert "feature production norms" in card and "GPL-3.0" in card and "Buchanan" in card


def test_a_subset_of_the_candidates_scores_as_the_whole_does(engine):
    """Training against the common candidates only: their scores (the dictionary expert's: no softmax over the
    others) are what the whole scorer gives them, each query's own definition left out alike."""
    from dataclasses import replace
    scorer = engine.words.open_vocab.with_config(replace(engine.words.open_vocab.config, everyday_share=0.0,
                                                         definition_weight=50.0))
    rows = np.array([0, 2, 5])
    subset = scorer.subset(rows)
    assert subset.candidates.words == [scorer.candidates.words[i] for i in rows]
    u = torch.randn(2, 32)
    logits = engine.words.logits(u)
    own = torch.tensor([int(subset.candidates.kept_definitions[1]), -1])
    torch.testing.assert_close(subset.mixture(u, logits, own=torch.tensor([1, -1])),
                               scorer.mixture(u, logits, own=own)[:, rows])


def test_the_adapter_learns_through_the_sharp_everyday_mixture_and_is_measured_in_the_apps(engine, monkeypatch):
    """The loss reads the mixture at `train_temperature` with the everyday share `train_share` (the app's
    temperature 64 flattened the first adapter's gradients: docs/results.md); its checks rank in the app's mixture."""
    from core.words import adapter_fit

    people = [Description("dog", "barks loudly at night"), Description("cat", "purrs on your lap")] * 2
    examples = people_examples(engine, people, engine.encode([d.text for d in people]))
    dictionary = dictionary_examples(engine.words.open_vocab, {"king", "queen"})
    read, ranked = [], []
    learn = adapter_fit.log_probabilities
    monkeypatch.setattr(adapter_fit, "log_probabilities", lambda e, a, b, scorer=None: (
        read.append((scorer or e.words.open_vocab).config), learn(e, a, b, scorer))[1])
    monkeypatch.setattr(adapter_fit, "ranks", lambda e, a, x: ranked.append(e.words.open_vocab.config) or np.ones(1))
    config = AdapterFitConfig(hidden=8, steps=2, people_batch=2, dictionary_batch=1, warmup_steps=1, eval_every=2,
                              train_temperature=4.0, train_share=0.9)
    fit_adapter(engine, examples, dictionary, config, {"check": examples}, say=lambda _: None)
    assert {(c.mixture_temperature, c.everyday_share) for c in read} == {(4.0, 0.9)}
    assert ranked and all(c == engine.words.open_vocab.config for c in ranked)
    with pytest.raises(ValueError, match="train_share"):
        AdapterFitConfig(train_share=1.0)
