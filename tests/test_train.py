"""DefSent training on a tiny random model: it learns, it can be cancelled, the CLI runs end to end."""
from __future__ import annotations

import json
from functools import partial

import numpy as np
import pytest
import torch

from core import Engine
from core.checkpoint import MANIFEST
from core.lexicon.dictionary import Entry, load_wordnet
from core.cli import main as cli
from core.train import (NO_TOKEN, OwnWords, TrainConfig, TrainingCancelled, _defsent_loss, fit_head, train,
                        vocabulary_self_examples)
from core.words.word_eval import definition_pairs, evaluate_words, rank_metrics

PAIRS = [("dog", "a small animal that people keep"), ("king", "the man in charge of the city"),
         ("river", "water that runs to the sea"), ("bread", "food made of flour"),
         ("car", "a thing to drive on a road"), ("teacher", "a person who helps a child learn"),
         ("song", "music with words"), ("tree", "a large plant with wood")]
ENTRIES = [Entry(word, definition) for word, definition in PAIRS]


def test_rank_metrics_by_hand():
    logits = torch.tensor([[0.1, 0.9, 0.5], [0.3, 0.2, 0.1], [0.5, 0.5, 0.0]])
    gold = torch.tensor([1, 2, 0])  # ranks 1, 3 and 2 (a tie counts against the gold)
    m = rank_metrics(logits, gold)
    assert m["mrr"] == pytest.approx((1 + 1 / 3 + 1 / 2) / 3)
    assert (m["top1"], m["top3"], m["n"]) == (pytest.approx(1 / 3), 1.0, 3)


def test_fit_head_learns_training_pairs(tiny_base_dir):
    engine = Engine.from_base(str(tiny_base_dir), head_kind="mlm")
    texts, gold = definition_pairs(ENTRIES, engine.words.vocab)
    before = evaluate_words(engine, ENTRIES)["mrr"]
    bias_before = engine.words.head.bias.detach().clone()
    fit_head(engine, texts, gold, epochs=200, lr=1e-2, batch_size=8)
    assert evaluate_words(engine, ENTRIES)["mrr"] > max(0.5, before)
    assert torch.equal(engine.words.head.bias, bias_before)  # bias stays zero unless asked


def test_head_weight_decay_keeps_the_transform_smaller(tiny_base_dir):
    norms = []
    for weight_decay in (0.0, 5.0):
        engine = Engine.from_base(str(tiny_base_dir), head_kind="mlm")
        texts, gold = definition_pairs(ENTRIES, engine.words.vocab)
        torch.manual_seed(0)
        engine.words.head.dense.reset_parameters()  # the same start for both runs
        fit_head(engine, texts, gold, epochs=30, lr=1e-2, batch_size=8, weight_decay=weight_decay)
        norms.append(engine.words.head.dense.weight.norm().item())
    assert norms[1] < 0.8 * norms[0]


def test_train_improves_mrr_and_keeps_head_frozen(tiny_mlm_dir):
    engine = Engine.from_base(str(tiny_mlm_dir))
    head_before = {k: v.clone() for k, v in engine.words.head.own_state_dict().items()}
    seen = []
    config = TrainConfig(lr=3e-3, max_steps=60, batch_size=8, eval_every=20, seed=1, word_vector_scale=0, hub_weight=0.0)  # scored as during selection
    result = train(engine, ENTRIES, ENTRIES, config, progress=seen.append)
    assert [p.step for p in seen] == list(range(1, 61))
    assert result.best_dev["mrr"] > result.history[0]["mrr"]
    assert evaluate_words(engine, ENTRIES)["mrr"] == pytest.approx(result.best_dev["mrr"], abs=1e-4)
    assert all(torch.equal(v, head_before[k]) for k, v in engine.words.head.own_state_dict().items())


def test_bfloat16_training_learns_keeps_float32_weights_and_restores_the_precision(tiny_mlm_dir):
    engine = Engine.from_base(str(tiny_mlm_dir))
    encodings = []
    original_encode = engine.encoder.encode
    engine.encoder.encode = lambda *a, **k: encodings.append(engine.encoder.precision) or original_encode(*a, **k)
    config = TrainConfig(lr=3e-3, max_steps=60, batch_size=8, eval_every=20, seed=1, word_vector_scale=0,
                         hub_weight=0.0, precision="bfloat16")
    result = train(engine, ENTRIES, ENTRIES, config)
    assert result.best_dev["mrr"] > result.history[0]["mrr"]
    assert set(encodings) == {"bfloat16"}  # dev evaluations during training
    assert engine.encoder.precision == "float32"
    assert {p.dtype for p in engine.encoder.parameters()} == {torch.float32}
    with pytest.raises(ValueError, match="precision"):
        TrainConfig(precision="float16")


def test_train_top_layers_only_leaves_lower_layers(tiny_mlm_dir):
    engine = Engine.from_base(str(tiny_mlm_dir))
    lower = {k: v.clone() for k, v in engine.encoder.backbone.encoder.layer[0].state_dict().items()}
    train(engine, ENTRIES, ENTRIES, TrainConfig(lr=1e-2, max_steps=10, batch_size=4, trainable_layers=1, eval_every=5))
    assert all(torch.equal(v, lower[k]) for k, v in engine.encoder.backbone.encoder.layer[0].state_dict().items())


def test_cancel_restores_the_starting_weights(tiny_mlm_dir):
    engine = Engine.from_base(str(tiny_mlm_dir))
    before = engine.encode(["a dog"])
    steps = iter(range(100))
    with pytest.raises(TrainingCancelled, match="cancelled at step 3"):
        train(engine, ENTRIES, ENTRIES, TrainConfig(lr=1e-2, max_steps=50, batch_size=4),
              should_stop=lambda: next(steps) >= 3)
    np.testing.assert_allclose(engine.encode(["a dog"]), before, atol=1e-6)


def test_train_refuses_data_without_predictable_words(tiny_mlm_dir):
    engine = Engine.from_base(str(tiny_mlm_dir))
    unknown = [Entry("zyzzyva", "a kind of weevil")]
    with pytest.raises(ValueError, match="can predict"):
        train(engine, unknown, unknown)


def test_cli_trains_and_saves_a_loadable_checkpoint(tiny_base_dir, tmp_path, capsys):
    rows = ["word\tdefinition"] + [f"{w}\t{d}" for w, d in PAIRS * 3]
    rows += [f"{w}\t{d} again" for w, d in PAIRS] + [f"{w}\t{d} once more" for w, d in PAIRS]
    dictionary = tmp_path / "dict.tsv"
    dictionary.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "ckpt"
    code = cli(["train", "--out", str(out), "--base", str(tiny_base_dir), "--dictionary", str(dictionary),
                 "--max-steps", "4", "--batch-size", "4", "--eval-every", "2", "--head-epochs", "2",
                 "--senteval", str(tmp_path / "absent")])
    assert code == 0
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["training"]["data"] == str(dictionary)
    assert set(manifest["metrics"]) == {"test", "dev"}
    assert "saved" in capsys.readouterr().out
    assert Engine.load(out).encode(["a dog"]).shape == (1, 32)


def test_cli_head_from_reuses_a_head_and_trains_on_word_vectors(tiny_base_dir, tmp_path):
    dictionary = tmp_path / "dict.tsv"
    dictionary.write_text("\n".join(["word\tdefinition"] + [f"{w}\t{d} {i}" for i in range(3) for w, d in PAIRS]),
                          encoding="utf-8")
    first, second = tmp_path / "first", tmp_path / "second"
    common = ["--base", str(tiny_base_dir), "--dictionary", str(dictionary), "--max-steps", "2",
              "--batch-size", "4", "--eval-every", "1", "--head-epochs", "2", "--senteval", str(tmp_path / "absent")]
    assert cli(["train", "--out", str(first), *common]) == 0
    assert cli(["train", "--out", str(second), "--head-from", str(first), "--word-vector-objective",
                 "--word-vector-scale", "5", *common]) == 0
    manifest = json.loads((second / MANIFEST).read_text())
    assert manifest["training"]["result"]["config"]["word_vector_objective"] is True
    assert manifest["word_vectors"]["scale"] == 5.0
    assert (first / "head.safetensors").read_bytes() == (second / "head.safetensors").read_bytes()
    with pytest.raises(SystemExit):
        cli(["train", "--out", str(tmp_path / "x"), "--init", str(first), "--head-from", str(first), *common])


def test_cli_rejects_an_invalid_dictionary_and_writes_nothing(tiny_base_dir, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("foo,bar\n1,2\n", encoding="utf-8")
    out = tmp_path / "ckpt"
    assert cli(["train", "--out", str(out), "--base", str(tiny_base_dir), "--dictionary", str(bad)]) == 2
    assert not out.exists()


def test_vocabulary_self_examples_are_whole_alphabetic_words(tiny_base_dir):
    engine = Engine.from_base(str(tiny_base_dir))
    words, ids = vocabulary_self_examples(engine.words.vocab)
    assert "dog" in words and "a" not in words and "##s" not in words and "[CLS]" not in words
    assert all(engine.words.vocab.words[i] == w for w, i in zip(words, ids))


def test_cli_unit_rows_head_with_vocabulary_words(tiny_base_dir, tmp_path):
    """--unit-rows and --head-stage definitions+words reach the saved head and come back on load."""
    rows = ["word\tdefinition"] + [f"{w}\t{d}" for w, d in PAIRS * 3]
    dictionary = tmp_path / "dict.tsv"
    dictionary.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "ckpt"
    assert cli(["train", "--out", str(out), "--base", str(tiny_base_dir), "--dictionary", str(dictionary),
                 "--unit-rows", "--head-stage", "definitions+words", "--max-steps", "2", "--batch-size", "4",
                 "--eval-every", "2", "--head-epochs", "2", "--senteval", str(tmp_path / "absent")]) == 0
    loaded = Engine.load(out)
    assert loaded.words.head.config.unit_rows
    assert "vocabulary words" in loaded.manifest["head"]["origin"]


GLOSSARY = [Entry("glorptix", "a small animal that people keep"), Entry("zib zab", "the man in charge of the city"),
            Entry("rivière", "water that runs to the sea"), Entry("brötchen", "food made of flour"),
            Entry("vroomobile", "a thing to drive on a road"), Entry("learnwright", "a person who helps a child learn"),
            Entry("tunefulness", "music with words"), Entry("woodgiant", "a large plant with wood")]


def test_a_glossary_of_words_the_head_cannot_score_trains_through_its_own_words(tiny_mlm_dir):
    engine = Engine.from_base(str(tiny_mlm_dir))
    assert not definition_pairs(GLOSSARY, engine.words.vocab)[0]  # not one word is a single token
    with pytest.raises(ValueError, match="words the head can predict"):
        train(engine, GLOSSARY, GLOSSARY, TrainConfig(max_steps=1, word_vector_scale=0, hub_weight=0.0))
    own = OwnWords.embed(engine, GLOSSARY[:6], GLOSSARY[6:])
    own.refresh(engine)
    assert sorted(own.candidates.words) == sorted(e.word for e in GLOSSARY) and len(own.texts) == 6
    batch = np.arange(6)
    loss = _defsent_loss(engine, own.texts, torch.from_numpy(own.token_gold), own_loss=partial(own.loss, rows=batch))
    loss.backward()  # every definition's word is a class: the encoder learns from all of them
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in engine.encoder.parameters())
    losses = []
    config = TrainConfig(lr=3e-3, max_steps=30, batch_size=6, eval_every=10, seed=1, word_vector_scale=0,
                         hub_weight=0.0, own_words=True)
    result = train(Engine.from_base(str(tiny_mlm_dir)), GLOSSARY[:6], GLOSSARY[6:], config,
                   progress=lambda p: losses.append(p.loss))
    assert losses[-1] < losses[0]
    assert [h["n"] for h in result.history] == [2] * 4  # the dev words ranked at steps 0, 10, 20, 30


def test_the_hubness_correction_of_an_own_words_run_references_every_training_definition(tiny_mlm_dir, monkeypatch):
    engine = Engine.from_base(str(tiny_mlm_dir))
    references = []
    monkeypatch.setattr(engine, "add_hub_penalty", lambda texts, gold, *a: references.append((list(texts), gold)))
    config = TrainConfig(lr=1e-3, max_steps=2, batch_size=4, eval_every=10, word_vector_scale=0, hub_weight=0.5,
                         own_words=True)
    train(engine, [*GLOSSARY[:4], *ENTRIES[:4]], [*GLOSSARY[4:], *ENTRIES[4:]], config)
    (texts, gold), = references
    assert sorted(texts) == sorted(e.definition for e in [*GLOSSARY[:4], *ENTRIES[:4]])
    single = {engine.words.vocab.token_id(e.word) for e in ENTRIES[:4]}
    assert set(gold.tolist()) == single | {NO_TOKEN}  # a glossary word has no column: its text excludes none


def test_a_small_dictionarys_hubness_correction_is_topped_up_with_wordnet_and_its_k_scaled(tiny_mlm_dir):
    """32 definitions alone gave every word a penalty over a third of them (k = 10): the model lost a fifth of
    its MRR on WordNet's test words after a glossary fine-tune."""
    from core.words.hubness import TUNED_REFERENCES, scaled_k

    engine = Engine.from_base(str(tiny_mlm_dir))
    config = TrainConfig(lr=1e-3, max_steps=1, batch_size=4, eval_every=10, word_vector_scale=0, hub_references=120)
    train(engine, ENTRIES[:6], ENTRIES[6:], config)
    penalty = engine.words.hub_penalty
    assert penalty.references == 120 and penalty.k == scaled_k(config.hub_k, 120) == 1
    assert scaled_k(10, TUNED_REFERENCES) == scaled_k(10, 10 * TUNED_REFERENCES) == 10
    assert scaled_k(10, 4_000) == 2


def test_the_wordnet_references_leave_out_the_dictionarys_words(tiny_mlm_dir):
    from core.train import hub_references

    engine = Engine.from_base(str(tiny_mlm_dir))
    own = [Entry("dog", "a domestic animal that barks", "n"), Entry("cat", "a small domestic feline", "n")]
    texts, gold = hub_references(engine, [e.definition for e in own], [-100, -100], own, at_least=300)
    assert len(set(texts)) == 300 and texts[:2] == [e.definition for e in own] and len(gold) == 300
    wordnet = {e.definition: e.word for e in load_wordnet()}
    assert not {"dog", "cat"} & {wordnet[t] for t in texts[2:]}
    assert hub_references(engine, texts[:2], gold[:2], own, at_least=2)[0] == texts[:2]  # enough already
    assert hub_references(engine, [e.definition for e in own], [-100, -100], own, at_least=300)[0] == texts  # seeded


def test_a_hubness_correction_that_cannot_be_computed_is_refused_before_training():
    with pytest.raises(ValueError, match="hub_k >= 1"):
        TrainConfig(hub_k=0)
    assert TrainConfig(hub_k=0, hub_weight=0.0).hub_k == 0  # no correction: k unused


def test_a_rehearsing_run_adds_wordnet_definitions_of_other_words_to_every_batch(tiny_mlm_dir, monkeypatch):
    """`rehearsal`: each step also scores that many WordNet training definitions of words the head predicts and
    the dictionary does not define (what the model knew), so that a small glossary's run keeps them."""
    import core.train
    from core.train import MAX_REHEARSAL, rehearsal_pairs, wordnet_training_entries

    engine = Engine.from_base(str(tiny_mlm_dir))
    texts, gold = rehearsal_pairs(engine, ENTRIES)
    pool = {e.definition: e.word for e in wordnet_training_entries(ENTRIES)}
    assert texts and all(pool[t] == engine.words.vocab.words[g] for t, g in zip(texts, gold))
    assert not {pool[t] for t in texts} & {e.word for e in ENTRIES}
    batches = []
    real_loss = core.train._defsent_loss
    monkeypatch.setattr(core.train, "_defsent_loss", lambda e, t, *a, **k: batches.append(list(t)) or real_loss(e, t, *a, **k))
    config = TrainConfig(lr=1e-3, max_steps=3, batch_size=4, eval_every=10, word_vector_scale=0, hub_weight=0.0,
                         rehearsal=5)
    train(engine, ENTRIES[:6], ENTRIES[6:], config)
    own, rehearsed = batches[0::2], batches[1::2]  # each step: the dictionary's batch, then the rehearsal's
    assert len(own) == len(rehearsed) == 3 and all(len(b) == 5 and set(b) <= set(texts) for b in rehearsed)
    assert all(set(b) <= {e.definition for e in ENTRIES[:6]} for b in own)
    with pytest.raises(ValueError, match=f"rehearsal must be from 0 to {MAX_REHEARSAL}"):
        TrainConfig(rehearsal=MAX_REHEARSAL + 1)


def test_the_rehearsed_definitions_move_the_encoder_and_leave_out_the_dictionarys_texts(tiny_mlm_dir):
    from core.train import _step, wordnet_training_entries

    engine = Engine.from_base(str(tiny_mlm_dir))
    gloss = wordnet_training_entries([])[0]
    synonym = Entry("zzz", gloss.definition)  # a user's entry with a WordNet gloss, under another word
    assert gloss.definition not in {e.definition for e in wordnet_training_entries([synonym])}
    texts, gold = definition_pairs(ENTRIES[:4], engine.words.vocab)
    rehearsed = definition_pairs(wordnet_training_entries(ENTRIES)[:50], engine.words.vocab)
    before = {k: v.clone() for k, v in engine.encoder.state_dict().items()}
    params = [p for p in engine.encoder.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=0.1)
    ignored = torch.full((len(texts),), NO_TOKEN)  # the dictionary's batch gives no gradient at all
    _step(engine, engine.encoder, optimizer, texts, ignored, "float32")
    assert all(torch.equal(v, before[k]) for k, v in engine.encoder.state_dict().items())
    _step(engine, engine.encoder, optimizer, texts, ignored, "float32", None,
          (rehearsed[0][:8], torch.from_numpy(rehearsed[1][:8])))
    assert any(not torch.equal(v, before[k]) for k, v in engine.encoder.state_dict().items())


def test_a_run_with_nothing_to_rehearse_says_so_and_torchrun_refuses_rehearsal(tiny_mlm_dir, monkeypatch):
    import core.train
    from core.runtime import distributed

    config = TrainConfig(lr=1e-3, max_steps=2, batch_size=4, eval_every=10, word_vector_scale=0, hub_weight=0.0,
                         rehearsal=4)
    monkeypatch.setattr(core.train, "rehearsal_pairs", lambda engine, entries: ([], np.zeros(0, dtype=np.int64)))
    result = train(Engine.from_base(str(tiny_mlm_dir)), ENTRIES[:6], ENTRIES[6:], config)
    assert result.config.rehearsal == 0 and result.steps == 2
    monkeypatch.setattr(distributed, "world_size", lambda: 2)
    with pytest.raises(ValueError, match="rehearsal trains in one process"):
        train(Engine.from_base(str(tiny_mlm_dir)), ENTRIES[:6], ENTRIES[6:], config)
