"""Hubness correction (CSLS) of the reverse dictionary's word scores, on tiny models."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from core import Engine
from core.checkpoint import MANIFEST
from core.lexicon.dictionary import Entry
from core.words.hubness import HUB_PENALTY, HubPenalty, group_definitions, scaled_k
from core.train import TrainConfig, train
from core.words.word_eval import definition_pairs

ENTRIES = [Entry("dog", "a small animal that people keep"), Entry("king", "the man in charge of the city"),
           Entry("river", "water that runs to the sea"), Entry("bread", "food made of flour")]


@pytest.fixture
def engine(tiny_mlm_dir) -> Engine:
    return Engine.from_base(str(tiny_mlm_dir))


def test_penalty_is_the_mean_of_each_words_k_best_scores_never_counting_its_own_definitions():
    scores = torch.tensor([[5.0, 1.0, 0.0],   # reference 0 defines word 0
                           [3.0, 2.0, 9.0],   # reference 1 defines word 2
                           [1.0, 4.0, 6.0]])  # reference 2 defines nothing
    defined = [[0], [2], []]
    hub = HubPenalty.compute(lambda v: scores[torch.as_tensor(v)], np.arange(3), defined, k=2, weight=0.5,
                             batch_size=2)  # two batches: the running top-k is merged across them
    # word 0: 3 and 1 (5 is its own definition); word 1: 4 and 2; word 2: 6 and 0 (9 is its own)
    torch.testing.assert_close(hub.penalty, torch.tensor([2.0, 3.0, 3.0]))
    torch.testing.assert_close(hub.apply(torch.zeros(1, 3)), torch.tensor([[-1.0, -1.5, -1.5]]))


def test_a_word_defined_by_every_reference_gets_no_penalty_and_bad_arguments_are_refused():
    hub = HubPenalty.compute(lambda v: torch.ones(len(v), 2), np.arange(2), [[0], [0]], k=3)
    assert hub.penalty.tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match="k >= 1"):
        HubPenalty.compute(lambda v: torch.ones(len(v), 2), np.arange(2), [[], []], k=0)
    with pytest.raises(ValueError, match="reference"):
        HubPenalty.compute(lambda v: torch.ones(len(v), 2), np.zeros((0, 4)), [], k=1)


def test_group_definitions_merges_synonyms_sharing_a_gloss():
    texts, defined = group_definitions(["a b", "c", "a b", "a b"], [1, 2, 3, 1])
    assert texts == ["a b", "c"] and defined == [[1, 3], [2]]
    texts, defined = group_definitions(["a b", "c", "c"], [-100, -100, 2])  # -100: a word with no column
    assert texts == ["a b", "c"] and defined == [[], [2]]


def test_engine_subtracts_the_penalty_and_a_checkpoint_keeps_it(engine, tmp_path):
    engine.add_word_vectors(scale=5.0)
    texts, gold = definition_pairs(ENTRIES, engine.words.vocab)
    u = engine.encode(["water that runs to the sea"])
    plain = engine.words.logits(u)
    engine.add_hub_penalty(texts, gold, k=2, weight=0.5)
    torch.testing.assert_close(engine.words.logits(u), plain - 0.5 * engine.words.hub_penalty.penalty)
    assert engine.words.hub_penalty.references == len(set(texts))
    path = engine.save(tmp_path / "ckpt")
    manifest = json.loads((path / MANIFEST).read_text())
    assert manifest["hub_penalty"] == {"file": HUB_PENALTY, "k": 2, "weight": 0.5, "references": len(set(texts))}
    loaded = Engine.load(path)
    torch.testing.assert_close(loaded.words.hub_penalty.penalty, engine.words.hub_penalty.penalty)
    torch.testing.assert_close(loaded.words.logits(u), engine.words.logits(u), atol=0.05, rtol=0)  # int8 word vectors
    assert Engine.load(path, untrained=True).words.hub_penalty is None  # it belongs to the trained encoder
    engine.add_word_vectors(scale=5.0)  # new word scores: the old correction no longer applies
    assert engine.words.hub_penalty is None


def test_training_recomputes_the_penalty_on_its_training_definitions(engine):
    engine.add_word_vectors(scale=5.0)
    before = engine.words.hub_penalty
    train(engine, ENTRIES, ENTRIES[:2], TrainConfig(max_steps=2, batch_size=2, eval_every=1, hub_k=2))
    assert engine.words.hub_penalty is not None and engine.words.hub_penalty is not before
    references = len(definition_pairs(ENTRIES, engine.words.vocab)[0])
    assert engine.words.hub_penalty.references == references
    assert engine.words.hub_penalty.k == scaled_k(2, references) == 1  # k scaled to a few references
    train(engine, ENTRIES, ENTRIES[:2], TrainConfig(max_steps=1, batch_size=2, hub_weight=0.0))
    assert engine.words.hub_penalty is None


def test_cli_sweeps_on_dev_and_writes_the_chosen_correction(engine, tmp_path, capsys):
    from core.cli import main
    engine.add_word_vectors(scale=5.0)
    path = engine.save(tmp_path / "ckpt")
    assert main(["hubness", "--model", str(path), "--sweep-k", "1", "2", "--sweep-weight", "0.5",
                 "--write", "--k", "2", "--weight", "0.25"]) == 0
    out = capsys.readouterr().out
    assert all(row in out for row in ("no correction", "k 1, weight 0.5", "k 2, weight 0.5", "hubness-corrected"))
    loaded = Engine.load(path)
    assert (loaded.words.hub_penalty.k, loaded.words.hub_penalty.weight) == (2, 0.25)
    assert "test, hubness-corrected" in loaded.manifest["metrics"]
